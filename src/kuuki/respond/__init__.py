"""Step 6's writing half: generation with the shared context, the reply tools, and the
output guard's verdicts applied before anything is sent.
"""
