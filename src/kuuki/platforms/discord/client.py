"""`KuukiClient`: discord.py events in, ChatEvents out to the engine.

It is an AutoShardedClient so the gateway URL comes from ``GET /gateway/bot`` (the plain
Client connects to a hard-coded URL first). Incoming handling, in order: the bot's own
messages are ignored (the engine recorded them when it sent them); a channel the settings
deny is dropped before anything is fetched for it; the rest is translated by `mapping`
and queued on the engine, which dedupes by event id — so a RESUME that redelivers events,
or a reconnect, never handles one twice.

A malformed dispatch (missing fields, wrong types) makes a discord.py parser raise, and
discord.py lets that end the shard and the client. Each parser is therefore wrapped so such
a payload is logged with its event name and skipped; unknown event types are already
ignored by discord.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import discord
from discord import app_commands

from ...domain import Channel, ChatEvent, User
from ...engine import Engine
from . import mapping
from .commands import kuuki_group
from .outbox import DiscordOutbox

log = logging.getLogger("kuuki.discord")


def intents() -> discord.Intents:
    """Guild and DM messages and reactions, plus MESSAGE CONTENT (privileged)."""
    chosen = discord.Intents.default()
    chosen.message_content = True
    chosen.presences = False
    chosen.members = False
    return chosen


def _guard_parser(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(parse)
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:
            log.warning("skipped a malformed %s payload: %s: %s", event, type(exc).__name__, exc)

    return guarded


class KuukiClient(discord.AutoShardedClient):
    def __init__(
        self, engine: Engine, outbox: DiscordOutbox, *, memory: Any = None, **options: Any
    ) -> None:
        options.setdefault("intents", intents())
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(**options)
        self.engine = engine
        self.outbox = outbox
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(kuuki_group(engine, memory=memory))
        self._inflight = 0
        self._in_order = asyncio.Lock()
        self._idle = asyncio.Event()
        self._idle.set()
        self._fetched: dict[int, Any] = {}  # channels fetched because none was cached
        parsers: dict[str, Callable[[Any], None]] = self._connection.parsers
        for name, parse in list(parsers.items()):
            parsers[name] = _guard_parser(name, parse)

    # -- life cycle --------------------------------------------------------------------------

    async def setup_hook(self) -> None:
        self._bind()
        self.outbox.bind(self)
        await self.tree.sync()

    async def on_connect(self) -> None:  # READY: the bot's user, as the gateway says
        self._bind()

    def _bind(self) -> None:
        if self.user is not None:
            self.engine.bot_user_ids.add(str(self.user.id))

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("Discord event %s failed; the adapter carries on", event_method)

    async def idle(self) -> None:
        """Wait until every event handler started so far has handed its event on."""
        while self._inflight:
            await self._idle.wait()

    @contextlib.asynccontextmanager
    async def _handling(self, kind: str) -> AsyncIterator[None]:
        """Hand events on one at a time, in gateway order.

        discord.py runs each handler as its own task; a handler that has to wait (a channel
        fetch, the engine opening a new channel in the store) would otherwise let a later
        message overtake it. Tasks start in the order they were dispatched and the lock
        is FIFO, so holding it across the hand-off keeps the order.
        """
        self._inflight += 1
        self._idle.clear()
        try:
            async with self._in_order:
                yield
        except Exception:
            log.exception("could not handle a Discord %s event; skipped", kind)
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._idle.set()

    # -- events ------------------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        async with self._handling("message"):
            self.outbox.saw(str(message.channel.id), str(message.id))
            if self._is_own(message.author.id) or message.type not in mapping.CHAT_TYPES:
                return
            channel = await self._channel(
                message.channel.id, message.guild.id if message.guild else None
            )
            if channel is None:
                return
            event = mapping.posted(message, channel, bot_id=self._bot_id())
            if event.message is not None and event.message.reply_to is not None:
                first = self.outbox.first_part(event.message.reply_to)
                if first != event.message.reply_to:
                    event = _with_reply_to(event, first)
            await self.engine.handle(event)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        async with self._handling("message edit"):
            message = payload.message
            if "content" not in payload.data or message.edited_at is None:
                return  # an embed unfurl or a pin, not a change of text
            if self._is_own(message.author.id):
                return
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                await self.engine.handle(mapping.edited(message, channel))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        async with self._handling("message delete"):
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                await self.engine.handle(mapping.deleted(payload.message_id, channel))

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        async with self._handling("bulk delete"):
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                for mid in sorted(payload.message_ids):
                    await self.engine.handle(mapping.deleted(mid, channel))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        async with self._handling("reaction"):
            if self._is_own(payload.user_id):
                return
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is None:
                return
            who = payload.member or self.get_user(payload.user_id)
            user = mapping.user_of(who) if who else User(str(payload.user_id), str(payload.user_id))
            await self.engine.handle(mapping.reacted(payload, channel, user))

    # -- helpers -----------------------------------------------------------------------------

    def _bot_id(self) -> int | None:
        return self.user.id if self.user is not None else None

    def _is_own(self, user_id: int) -> bool:
        return str(user_id) in self.engine.bot_user_ids

    async def _channel(self, channel_id: int, guild_id: int | None) -> Channel | None:
        """The kuuki Channel for a Discord channel id; None when the settings deny it by id
        (nothing is fetched for it) or deny the parent of a thread. Unknown guild channels
        are fetched once."""
        if str(channel_id) in self.engine.settings.channel_deny:
            return None
        found: Any = self.get_channel(channel_id) or self._fetched.get(channel_id)
        if found is None and guild_id is not None and channel_id not in self._fetched:
            try:
                found = await self.fetch_channel(channel_id)
            except discord.HTTPException as exc:
                log.warning("could not fetch channel %s: %s", channel_id, exc)
            self._fetched[channel_id] = found
        if found is None:
            return mapping.fallback_channel(channel_id, guild_id)
        parent = mapping.parent_of(found)
        if parent is not None and not self.engine.listening(parent):
            return None
        return mapping.channel_of(found)


def _with_reply_to(event: ChatEvent, reply_to: str) -> ChatEvent:
    assert event.message is not None
    return replace(event, message=replace(event.message, reply_to=reply_to))
