"""The engine's live channels: their state, and the bounds on how many and how much.

Everything the engine keeps per channel lives in a `ChannelState`: the short-term buffer,
the conversation tracker, the bot's own recent behaviour, the event queue and its worker.
Memory must stay bounded however many channels a bot sits in, so:

- a channel idle for ``idle`` (no event, nothing queued, no timer of its own pending, not
  asked to be quiet) is evicted: its worker stops and its state is dropped; when it speaks
  again it is rebuilt from the store, as after a restart;
- at most ``max_live`` channels are held; opening one more evicts the least recently
  active evictable one first (a busy channel is never evicted mid-work);
- every per-channel list is bounded: the ids of the bot's own messages (`RecentIds`), the
  pending timers (one per deferral key and per open question), and the tracker's own
  bounds (messages and bytes, kuuki.conversation.tracker). The decision pipeline's
  histories (interventions: one hour) are bounded in kuuki.decide.

A channel's queue carries its events and, in the same order, its timers (`Timer`: a
settled burst, a re-check) and proactive talk (`Proposed`): one ordered queue per channel.
`Backlog` counts what all the queues hold: past its bound the intake takes no more in.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kuuki.clock import TimerHandle
from kuuki.decide.situation import BotState
from kuuki.decide.types import Pass, Proposal
from kuuki.domain import Channel, ChatEvent, Decision, DecisionTrace, Message
from kuuki.ports import Buffer, Tracker

BOT_MESSAGE_IDS = 2_000  # the bot's own messages remembered per channel (replies to them)


class RecentIds:
    """A set that keeps only the ``capacity`` most recently added ids."""

    __slots__ = ("_capacity", "_ids")

    def __init__(self, capacity: int = BOT_MESSAGE_IDS) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def add(self, item: str) -> None:
        self._ids[item] = None
        self._ids.move_to_end(item)
        if len(self._ids) > self._capacity:
            self._ids.popitem(last=False)

    def __contains__(self, item: object) -> bool:
        return item in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)


class CaughtUp:
    """Queue marker: every catch-up event of the channel before it has been recorded; the
    addressed ones collected meanwhile (`ChannelState.missed`) may now be answered."""

    __slots__ = ()


@dataclass(slots=True)
class PendingJudgment:
    """A message waiting for its burst to settle before it is judged (a deferral)."""

    message: Message
    trace: DecisionTrace
    handle: TimerHandle
    owed: bool = False  # an answer the sender is owed (a held ping): see `held_events`
    event_id: str | None = None


@dataclass(slots=True)
class Timer:
    """Queue item: a timer fired for ``message`` (``passing``: settled or re-check); its
    ``done`` is set once handled, so a virtual clock waits for the work it caused."""

    passing: Pass
    message: Message
    trace: DecisionTrace | None = None
    key: str | None = None
    done: asyncio.Future[None] | None = None


@dataclass(slots=True)
class Proposed:
    """Queue item: proactive talk about ``message`` (the wake-up), offered by memory."""

    message: Message
    proposal: Proposal
    done: asyncio.Future[Decision | None]


QueueItem = ChatEvent | CaughtUp | Timer | Proposed


@dataclass(slots=True)
class ChannelState:
    channel: Channel
    buffer: Buffer
    tracker: Tracker | None
    bot: BotState
    last_active: datetime
    queue: asyncio.Queue[QueueItem] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    bot_message_ids: RecentIds = field(default_factory=RecentIds)
    last_human: Message | None = None
    # Deferrals by key (Verdict.defer_key): the debounce ("channel"), held ping bursts.
    pending: dict[str, PendingJudgment] = field(default_factory=dict)
    rechecks: dict[str, TimerHandle] = field(default_factory=dict)
    missed: list[Message] = field(default_factory=list)  # addressed, seen while catching up
    # their events, marked handled only once `missed` is decided: a crash before the
    # caught-up marker leaves them in the inbox, to be owed again after the restart
    missed_events: list[str] = field(default_factory=list)
    # events of owed deferrals (held pings), marked handled only once the deferral is
    # decided: a crash during the hold leaves them in the inbox, owed after the restart
    held_events: set[str] = field(default_factory=set)
    busy: int = 0  # events and timer work in progress

    def evictable(self, now: datetime) -> bool:
        """Nothing of its own in progress or pending, and not asked to be quiet."""
        quiet = self.bot.quiet_until
        return (
            self.busy == 0
            and self.queue.empty()
            and not self.pending
            and not self.rechecks
            and not self.missed
            and (quiet is None or quiet <= now)
        )

    def holds_message_of(self, user_id: str) -> bool:
        return any(m.user.id == user_id for m in self.buffer)

    def erase_person(self, user_id: str) -> bool:
        """Their messages, and the bot's answers to them, leave buffer and tracker (a
        forgotten person, kuuki.memory.forgetting); True when any did."""
        theirs = {m.id for m in self.buffer if m.user.id == user_id}
        answers = {
            m.id for m in self.buffer
            if m.user.is_bot and (m.reply_to in theirs or m.thread in theirs)
        }
        for mid in theirs | answers:
            self.buffer.delete(mid)
            if self.tracker is not None:
                self.tracker.edit(mid, "")  # the tracker keeps a deleted message's text
                self.tracker.delete(mid)
        return bool(theirs)


class ChannelTable:
    """The live channels in least-recently-active order (see module docstring)."""

    def __init__(self, *, max_live: int, idle: timedelta) -> None:
        self.max_live = max(1, max_live)
        self.idle = idle
        self._states: OrderedDict[str, ChannelState] = OrderedDict()
        self.evicted = 0

    def get(self, channel_id: str) -> ChannelState | None:
        return self._states.get(channel_id)

    def __len__(self) -> int:
        return len(self._states)

    def values(self) -> list[ChannelState]:
        return list(self._states.values())

    def items(self) -> list[tuple[str, ChannelState]]:
        return list(self._states.items())

    def __contains__(self, channel_id: object) -> bool:
        return channel_id in self._states

    def __getitem__(self, channel_id: str) -> ChannelState:
        return self._states[channel_id]

    def add(self, state: ChannelState) -> list[ChannelState]:
        """Hold ``state``; returns the states evicted to make room (their workers to stop)."""
        self._states[state.channel.id] = state
        excess = len(self._states) - self.max_live
        victims: list[str] = []
        if excess > 0:  # the least recently active first; no copy of the whole table
            for cid, old in self._states.items():
                if len(victims) >= excess:
                    break
                if old is not state and old.evictable(state.last_active):
                    victims.append(cid)
        out = [self._states.pop(cid) for cid in victims]
        self.evicted += len(out)
        return out

    def touch(self, state: ChannelState, now: datetime) -> None:
        state.last_active = max(state.last_active, now)
        self._states.move_to_end(state.channel.id)

    def idle_ones(self, now: datetime) -> list[ChannelState]:
        """Evict and return every channel idle for ``idle`` or longer."""
        out: list[ChannelState] = []
        for cid, state in list(self._states.items()):
            if now - state.last_active < self.idle:
                break  # ordered by activity: the rest are more recent
            if state.evictable(now):
                out.append(self._states.pop(cid))
        self.evicted += len(out)
        return out

    def clear(self) -> list[ChannelState]:
        out = list(self._states.values())
        self._states.clear()
        return out


class Backlog:
    """What every channel's queue holds (events, timers, proposals) taken together: the
    engine is idle when nothing is; past ``max_backlog`` there is no `room` and the intake
    commits no more until the channels catch up (the platform holds the rest,
    unacknowledged, so nothing is lost). Closed, it takes no timer work any more."""

    def __init__(self, max_backlog: int) -> None:
        self.max_backlog = max_backlog
        self.inflight = 0
        self.closed = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._room = asyncio.Event()
        self._room.set()
        # set while someone (the intake) waits in `room`: what it holds is not taken in
        self.holding = asyncio.Event()

    def put(self, state: ChannelState, item: QueueItem) -> None:
        state.busy += 1
        self.inflight += 1
        self._idle.clear()
        if self.inflight >= self.max_backlog:
            self._room.clear()
        state.queue.put_nowait(item)

    def done(self, state: ChannelState) -> None:
        """One item of ``state``'s queue was handled (or failed)."""
        state.queue.task_done()
        state.busy -= 1
        self.inflight -= 1
        if self.inflight == 0:
            self._idle.set()
        if self.inflight < self.max_backlog:
            self._room.set()

    async def room(self) -> None:
        if self._room.is_set():
            return
        self.holding.set()
        try:
            await self._room.wait()
        finally:
            self.holding.clear()

    async def idle(self) -> None:
        while self.inflight:
            self._idle.clear()
            await self._idle.wait()


def stop(states: list[ChannelState]) -> list[asyncio.Task[Any]]:
    """Cancel the workers of evicted states; returns them, to be awaited."""
    tasks = [s.worker for s in states if s.worker is not None]
    for t in tasks:
        t.cancel()
    return tasks
