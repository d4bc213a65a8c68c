"""Every `kuuki bench …` benchmark, one module each. Benchmarks may use `kuuki.testing`'s
local servers; nothing else in the product imports them.
"""
