"""Catching up on Discord after a restart or an outage: REST history since the last message
stored.

Discord has no acknowledgement: a message the gateway delivered while the bot was down, or
that the store could not take in, is simply not delivered again. So whenever the client
(re)connects with a new session (`on_ready`), and whenever the store answers again after
refusing events, every channel the store knows is read back from the last message stored
(``GET /channels/{id}/messages?after=…``, oldest first, at most `CATCH_UP_MAX`) and handed
in as ``catch_up`` events with their live ids (a message id), so nothing is handled twice.
At (re)connect, channels the store has never seen are not read: the bot was never there.
After an outage, a channel whose events were refused is read whether the store knows it
or not (its first message may be the one refused).

What the bot already answered must not be answered again, so its own messages and
reactions come back too: a reaction of the bot's as a reaction event, and a message of the
bot's with what it answered. Discord records an explicit reply (a message reference); a
plain message of the bot's answers the message just before it — the outbox sends a plain
message only when what it answers is the channel's latest message (kuuki.platforms.
discord.outbox), so this is the same rule read backwards.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

import discord

from kuuki.domain import Channel, ChatEvent, EventKind, User, Visibility
from kuuki.engine.core import Engine
from kuuki.platforms import readback, retry
from kuuki.platforms.discord import mapping
from kuuki.platforms.discord.content import Payloads
from kuuki.platforms.readback import History

log = logging.getLogger("kuuki.discord")

CATCH_UP_MAX = 500  # messages read back per channel
FIRST_LOOK = 50  # a channel the store knows but holds no message of


class Reader(Protocol):
    """What catching up needs of the Discord client (kuuki.platforms.discord.client): its
    REST look-ups, which channels this process owns (shards) and listens in, and the engine
    the read-back events go to."""

    @property
    def engine(self) -> Engine: ...

    @property
    def user(self) -> discord.ClientUser | None: ...

    @property
    def payloads(self) -> Payloads: ...

    def owns(self, guild_id: int | None) -> bool: ...

    def owns_channel(self, channel: Channel) -> bool: ...

    async def kuuki_channel(self, found: Any) -> Channel | None: ...

    def get_channel(self, id: int, /) -> Any: ...

    async def fetch_channel(self, channel_id: int, /) -> Any: ...

    def get_partial_messageable(self, id: int, /) -> discord.PartialMessageable: ...


async def catch_up(
    client: Reader,
    store: History,
    channel_ids: Sequence[str] | None,
    *,
    since: Mapping[str, str | None] | None = None,
    refused: Mapping[str, str] | None = None,
) -> int:
    """Read back the given channels (None: every channel the store knows on Discord);
    returns how many events were new. Raises `IntakeUnavailable` if the store refuses.

    ``since`` gives, per channel, the id of the message to read after (None: the store
    had none), where the store's last message at reading time is not the right start: at
    start-up, the last message stored *before* `Engine.recover` re-queued what a crash
    left in the inbox (`last_messages`) — recovered events are handled meanwhile and their
    messages stored, while the bot's answers sent before the crash but never recorded sit
    between, and reading from after the recovered messages would skip them (the owed
    answer would be sent a second time); after an outage, the last message taken in
    before the first refusal (kuuki.platforms.retry). When that start is no message (the
    newest `FIRST_LOOK` are read), the channel is also read from just before ``refused``'s
    message, the first live one the store refused there: a channel new to the store whose
    first message was refused lost everything said after it but the newest 50."""
    if channel_ids is None:  # not the channels of guilds on other processes' shards
        ids = [c.id for c in await store.channels()
               if c.platform == mapping.PLATFORM and client.owns_channel(c)]
    else:  # channels that lost events to an outage, known to the store or not
        ids = list(dict.fromkeys(channel_ids))
    total = 0
    for channel_id in ids:
        found = await _resolve(client, channel_id)
        if found is None or not client.owns(_guild_id(found)):
            continue  # gone, or a guild on another process's shard (one store for all)
        channel = await client.kuuki_channel(found)
        if channel is None:
            continue
        if since is not None and channel.id in since:
            last = since[channel.id]
        else:
            last = await readback.last_id(store, channel.id, not_by=client.engine.bot_user_ids)
        total += await _one(client, found, channel, last)
        first = refused.get(channel.id) if refused is not None else None
        if last is None and first is not None and first.isdigit():
            total += await _one(client, found, channel, str(int(first) - 1))
    return total


async def last_messages(store: History, *, not_by: Collection[str]) -> dict[str, str | None]:
    """Where reading back starts, per Discord channel the store knows (see `catch_up`,
    and `readback.start_points`): a message taken in but not handled may have been
    answered while its records failed (a store outage, then a crash); the answer comes
    after it, possibly before later messages that did reach the store."""
    channels = [c.id for c in await store.channels() if c.platform == mapping.PLATFORM]
    pending = await store.pending_events(platform=mapping.PLATFORM)
    return await readback.start_points(store, channels, pending, not_by=not_by,
                                       start_point=start_point)


def start_point(channel_id: str, last: str | None, pending: Sequence[ChatEvent]) -> str | None:
    """Where reading ``channel_id`` back starts (see `last_messages`, and the rule in
    `kuuki.platforms.retry.start_point`): snowflakes, one before another is minus one."""
    return retry.start_point(
        channel_id, last, pending, just_before=lambda mid: str(int(mid) - 1), order=int
    )


async def read_back(
    client: Reader, store: History, channel: Channel, pending: Sequence[ChatEvent]
) -> int:
    """Read one channel back from `start_point` (a scale-out worker taking it over,
    kuuki.scale.worker; REST only): handed in as catch-up, then its caught-up marker."""
    stored = await readback.last_id(store, channel.id, not_by=client.engine.bot_user_ids)
    last = start_point(channel.id, stored, pending)
    # The store keeps no parent: asked of Discord, a thread's messages keep their thread
    # link (`mapping.message_of`). A worker's client caches no guild, so only the thread's
    # parent id is taken from what is fetched; the history is read as before.
    found = await _resolve(client, channel.id)
    if isinstance(found, discord.Thread):
        channel = replace(channel, parent_id=str(found.parent_id))
    return await _one(client, client.get_partial_messageable(int(channel.id)), channel, last)


def _guild_id(found: Any) -> int | None:
    guild = getattr(found, "guild", None)
    return guild.id if guild is not None else None


async def _resolve(client: Reader, channel_id: str) -> Any:
    found = client.get_channel(int(channel_id))
    if found is not None:
        return found
    try:
        return await client.fetch_channel(int(channel_id))
    except (discord.HTTPException, ValueError) as exc:
        log.info("cannot read channel %s back: %s", channel_id, exc)
        return None


async def _one(client: Reader, found: Any, channel: Channel, last: str | None) -> int:
    try:
        if last is not None:
            after = discord.Object(id=int(last))
            raw = [m async for m in found.history(limit=CATCH_UP_MAX, after=after,
                                                  oldest_first=True)]
        else:
            raw = [m async for m in found.history(limit=FIRST_LOOK)]
            raw.reverse()
    except (discord.HTTPException, ValueError) as exc:
        log.info("cannot read the history of %s: %s", channel.id, exc)
        return 0
    events: list[ChatEvent] = []
    previous = last
    owed = _Owed(client)
    for message in raw:
        if message.type not in mapping.CHAT_TYPES:
            continue
        found = _events(client, message, channel, owed.answered_by_plain(previous))
        owed.saw(found[0], message)
        events += found
        previous = str(message.id)
    new, failed = await readback.hand_in(client.engine.submit, events)
    client.engine.caught_up(channel)
    if failed is not None:
        raise failed
    if new:
        log.info("caught up %d events in %s", new, channel.id)
    return new


class _Owed:
    """What a plain message of the bot answered, read in history order.

    The outbox sends a plain message when what it answers is the latest message it has
    seen; another message can still reach Discord between that check and the post, so
    "the message just before" may be one the bot never saw. What the bot answers comes in
    channel order, though: an addressed message after the bot's last message or reaction
    is answered before any later one. So a plain message answers the earliest such
    addressed message still waiting, and only when none waits the message before it.
    """

    def __init__(self, client: Reader) -> None:
        self.client = client
        self.waiting: list[str] = []  # addressed since the bot's last message or reaction
        self.own: set[str] = set()

    def answered_by_plain(self, previous: str | None) -> str | None:
        return self.waiting[0] if self.waiting else previous

    def saw(self, event: ChatEvent, message: discord.Message) -> None:
        msg = event.message
        if msg is None:
            return
        engine = self.client.engine
        if msg.user.id in engine.bot_user_ids:
            self.own.add(msg.id)
            answered = msg.reply_to
            if answered in self.waiting:  # an explicit reply: what came before it is done
                del self.waiting[: self.waiting.index(answered) + 1]
            else:
                self.waiting.clear()
            return
        if any(r.me for r in message.reactions):
            self.waiting.clear()  # answered by a reaction, and so was all before it
        elif engine.pipeline.address(
            msg, bot_user_ids=engine.bot_user_ids, bot_message_ids=self.own,
            dm=event.channel.visibility is Visibility.DM,
        ):
            self.waiting.append(msg.id)


def _events(
    client: Reader, message: discord.Message, channel: Channel, previous: str | None
) -> list[ChatEvent]:
    bot_id = client.user.id if client.user is not None else None
    event = mapping.posted(message, channel, bot_id=bot_id,
                           extras=client.payloads.of(message.id))
    assert event.message is not None
    own = bot_id is not None and message.author.id == bot_id
    if own and event.message.reply_to is None and previous is not None:
        event = replace(event, message=replace(event.message, reply_to=previous))
    out = [replace(event, catch_up=True)]
    if bot_id is not None:
        me = User(str(bot_id), client.user.display_name if client.user else "bot", is_bot=True)
        for reaction in message.reactions:
            if reaction.me:
                emoji = str(reaction.emoji)
                out.append(ChatEvent(
                    EventKind.REACTION_ADDED, channel,
                    f"reaction:{message.id}:{bot_id}:{emoji}", datetime.now(UTC),
                    target_id=str(message.id), user=me, emoji=emoji, catch_up=True,
                ))
    return out
