"""The speak decision."""
