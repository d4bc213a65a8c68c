"""Platform adapters: Discord, Slack, the terminal room and the web playground."""
