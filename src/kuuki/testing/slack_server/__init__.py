"""A local Slack for tests: Web API and Socket Mode on 127.0.0.1, port 0 (see `server`)."""

from kuuki.testing.slack_server.server import SlackServer, mass_mention_possible

__all__ = ["SlackServer", "mass_mention_possible"]
