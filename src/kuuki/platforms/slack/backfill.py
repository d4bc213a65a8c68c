"""Reading channels' history: the first look at a channel, and catching up after a restart.

At start-up, for every conversation the bot is a member of:

- a channel the store has never seen gets a **first look**: its last ``per_channel``
  messages are recorded (``backfill``: never judged, never answered), so the bot does not
  start blind — those said before the bot started listening (`start`); a first look
  taken later (the store refused the start-up pass, and a retry reads the channel) hands
  what was said since in as ``catch_up``, decided like any read-back;
- a channel the store knows is **caught up**: everything after the last message stored
  that is not the bot's own (docs/decisions.md, "Nothing acknowledged is lost"),
  top level and thread replies (threads found in that history, and threads the store saw
  active in the last day), is handed in as ``catch_up``. That covers what arrived while the
  bot was down, and what it received but could not store (an outage). The bot's own posts
  come back with the ``ts`` they answered (the outbox writes it in their metadata) and its
  reactions as reaction events, so the engine can tell what was already answered; then
  `Engine.caught_up` lets it answer the rest that is still owed;
- after an outage (kuuki.platforms.retry) a channel is read from where its loss began,
  known to the store or not (a channel whose first message was refused), with the
  threads its refused messages were said in (`owe_thread`).

Event ids are the live ones (``slack:<channel>:<ts>``), so a message that also arrives
live (a redelivery after a restart) is handled once. Rows are mapped by the live path's
`Mapper` (kuuki.platforms.slack.rows.from_history): a share reads as it did live, and a
thread root deleted while the bot was away comes back as its tombstone, handed in as that
root's deletion (a first look, of a channel with nothing stored, records posts only).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any, Protocol

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import Channel, ChatEvent, EventKind, User
from kuuki.engine.core import Engine
from kuuki.platforms import readback, retry
from kuuki.platforms.readback import History
from kuuki.platforms.slack.emoji import from_slack_name
from kuuki.platforms.slack.mapping import Mapper, message_id, ts_of
from kuuki.platforms.slack.outbox import SlackOutbox
from kuuki.platforms.slack.rows import (
    from_history,
    history,
    member_channels,
    replies,
    ts_key,
)

log = logging.getLogger("kuuki.slack")

CATCH_UP_MAX = 500  # messages read back per channel (the newest, if more were missed)
THREADS_MAX = 10  # threads per channel whose replies are read back
ACTIVE_THREADS = timedelta(days=1)


class ThreadHistory(History, Protocol):
    """What Slack's reading back asks the store beyond `History`: the threads it saw
    active (kuuki.store.history)."""

    async def active_threads(
        self, channel_id: str, since: Any, *, limit: int = 20
    ) -> list[tuple[str, Any]]: ...


class HistoryReader:
    """Reads channels' history into the engine (see module doc)."""

    def __init__(
        self,
        client: AsyncWebClient,
        mapper: Mapper,
        engine: Engine,
        outbox: SlackOutbox,
        store: ThreadHistory | None,
        *,
        per_channel: int = 50,
    ) -> None:
        self.client = client
        self.mapper = mapper
        self.engine = engine
        self.outbox = outbox
        self.store = store
        self.per_channel = per_channel
        # where the start-up pass read each conversation from (message ids; None: from
        # the start), for the retrier when the store refused that pass
        self.start_points: dict[str, str | None] = {}
        # when the start-up pass began: a first look records what was said before as
        # history, and decides what was said since (None: no pass yet, all history)
        self.listening_since: float | None = None
        self._owed_threads: dict[str, set[str]] = {}  # channel → thread roots' message ids

    def owe_thread(self, channel_id: str, root_id: str) -> None:
        """A message said in the thread of ``root_id`` was refused: read its replies back
        with the channel (the thread may be older than the read-back's start, and not
        among those the store saw active)."""
        self._owed_threads.setdefault(channel_id, set()).add(root_id)

    async def start(self) -> int:
        """The start-up pass over every member channel; returns messages handed in.

        Raises what the engine's intake raises (the store is down): the caller retries.
        """
        try:
            channels = await member_channels(self.client, self.mapper)
        except SlackApiError as exc:
            log.warning("history skipped: users.conversations failed: %s",
                        exc.response.get("error"))
            return 0
        self.listening_since = self.engine.clock.now().timestamp()
        # Where reading back starts, taken before recovery stores anything: the recovered
        # events are handled while the history is read, and reading from after their
        # messages would skip the bot's answers sent before the crash but never recorded
        # (they sit between), so those would be sent a second time. A message still in the
        # inbox may have been answered while its records failed (an outage, then a crash):
        # reading starts just before it when that is earlier (readback.start_points).
        if self.store is not None:
            pending = await self.store.pending_events(platform="slack")
            self.start_points = await readback.start_points(
                self.store, channels, pending, not_by=self.engine.bot_user_ids,
                start_point=start_point,
            )
        recovered = await self.engine.recover("slack")
        queued = await self.catch_up(channels, since=self.start_points)
        for ch in recovered:
            if ch.id not in channels:
                self.engine.caught_up(ch)
        log.info("read the history of %d conversations: %d messages", len(channels), queued)
        return queued

    async def catch_up(
        self,
        channel_ids: Sequence[str],
        since: Mapping[str, str | None] | None = None,
        refused: Mapping[str, str] | None = None,
    ) -> int:
        """Read back the given conversations: after ``since``'s message id where given
        (see `start`, and kuuki.platforms.retry after an outage), else after the last
        message stored, else (a conversation the store has never seen) a first look. When
        that start is no message, from just before ``refused``'s (the first live message
        the store refused there, kuuki.platforms.retry) too: nothing said since is left to
        a first look's newest messages."""
        known = {c.id for c in await self.store.channels()} if self.store is not None else set()
        queued = 0
        for channel_id in channel_ids:
            if since is not None and channel_id in since:
                last = since[channel_id]
            elif channel_id in known:
                assert self.store is not None
                last = await readback.last_id(self.store, channel_id,
                                              not_by=self.engine.bot_user_ids)
            else:
                last = None
            first = refused.get(channel_id) if refused is not None else None
            queued += await self._read_back(channel_id, last, first, known=channel_id in known)
        return queued

    async def _read_back(
        self, channel_id: str, last: str | None, first: str | None, *, known: bool
    ) -> int:
        if last is not None:
            return await self._catch_up(channel_id, last)
        queued = 0
        if known:
            queued += await self._catch_up(channel_id, None)
        elif self.per_channel > 0:  # up to the refused message: read below, decided
            queued += await self._first_look(channel_id, latest=ts_of(first) if first else None)
        if first is not None and (before := just_before(first)) is not None:
            queued += await self._catch_up(channel_id, before)
        return queued

    async def _first_look(self, channel_id: str, *, latest: str | None = None) -> int:
        rows = await history(self.client, channel_id, limit=self.per_channel, oldest=None,
                             latest=latest)
        rows.sort(key=lambda r: ts_key(r.get("ts")))
        events = [e for raw in rows
                  if (e := _posted(await from_history(self.mapper, channel_id, raw)))]
        since = self.listening_since
        old = [e for e in events if since is None or e.at.timestamp() <= since]
        said_since = events[len(old):]
        # The engine records backfilled events without judging them; the outbox suppression
        # stays as a second guard for actions a timer might still raise about old messages.
        self.outbox.suppress([e.message.id for e in old if e.message is not None])
        count = await self._hand_in(
            [dataclasses.replace(e, backfill=True) for e in old]
            + [dataclasses.replace(e, catch_up=True) for e in said_since]
        )
        if said_since:  # said while the bot listened (a retry after an outage): decided
            self.engine.caught_up(await self.mapper.directory.channel(channel_id))
        return count

    async def _catch_up(self, channel_id: str, last: str | None) -> int:
        assert self.store is not None
        oldest = ts_of(last) if last is not None else None
        rows = await history(self.client, channel_id, limit=CATCH_UP_MAX, oldest=oldest)
        owed = set(self._owed_threads.get(channel_id, ()))
        roots = {ts_of(root): oldest for root in sorted(owed)}  # first: THREADS_MAX
        roots |= {str(r["ts"]): oldest for r in rows if _has_replies_after(r, oldest)}
        now = self.engine.clock.now()
        for root, latest in await self.store.active_threads(
            channel_id, now - ACTIVE_THREADS, limit=THREADS_MAX
        ):
            since = str(latest.timestamp())
            if oldest is not None and ts_key(oldest) < ts_key(since):
                since = oldest  # a recovered reply may be stored past an unrecorded answer
            roots.setdefault(ts_of(root), since)
        for root, after in list(roots.items())[:THREADS_MAX]:
            rows += await replies(self.client, channel_id, root, after)
        unique = {str(r["ts"]): r for r in rows if isinstance(r.get("ts"), str)}
        ordered = sorted(unique.values(), key=lambda r: ts_key(r["ts"]))
        events: list[ChatEvent] = []
        for raw in ordered:
            event = await from_history(self.mapper, channel_id, raw)
            if event is not None and event.kind is EventKind.DELETED:
                events.append(event)  # a root's tombstone: the root was deleted meanwhile
                continue
            posted = _posted(event)
            if posted is not None:
                events.append(dataclasses.replace(posted, catch_up=True))
            events += self._own_reactions(channel_id, raw, posted)
        count = await self._hand_in(events)
        channel = await self.mapper.directory.channel(channel_id)
        self.engine.caught_up(channel)
        left = self._owed_threads.get(channel_id, set()) - owed  # refused while reading
        if left:
            self._owed_threads[channel_id] = left
        else:
            self._owed_threads.pop(channel_id, None)
        return count

    async def _hand_in(self, events: list[ChatEvent]) -> int:
        new, failed = await readback.hand_in(self.engine.submit, events)
        if failed is not None:
            raise failed
        return new

    def _own_reactions(
        self, channel_id: str, raw: dict[str, Any], posted: ChatEvent | None
    ) -> list[ChatEvent]:
        """The bot's reactions on a message, as reaction events: what it answered so."""
        bot = self.mapper.bot_user_id
        if posted is None:
            return []
        out = []
        for r in raw.get("reactions") or []:
            if isinstance(r, dict) and bot in (r.get("users") or []) and r.get("name"):
                name = str(r["name"])
                out.append(ChatEvent(
                    EventKind.REACTION_ADDED, posted.channel,
                    f"slack:{channel_id}:{raw['ts']}:react:{bot}:{name}:history", posted.at,
                    target_id=message_id(channel_id, str(raw["ts"])),
                    user=User(bot, self.mapper.directory.bot_name, is_bot=True),
                    emoji=from_slack_name(name), catch_up=True,
                ))
        return out

