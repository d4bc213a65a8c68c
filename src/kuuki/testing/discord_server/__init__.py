"""A local Discord for tests: REST API and gateway on 127.0.0.1, port 0 (see `gateway`)."""

from kuuki.testing.discord_server.gateway import DiscordDriver, DiscordServer, serving

__all__ = ["DiscordDriver", "DiscordServer", "serving"]
