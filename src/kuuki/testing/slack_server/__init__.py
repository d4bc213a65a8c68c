"""A local Slack for tests: Web API and Socket Mode on 127.0.0.1, port 0.

The public face of the package: `SlackServer` (server.py, built on socket_mode.py and
state.py) and `mass_mention_possible`, Slack's rule for @channel/@here/@everyone pings.
"""

from kuuki.testing.slack_server.server import SlackServer, mass_mention_possible

__all__ = ["SlackServer", "mass_mention_possible"]
