"""Conversation structure: who is talking to whom (disentangling), live per channel."""
