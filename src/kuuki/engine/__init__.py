"""The engine: one ordered queue per channel and the steps of one message (intake → record
→ decide → act), composed of step objects; it reads every collaborator through `kuuki.ports`.
"""
