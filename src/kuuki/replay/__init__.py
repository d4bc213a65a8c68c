"""Transcripts (JSON Lines, DESIGN §5): parsing, replay on a virtual clock, and the expect
lines that `kuuki replay --check` and `kuuki bench scenarios` test.
"""
