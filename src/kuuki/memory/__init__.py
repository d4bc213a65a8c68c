"""What the bot remembers: short-term buffer, channel context, people, facts."""
