"""Step 0 of the path, intake: an event is durable before the platform hears it arrived.

    adapter ── Engine.submit(event) ──▶ Intake ── one transaction ──▶ the inbox (store)
                 (in arrival order)        │  committed
                                           ▼
                              the engine marks it seen and queues it on its channel;
                              the adapter's await returns True → it acknowledges

Group commit: an event submitted while a commit is running waits for the next one, which
starts as soon as the running one ends and takes everything waiting (up to `max_batch`).
No timer is involved, so an event waits at most for one commit and its own; under load
the batches grow by themselves, so throughput follows the database's commit rate times
the batch size rather than its latency.

A store that fails (an outage, a lock held too long) is retried with backoff, real time
(this is I/O patience, not behaviour: the engine's clock may be virtual, so the intake
keeps its own, a `RealClock` unless a test hands it a virtual one), for at most
``patience_s`` per event: long enough to ride out a hiccup, short enough for Slack's
3-second acknowledgement deadline. Then the waiting events fail with `IntakeUnavailable`
and nothing about them is remembered: the adapter does not acknowledge them (Slack
delivers them again) or, on Discord, which has no acknowledgement, reads them back from
the channel's history once the store answers.

`Door` is the engine's side of it: an event id is taken in once however often it is
delivered (`Seen`; a second delivery while the first is being committed shares its fate),
the last message taken in per channel is remembered (where reading back starts), and the
committed new events go to the channels' queues in order; `recover` queues again what a
crash left taken in but not handled.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from kuuki.clock import Clock, RealClock
from kuuki.domain import Channel, ChatEvent, EventKind
from kuuki.errors import IntakeUnavailable

log = logging.getLogger("kuuki.intake")
engine_log = logging.getLogger("kuuki.engine")

MAX_BATCH = 512
PATIENCE_S = 2.0
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 0.5


class Inbox(Protocol):
    """Where intake makes events durable (kuuki.store.Store implements it).

    `admit_events` writes the events and their channels in one transaction and returns the
    ids that were new to it (an id stored before is a redelivery). It raises on failure,
    having stored nothing. `pending_events` returns those taken in but never handled.
    """

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]: ...

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]: ...


class Relay(Inbox, Protocol):
    """A gateway's inbox (kuuki.scale.gateway): taking an event in means handing it, durably,
    to the process that owns its channel. ``caught_up`` sends a channel's catch-up marker
    after everything handed in before it."""

    def caught_up(self, channel: Channel) -> None: ...


class Seen:
    """The ``capacity`` most recent ids taken in (older redeliveries ask the store)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def mark(self, key: str) -> None:
        self._ids[key] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

    def forget(self, key: str) -> None:
        """``key`` is to be taken in again (an event the store failed under, left in the
        inbox: `Door.recover` queues it again)."""
        self._ids.pop(key, None)

    @staticmethod
    def message_key(channel_id: str, message_id: str) -> str:
        return f"msg:{channel_id}:{message_id}"

    @classmethod
    def echo_key(cls, event: ChatEvent) -> str | None:
        """The key of a posted event's message (e.g. the platform echoing the bot's own
        message, which was recorded when sent)."""
        if event.message is not None and event.kind is EventKind.POSTED:
            return cls.message_key(event.message.channel_id, event.message.id)
        return None


@dataclass(slots=True)
class _Waiting:
    event: ChatEvent
    future: asyncio.Future[bool]
    since: float


