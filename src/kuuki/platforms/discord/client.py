"""`KuukiClient`: discord.py events in, ChatEvents out to the engine.

It is an AutoShardedClient so the gateway URL comes from ``GET /gateway/bot`` (the plain
Client connects to a hard-coded URL first). Incoming handling, in order: the bot's own
messages are ignored (the engine recorded them when it sent them); a channel the settings
deny is dropped before anything is fetched for it; the rest is translated by `mapping`
and queued on the engine, which dedupes by event id — so a RESUME that redelivers events,
or a reconnect, never handles one twice.

A malformed dispatch (missing fields, wrong types) or a frame that cannot be decoded would
end the client in discord.py; `seam` makes this client log and skip it. Unknown event
types are already ignored by discord.py.

Durability: Discord has no acknowledgement. An event counts as accepted once
`Engine.handle` returned (it is in the store's inbox); a crash before that point loses
nothing either, because `on_ready` — after every start and every new session — reads each
known channel back from its history (kuuki.platforms.discord.catchup). When the store
refuses events (an outage), their channels are read back the same way once it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import discord
from discord import app_commands

from kuuki.domain import Channel, ChatEvent, User
from kuuki.engine.core import Engine
from kuuki.errors import IntakeUnavailable
from kuuki.platforms.commands import MemoryAdmin, PolicyAdmin
from kuuki.platforms.discord import mapping, seam
from kuuki.platforms.discord.catchup import catch_up, last_messages
from kuuki.platforms.discord.commands import kuuki_group
from kuuki.platforms.discord.content import Payloads
from kuuki.platforms.discord.outbox import DiscordOutbox
from kuuki.platforms.readback import History
from kuuki.platforms.retry import Retrier

log = logging.getLogger("kuuki.discord")


def intents() -> discord.Intents:
    """Guild and DM messages and reactions, plus MESSAGE CONTENT (privileged)."""
    chosen = discord.Intents.default()
    chosen.message_content = True
    chosen.presences = False
    chosen.members = False
    return chosen


class KuukiClient(discord.AutoShardedClient):
    def __init__(
        self, engine: Engine, outbox: DiscordOutbox, *, store: History | None = None,
        memory: MemoryAdmin | None = None, policies: PolicyAdmin | None = None,
        **options: Any,
    ) -> None:
        options.setdefault("intents", intents())
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        options["enable_debug_events"] = True  # gateway frames, for `on_socket_raw_receive`
        super().__init__(**options)
        self.engine = engine
        self.outbox = outbox
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(kuuki_group(engine, memory=memory, policies=policies))
        self._inflight = 0
        self._in_order = asyncio.Lock()
        self._idle = asyncio.Event()
        self._idle.set()
        self._fetched: dict[int, Any] = {}  # channels fetched because none was cached
        self.store = store  # where reading back starts (None: no store, nothing to read)
        self.retrier = Retrier(self._catch_up_channels, name="discord",
                               start_of=engine.last_taken, reopen=engine.reopen)
        # lost events are read back (the retrier), and so is work the store failed under
        engine.read_back_on_refusal(self.retrier.left)
        self.caught_up_rounds = 0
        self.caught_up = asyncio.Event()  # set after each start-up catch-up round
        self.payloads = Payloads()
        seam.attach(self, self.payloads)

    # -- life cycle --------------------------------------------------------------------------

    async def launch_shards(self) -> None:
        """discord.py's, except that with a given `shard_count` the gateway URL still comes
        from ``GET /gateway/bot`` (`seam.launch_shards`). Each process runs only its
        `shard_ids`; Discord sends it only the events of the guilds on those shards
        (guild_id >> 22 % shard_count)."""
        if self.shard_count is None or self.is_closed():
            await super().launch_shards()
        else:
            await seam.launch_shards(self)

    async def setup_hook(self) -> None:
        self._bind()
        self.outbox.bind(self)
        await self.tree.sync()

    async def on_connect(self) -> None:  # READY: the bot's user, as the gateway says
        self._bind()

    async def on_ready(self) -> None:
        """A new session (start-up, or a reconnect that could not resume): what the
        gateway did not deliver since the last stored message is read from history."""
        self._bind()
        if self.store is None:
            return
        with self._busy():
            try:
                async with self._in_order:  # live events wait: they come after the history
                    await self._catch_up_known(self.store)
            except Exception:
                log.exception("catching up after connecting failed; carrying on")
            finally:
                self.caught_up.set()

    async def _catch_up_known(self, store: History) -> None:
        """Every channel the store knows, read back from where its history was left."""
        # where reading back starts, taken before recovery stores anything
        since = await last_messages(store, not_by=self.engine.bot_user_ids)
        await self.engine.recover(mapping.PLATFORM, owns=self.owns_channel)
        try:
            await catch_up(self, store, None, since=since)
        except IntakeUnavailable as exc:
            log.warning("could not store the history read back (%s); retrying", exc)
            self.retrier.missed(list(since), starts=since)
        self.caught_up_rounds += 1

    async def _catch_up_channels(
        self,
        channel_ids: Sequence[str],
        starts: Mapping[str, str | None],
        refused: Mapping[str, str],
    ) -> None:
        if self.store is None:  # refusals come from a store: without one there are none
            return
        async with self._in_order:
            await catch_up(self, self.store, channel_ids, since=starts, refused=refused)

    async def close(self) -> None:
        await self.retrier.close()
        await super().close()
        # discord.py runs handlers as tasks it does not cancel: one still reading the store
        # (the catch-up after on_ready) must end before the app closes the store under it.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.idle(), 5)

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
    async def _handling(self, kind: str) -> AsyncIterator[list[tuple[ChatEvent, Awaitable[bool]]]]:
        """Hand events on one at a time, in gateway order.

        discord.py runs each handler as its own task; a handler that has to wait (a channel
        fetch) would otherwise let a later message overtake it. Tasks start in the order
        they were dispatched and the lock is FIFO, so holding it while an event takes its
        place in the engine's line (`Engine.submit`) keeps the order; the wait for the
        store happens after the lock, so consecutive events share a group commit. The
        body appends (event, result) pairs to the list it is given.
        """
        handed: list[tuple[ChatEvent, Awaitable[bool]]] = []
        with self._busy():
            try:
                async with self._in_order:
                    yield handed
                for event, result in handed:
                    try:
                        await result
                    except IntakeUnavailable as exc:
                        # Not stored, and Discord will not send it again: read the channel
                        # back from its history once the store answers (from this message
                        # at the latest: the channel's first message may be the one refused).
                        log.warning("a Discord %s event could not be stored (%s); the "
                                    "channel will be read back", kind, exc)
                        self.retrier.refused(event)
            except Exception:
                log.exception("could not handle a Discord %s event; skipped", kind)

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        """A handler at work: `idle` waits until none is."""
        self._inflight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._idle.set()

    # -- events ------------------------------------------------------------------------------

    async def on_socket_raw_receive(self, frame: str) -> None:
        """Every gateway frame as received: what a MESSAGE_CREATE says that discord.py
        drops is kept (`Payloads`). This handler's task starts before the `on_message`
        task of the same frame, so `on_message` finds it."""
        self.payloads.keep_frame(frame)

    async def on_message(self, message: discord.Message) -> None:
        async with self._handling("message") as handed:
            self.outbox.saw(str(message.channel.id), str(message.id))
            if self._is_own(message.author.id) or message.type not in mapping.CHAT_TYPES:
                return
            channel = await self._channel(
                message.channel.id, message.guild.id if message.guild else None
            )
            if channel is None:
                return
            event = mapping.posted(message, channel, bot_id=self._bot_id(),
                                   extras=self.payloads.of(message.id))
            if event.message is not None and event.message.reply_to is not None:
                first = self.outbox.first_part(event.message.reply_to)
                if first != event.message.reply_to:
                    event = _with_reply_to(event, first)
            handed.append((event, self._submit(channel.id, event)))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        async with self._handling("message edit") as handed:
            message = payload.message
            if "content" not in payload.data or message.edited_at is None:
                return  # an embed unfurl or a pin, not a change of text
            if self._is_own(message.author.id):
                return
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                event = mapping.edited(message, channel)
                handed.append((event, self._submit(channel.id, event)))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        async with self._handling("message delete") as handed:
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                event = mapping.deleted(payload.message_id, channel)
                handed.append((event, self._submit(channel.id, event)))

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        async with self._handling("bulk delete") as handed:
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is not None:
                for mid in sorted(payload.message_ids):
                    gone = mapping.deleted(mid, channel)
                    handed.append((gone, self._submit(channel.id, gone)))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        async with self._handling("reaction") as handed:
            if self._is_own(payload.user_id):
                return
            channel = await self._channel(payload.channel_id, payload.guild_id)
            if channel is None:
                return
            who = payload.member or self.get_user(payload.user_id)
            user = mapping.user_of(who) if who else User(str(payload.user_id), str(payload.user_id))
            reacted = mapping.reacted(payload, channel, user)
            handed.append((reacted, self._submit(channel.id, reacted)))

    # -- helpers -----------------------------------------------------------------------------

    def _submit(self, channel_id: str, event: ChatEvent) -> Awaitable[bool]:
        """`Engine.submit`, unless the channel lost events to an outage and is not read
        back yet: then the event is refused too (kuuki.platforms.retry) and read back with
        the rest."""
        if self.retrier.owes(channel_id):
            refused: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            refused.set_exception(IntakeUnavailable(
                f"channel {channel_id} is still to be read back after an outage"
            ))
            return refused
        return self.engine.submit(event)

    def owns(self, guild_id: int | None) -> bool:
        """Whether this process runs the shard of `guild_id` (DMs arrive on shard 0)."""
        if self.shard_count is None or self.shard_ids is None:
            return True
        shard = 0 if guild_id is None else (guild_id >> 22) % self.shard_count
        return shard in self.shard_ids

    def owns_channel(self, channel: Channel) -> bool:
        """Whether a stored channel's guild (its workspace) is on this process's shards."""
        guild = int(channel.workspace) if channel.workspace.isdigit() else None
        return self.owns(guild)

    def _bot_id(self) -> int | None:
        return self.user.id if self.user is not None else None

    def _is_own(self, user_id: int) -> bool:
        return str(user_id) in self.engine.bot_user_ids

    async def kuuki_channel(self, found: Any) -> Channel | None:
        """The kuuki Channel for a discord.py channel object; None where kuuki must not
        listen (denied by id, or a thread of a denied channel)."""
        if self.engine.denies(str(found.id)):
            return None
        return self._listened(found)

    def _listened(self, found: Any) -> Channel | None:
        """The kuuki Channel for a discord.py channel object, unless it is a thread of a
        channel the settings deny."""
        parent = mapping.parent_of(found)
        if parent is not None and not self.engine.listening(parent):
            return None
        return mapping.channel_of(found)

    async def _channel(self, channel_id: int, guild_id: int | None) -> Channel | None:
        """The kuuki Channel for a Discord channel id; None when the settings deny it by id
        (nothing is fetched for it) or deny the parent of a thread. Unknown guild channels
        are fetched once."""
        if self.engine.denies(str(channel_id)):
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
        return self._listened(found)


def _with_reply_to(event: ChatEvent, reply_to: str) -> ChatEvent:
    assert event.message is not None
    return replace(event, message=replace(event.message, reply_to=reply_to))