def _posted(event: ChatEvent | None) -> ChatEvent | None:
    """``event`` when it posts a message (what a first look records)."""
    if event is None or event.kind is not EventKind.POSTED or event.message is None:
        return None
    return event


def _has_replies_after(raw: dict[str, Any], oldest: str | None) -> bool:
    if not raw.get("reply_count"):
        return False
    latest = raw.get("latest_reply")
    return oldest is None or latest is None or ts_key(latest) > ts_key(oldest)


def start_point(channel_id: str, last: str | None, pending: Sequence[ChatEvent]) -> str | None:
    """Where reading ``channel_id`` back starts (the rule: `kuuki.platforms.retry.
    start_point`), in message ids over Slack's ``ts``."""

    return retry.start_point(
        channel_id, last, pending, just_before=just_before,
        order=lambda mid: ts_key(ts_of(mid)),
    )


async def read_back(
    reader: HistoryReader, store: History, channel: Channel, pending: Sequence[ChatEvent]
) -> int:
    """Read one conversation back (a scale-out worker taking it over, kuuki.scale.worker):
    from `start_point`, handed in as catch-up, then its caught-up marker."""
    stored = await readback.last_id(store, channel.id, not_by=reader.engine.bot_user_ids)
    since = start_point(channel.id, stored, pending)
    return await reader.catch_up([channel.id], since={channel.id: since})


def just_before(mid: str) -> str | None:
    """The message id one microsecond before ``mid``'s, in its channel (where reading
    back starts to include ``mid``, kuuki.platforms.retry)."""
    channel_id = mid.rpartition(":")[0]
    before = _just_before(ts_of(mid))
    return message_id(channel_id, before) if before is not None else None


def _just_before(ts: str) -> str | None:
    """The ``ts`` one microsecond before ``ts`` (Slack's ``oldest`` is exclusive)."""
    try:
        return str(Decimal(ts) - Decimal("0.000001"))
    except ArithmeticError:  # decimal.InvalidOperation: not a ts
        return None
