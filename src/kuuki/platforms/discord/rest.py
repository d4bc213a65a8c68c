"""A scale-out worker's Discord: the REST API only, no gateway session (kuuki.scale).

Events reach a worker through the broker, so it opens no gateway connection (Discord
would count it as another session of the bot); it logs in over REST, and the outbox
sends through that client as in `kuuki run`. A channel the worker takes over from a dead
one is read back from its history after the last stored message (`catchup.read_back`),
where an answer the dead worker posted but never recorded is found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kuuki.domain import Channel, ChatEvent
from kuuki.errors import ConfigError
from kuuki.platforms.discord.catchup import read_back
from kuuki.platforms.discord.client import KuukiClient
from kuuki.platforms.discord.outbox import DiscordOutbox
from kuuki.platforms.discord.problems import start_problems

if TYPE_CHECKING:
    from kuuki.app import App


class DiscordRest:
    """Log in, bind the outbox, read channels back (module doc)."""

    def __init__(self, app: App, token: str, outbox: DiscordOutbox) -> None:
        if not token:
            raise ConfigError("DISCORD_TOKEN", "a Discord bot token is needed to connect")
        self.app = app
        self.token = token
        self.outbox = outbox
        history = None if app.store is None else app.store.history
        self.client = KuukiClient(app.engine, outbox, store=history, memory=app.memory,
                                  policies=app.policies)

    async def start(self) -> None:
        with start_problems():
            await self.client.login(self.token)
        if self.client.user is not None:
            self.app.engine.bot_user_ids.add(str(self.client.user.id))
        self.outbox.bind(self.client)

    def saw(self, event: ChatEvent) -> None:
        """A message reached the worker: what the outbox answers reads by what came last."""
        if event.message is not None:
            self.outbox.saw(event.channel.id, event.message.id)

    async def read_back(self, channel: Channel, pending: Sequence[ChatEvent]) -> int:
        if self.app.store is None:
            raise RuntimeError("reading a channel back needs the store")
        return await read_back(self.client, self.app.store.history, channel, pending)

    async def close(self) -> None:
        await self.client.close()