class Intake:
    """Group commits events to an `Inbox` (see module doc); ``deliver`` receives each
    committed batch's new events, in submission order, before anyone awaiting their
    futures resumes."""

    def __init__(
        self,
        inbox: Inbox | None,
        deliver: Callable[[list[ChatEvent]], None],
        *,
        max_batch: int = MAX_BATCH,
        patience_s: float = PATIENCE_S,
        room: Callable[[], Awaitable[object]] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.inbox = inbox
        self.deliver = deliver
        self.clock: Clock = clock or RealClock()  # the patience's and the backoff's
        # awaited before each commit: the receiver has room for more (the engine's bound
        # on what it holds; past it, events wait here, unacknowledged, at the platform)
        self.room = room
        self.max_batch = max_batch
        self.patience_s = patience_s
        self._waiting: list[_Waiting] = []
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        self.failures = 0
        # With `close_on_refusal` (set by an adapter that reads lost events back, kuuki.
        # platforms.retry), a channel with refused events refuses newer ones until
        # `reopen`: a later event must not be stored past a refused one. Front ends with
        # no read-back (chat, replay, playground) leave it off.
        self.close_on_refusal = False
        self.closed_channels: set[str] = set()

    def submit(self, event: ChatEvent) -> asyncio.Future[bool]:
        """Join the next commit; the future is True once the event is durable and queued,
        False when the store already had it, or fails with `IntakeUnavailable`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        if event.channel.id in self.closed_channels:
            future.set_exception(IntakeUnavailable(
                f"channel {event.channel.id} lost events to the store; it is read back first"
            ))
            return future
        self._waiting.append(_Waiting(event, future, self.clock.monotonic()))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="kuuki-intake")
        return future

    def reopen(self, channel_ids: Iterable[str]) -> None:
        """Take these channels' events in again (their loss is being read back)."""
        self.closed_channels.difference_update(channel_ids)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def lag(self) -> float:
        """Seconds the oldest event not yet committed has waited (0 when none waits): read
        when metrics are scraped, never on the message path."""
        if not self._waiting:
            return 0.0
        return max(0.0, self.clock.monotonic() - self._waiting[0].since)

    async def drain(self) -> None:
        """Wait until every event submitted so far is committed or has failed."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        backoff = _FIRST_BACKOFF_S
        while self._waiting:
            if self.room is not None:
                await self.room()
            batch = self._waiting[: self.max_batch]
            try:
                new = await self._commit([w.event for w in batch])
            except Exception as exc:
                self.failures += 1
                backoff = await self._failed(exc, backoff)
                continue
            backoff = _FIRST_BACKOFF_S
            self.commits += 1
            del self._waiting[: len(batch)]
            taken: list[bool] = []
            for w in batch:
                fresh = w.event.event_id in new
                new.discard(w.event.event_id)  # a second copy in the batch is not new
                taken.append(fresh)
            # Resolved first, delivered second, in one step: nobody awaiting a future runs
            # before both are done, but the platform's wake-up is now queued ahead of the
            # channels' (which each handle what they were given before yielding), so the
            # next events are submitted, and their commit under way, while the engine works
            # on these: otherwise it sat idle through every commit (docs/decisions.md).
            for w, fresh in zip(batch, taken, strict=True):
                if not w.future.done():
                    w.future.set_result(fresh)
            self.deliver([w.event for w, fresh in zip(batch, taken, strict=True) if fresh])

    async def _commit(self, events: list[ChatEvent]) -> set[str]:
        if self.inbox is None:
            return {e.event_id for e in events}
        return await self.inbox.admit_events(events)

    async def _failed(self, exc: Exception, backoff: float) -> float:
        """Fail the events whose patience ran out; the rest are retried after a pause."""
        now = self.clock.monotonic()
        keep: list[_Waiting] = []
        # A channel's events are taken in without gaps: once one is refused, so is every
        # later one of that channel already waiting. Otherwise a later one could be stored
        # while the refused one is not, and reading the channel back after the store's
        # last message (a restart) would skip the refused one for good.
        refused: set[str] = set()
        for w in self._waiting:
            if now - w.since >= self.patience_s or w.event.channel.id in refused:
                refused.add(w.event.channel.id)
                if not w.future.done():
                    w.future.set_exception(IntakeUnavailable(
                        f"the store cannot take events in: {type(exc).__name__}: {exc}"
                    ))
            else:
                keep.append(w)
        given_up = len(self._waiting) - len(keep)
        self._waiting = keep
        if self.close_on_refusal:
            self.closed_channels |= refused
        log.warning(
            "intake: the store failed (%s: %s); %d events refused, %d retried in %.2fs",
            type(exc).__name__, exc, given_up, len(keep), backoff,
        )
        if keep:
            await self.clock.sleep(backoff)
        return min(backoff * 2, _MAX_BACKOFF_S)


class Door:
    """The engine's intake (module doc): ``enqueue`` receives each new event once it is
    durable, in order (None for a gateway, whose inbox relays them to their owner)."""

    def __init__(
        self,
        inbox: Inbox | None,
        seen: Seen,
        enqueue: Callable[[ChatEvent], None] | None,
        *,
        room: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.inbox = inbox
        self.seen = seen
        self.enqueue = enqueue
        self.intake = Intake(inbox, self._deliver, room=room)
        self._pending: dict[str, asyncio.Future[bool]] = {}
        # channel id → the last message taken in (bounded like `seen`): where reading a
        # channel back starts after the store refused some of its events (`last_taken`)
        self._last_taken: OrderedDict[str, str] = OrderedDict()

    def submit(self, event: ChatEvent) -> Awaitable[bool]:
        """Take ``event``'s place in line now; True once durable and queued, False when
        it was taken in before (see `Engine.submit`)."""
        loop = asyncio.get_running_loop()
        if event.event_id in self.seen or Seen.echo_key(event) in self.seen:
            done: asyncio.Future[bool] = loop.create_future()
            done.set_result(False)
            return done
        first = self._pending.get(event.event_id)
        if first is not None:  # a second delivery while the first is being committed
            return _duplicate_of(first)
        future = self.intake.submit(event)
        self._pending[event.event_id] = future
        future.add_done_callback(lambda _: self._pending.pop(event.event_id, None))
        return future

    def last_taken(self, channel_id: str) -> str | None:
        return self._last_taken.get(channel_id)

    def read_back_on_refusal(self) -> None:
        """A channel whose events the store refused refuses newer ones until `reopen`:
        an adapter reads what was lost back from the platform (see `Intake`)."""
        self.intake.close_on_refusal = True

    def reopen(self, channel_ids: Iterable[str]) -> None:
        """Take these channels' events in again (their loss is being read back)."""
        self.intake.reopen(channel_ids)

    def left(self, event_id: str) -> None:
        """The store failed under handling ``event_id``: it stays in the inbox, not
        handled, and its redelivery or read-back is to be taken in again."""
        self.seen.forget(event_id)

    async def drain(self) -> None:
        """Until every event submitted so far is committed or has failed."""
        await self.intake.drain()

    def _deliver(self, events: list[ChatEvent]) -> None:
        """Intake committed these (new) events: remember them, queue them in order."""
        for event in events:
            if event.kind is EventKind.POSTED and event.message is not None:
                self._last_taken[event.channel.id] = event.message.id
                self._last_taken.move_to_end(event.channel.id)
                if len(self._last_taken) > self.seen.capacity:
                    self._last_taken.popitem(last=False)
            self.seen.mark(event.event_id)
            key = Seen.echo_key(event)
            if key is not None:
                self.seen.mark(key)
            if self.enqueue is not None:
                self.enqueue(event)

    async def recover(
        self,
        platform: str | None,
        *,
        owns: Callable[[Channel], bool] | None,
        channel_id: str | None,
        enqueue: Callable[[ChatEvent], None],
    ) -> list[Channel]:
        """Queue (``enqueue``) as catch-up the events the inbox holds taken in but not
        handled; returns their channels (see `Engine.recover`)."""
        if self.inbox is None:
            return []
        channels: dict[str, Channel] = {}
        pending = await self.inbox.pending_events(platform=platform, channel_id=channel_id)
        for event in pending:
            if event.event_id in self.seen or (owns is not None and not owns(event.channel)):
                continue
            self.seen.mark(event.event_id)
            enqueue(replace(event, catch_up=True))
            channels[event.channel.id] = event.channel
        if channels:
            engine_log.info("recovering %d channels' events taken in before a crash", len(channels))
        return list(channels.values())


def _duplicate_of(first: asyncio.Future[bool]) -> asyncio.Future[bool]:
    dup: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def copy(f: asyncio.Future[bool]) -> None:
        if dup.done():
            return
        if f.cancelled():
            dup.cancel()
        elif (exc := f.exception()) is not None:
            dup.set_exception(exc)
        else:
            dup.set_result(False)

    first.add_done_callback(copy)
    return dup
