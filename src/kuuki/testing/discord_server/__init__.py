"""A local Discord for tests: REST API and gateway on 127.0.0.1, port 0.

The public face of the package: `DiscordServer` (server.py, built on gateway.py and
state.py), `serving` to point discord.py at it, and `DiscordDriver` (driver.py), the
conformance driver.
"""

from kuuki.testing.discord_server.driver import DiscordDriver
from kuuki.testing.discord_server.server import DiscordServer, RecordedRequest, serving

__all__ = ["DiscordDriver", "DiscordServer", "RecordedRequest", "serving"]
