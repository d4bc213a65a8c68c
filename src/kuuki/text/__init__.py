"""Small text helpers shared by every layer: case-folded cue search, safe outgoing text,
words for people, which language a text or a conversation is in.
"""
