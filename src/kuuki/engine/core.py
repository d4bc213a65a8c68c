"""The engine: one ordered queue per channel, and the steps of one message.

    0 intake     the event is durable (the store's inbox) before `handle` returns, so an
                 adapter acknowledges only what a crash cannot lose (kuuki.engine.intake)
    1-2 record   store + short-term buffer; edits, deletes and reactions update both
                 (steps 1-4: kuuki.engine.record)
    3 structure  the channel's ConversationTracker places the message in a conversation
    4 remember   memory hooks (counters, background jobs — never on the reply path)
    5 decide     the decision pipeline (kuuki.decide): an ordered list of stages built once
                 at start-up; the engine runs it and knows none of its rules
    6-7 act      carry out the verdict and explain it (kuuki.engine.act)

Channels run in parallel; within a channel, events, timers (a settled burst, a re-check)
and proactive talk are handled in order, on the channel's one queue. An event id is
handled once however often it is delivered, across restarts: handling ends by marking it
handled in the same transaction as what it wrote, and what a crash interrupted is handled
again by `recover`. Events that arrive after the fact (recovered, or read back from a
platform's history by its adapter: `ChatEvent.catch_up`) are recorded; the addressed ones
among them are answered at the channel's `caught_up` marker if no decision exists yet, the
bot did not answer them before, and they are at most ``catch_up_minutes`` old. A failure
inside one event is recorded in its trace and never stops the channel's queue. Memory is
bounded (kuuki.engine.channels). The engine knows no platform or vendor names.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from kuuki.clock import Clock
from kuuki.decide.base import AddressedOnlyJudge, BotState, Judge
from kuuki.decide.pipeline import Pipeline, build_pipeline
from kuuki.domain import (
    Channel,
    ChatEvent,
    EventKind,
    Message,
)
from kuuki.engine.act import DecisionListener
from kuuki.engine.channels import (
    CaughtUp,
    ChannelState,
    ChannelTable,
    Proposed,
    QueueItem,
    Timer,
    stop,
)
from kuuki.engine.deciding import Deciding
from kuuki.engine.intake import Inbox, Intake, Relay
from kuuki.engine.record import Recording
from kuuki.errors import StoreError
from kuuki.memory.buffer import ChannelBuffer
from kuuki.ports import MemoryHook, MessageStore, Outbox, Tracker, Usage, Writer
from kuuki.respond.responder import Responder
from kuuki.settings import Settings

__all__ = ["DecisionListener", "Engine", "MemoryHook", "MessageStore", "Outbox", "Tracker"]

log = logging.getLogger("kuuki.engine")

PREPARE_BATCH = 64
MAX_BACKLOG = 8_192  # events held (queued or in hand) before the intake waits
SEEN_CAPACITY = 20_000  # ids answered from memory; older redeliveries ask the store


class Engine(Recording, Deciding):
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock,
        store: MessageStore | None,
        writer: Writer | None,
        outbox: Outbox,
        responder: Responder,
        judge: Pipeline | Judge | None = None,
        tracker_factory: Callable[[Channel], Tracker | None] | None = None,
        memory_hooks: Sequence[MemoryHook] = (),
        bot_user_ids: Sequence[str] = (),
        seen_capacity: int = SEEN_CAPACITY,
        prepare: Callable[[Sequence[Message]], Awaitable[None]] | None = None,
        inbox: Inbox | None = None,
        relay: Relay | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.store = store
        self.writer = writer
        self.outbox = outbox
        self.responder = responder
        # The decision pipeline, built once by the composition root (kuuki.app); a bare
        # Judge (tests, plugins) runs behind the pipeline's gates.
        self.pipeline: Pipeline = (
            judge
            if isinstance(judge, Pipeline)
            else build_pipeline(settings, judge=judge or AddressedOnlyJudge())
        )
        self.tracker_factory = tracker_factory
        self.memory_hooks = list(memory_hooks)
        # Warms per-message caches (sentence embeddings) before steps 3-5; implementations
        # batch the requests of all channel workers that are ready at the same moment.
        self.prepare = prepare
        self.bot_user_ids: set[str] = set(bot_user_ids) | {settings.persona.name}
        self.channels = ChannelTable(
            max_live=settings.max_live_channels,
            idle=timedelta(minutes=settings.channel_idle_minutes),
        )
        self._listeners: list[DecisionListener] = []
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._seen_capacity = seen_capacity
        self._pending: dict[str, asyncio.Future[bool]] = {}
        # channel id → the last message taken in (bounded like _seen): where reading a
        # channel back starts after the store refused some of its events (`last_taken`)
        self._last_taken: OrderedDict[str, str] = OrderedDict()
        # A gateway's engine (kuuki.scale) relays what it takes in to the worker that owns
        # the channel instead of handling it: the relay is its inbox, nothing is queued here.
        self.relay = relay
        self.inbox = relay if relay is not None else inbox
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        # Events taken in but not yet handled are held in memory, in their channels'
        # queues: past `max_backlog` the intake commits no more until the engine catches
        # up, and the platform holds the rest (unacknowledged, so nothing is lost).
        self.max_backlog = MAX_BACKLOG
        self._room = asyncio.Event()
        self._room.set()
        self.intake = Intake(self.inbox, self._deliver, room=self._room.wait)
        self._stopping: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.handled = 0
        self.usage = Usage()

    # -- public API ------------------------------------------------------------------------

    def on_decision(self, listener: DecisionListener) -> None:
        self._listeners.append(listener)

    async def handle(self, event: ChatEvent) -> bool:
        """Take an event in: True once it is durable and queued on its channel (tell the
        platform it arrived only then), False when it was taken in before. Raises
        `IntakeUnavailable` when the store cannot take it (do not acknowledge it)."""
        return await self.submit(event)

    def submit(self, event: ChatEvent) -> Awaitable[bool]:
        """`handle` in two halves: the event's place in line is taken now, synchronously
        (an adapter calls this in delivery order), and the result is awaited later."""
        if self._closed:
            raise RuntimeError("engine is closed")
        loop = asyncio.get_running_loop()
        if event.event_id in self._seen or self._echo_key(event) in self._seen:
            done: asyncio.Future[bool] = loop.create_future()
            done.set_result(False)
            return done
        first = self._pending.get(event.event_id)
        if first is not None:  # a second delivery while the first is being committed
            return self._duplicate_of(first)
        future = self.intake.submit(event)
        self._pending[event.event_id] = future
        future.add_done_callback(lambda _: self._pending.pop(event.event_id, None))
        return future

    @staticmethod
    def _echo_key(event: ChatEvent) -> str | None:
        # e.g. the platform echoing the bot's own message, which was recorded when sent
        if event.message is not None and event.kind is EventKind.POSTED:
            return f"msg:{event.message.channel_id}:{event.message.id}"
        return None

    @staticmethod
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

    def last_taken(self, channel_id: str) -> str | None:
        """The id of the last message of this channel taken in (durably) by this run, or
        None. Events are taken in in delivery order, so when the store refuses one, what
        it lost comes after this message: an adapter reads the channel back from here."""
        return self._last_taken.get(channel_id)

    def _deliver(self, events: list[ChatEvent]) -> None:
        """Intake committed these (new) events: remember them, queue them in order."""
        for event in events:
            if event.kind is EventKind.POSTED and event.message is not None:
                self._last_taken[event.channel.id] = event.message.id
                self._last_taken.move_to_end(event.channel.id)
                if len(self._last_taken) > self._seen_capacity:
                    self._last_taken.popitem(last=False)
            self._mark_seen(event.event_id)
            key = self._echo_key(event)
            if key is not None:
                self._mark_seen(key)
            if self.relay is None:
                self._enqueue(event)

    def _enqueue(self, item: ChatEvent, channel: Channel | None = None) -> None:
        state = self._open(channel or item.channel)
        self.channels.touch(state, self.clock.now())
        self._put(state, item)

    async def recover(
        self,
        platform: str | None = None,
        *,
        owns: Callable[[Channel], bool] | None = None,
        channel_id: str | None = None,
    ) -> list[Channel]:
        """Queue the events a crash left taken in but not handled (those of ``platform``'s
        channels, or of one channel, or all; with ``owns``, only of the channels this
        process owns when several share the store), as catch-up; returns their channels,
        which an adapter then marks `caught_up` once it has also read their history."""
        if self.inbox is None:
            return []
        channels: dict[str, Channel] = {}
        pending = await self.inbox.pending_events(platform=platform, channel_id=channel_id)
        for event in pending:
            if event.event_id in self._seen or (owns is not None and not owns(event.channel)):
                continue
            self._mark_seen(event.event_id)
            self._enqueue(replace(event, catch_up=True))
            channels[event.channel.id] = event.channel
        if channels:
            log.info("recovering %d channels' events taken in before a crash", len(channels))
        return list(channels.values())

    def caught_up(self, channel: Channel) -> None:
        """Everything missed in ``channel`` has been handed in: answer what is owed."""
        if self.relay is not None:
            self.relay.caught_up(channel)  # after what was handed in, to the channel's owner
            return
        self._put(self._open(channel), CaughtUp())

    async def idle(self) -> None:
        """Wait until every queued event has been handled and every action sent."""
        await self.intake.drain()
        while self._inflight:
            self._idle.clear()
            await self._idle.wait()

    async def close(self) -> None:
        await self.idle()
        self._closed = True
        tasks = stop(self.channels.clear())
        await asyncio.gather(*tasks, *self._stopping, return_exceptions=True)
        if self.writer is not None:
            await self.writer.flush()

    def state(self, channel_id: str) -> ChannelState | None:
        return self.channels.get(channel_id)

    def evict_idle(self) -> int:
        """Drop channels idle for ``channel_idle_minutes`` (they are rebuilt from the store
        when they speak again); returns how many. Called by periodic maintenance."""
        gone = self.channels.idle_ones(self.clock.now())
        self._stop(gone)
        return len(gone)

    def _stop(self, states: list[ChannelState]) -> None:
        for task in stop(states):
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    # -- channels ----------------------------------------------------------------------------

    def _open(self, channel: Channel) -> ChannelState:
        state = self.channels.get(channel.id)
        if state is not None:
            return state
        buffer = ChannelBuffer(
            self.settings.CHANNEL_BUFFER_SIZE,
            timedelta(minutes=self.settings.CHANNEL_BUFFER_TTL_MINUTES),
        )
        tracker = self.tracker_factory(channel) if self.tracker_factory else None
        bot = BotState(frozenset(self.bot_user_ids))
        state = ChannelState(channel, buffer, tracker, bot, self.clock.now())
        self._stop(self.channels.add(state))
        # The worker rebuilds the channel from the store before its first event.
        state.worker = asyncio.get_running_loop().create_task(
            self._run(state), name=f"kuuki-channel-{channel.id}"
        )
        return state

    def _put(self, state: ChannelState, item: QueueItem) -> None:
        state.busy += 1
        self._inflight += 1
        self._idle.clear()
        if self._inflight >= self.max_backlog:
            self._room.clear()
        state.queue.put_nowait(item)

    async def _rebuild(self, state: ChannelState) -> None:
        """After a restart or an eviction: refill buffer and tracker from the store."""
        if self.store is None:
            return
        since = self.clock.now() - state.buffer.ttl
        try:
            history = await self.store.recent_messages(
                state.channel.id, limit=state.buffer.size, since=since
            )
        except Exception as exc:
            log.warning("could not rebuild channel %s from the store: %s", state.channel.id, exc)
            return
        for m in history:
            self._mark_seen(f"msg:{m.channel_id}:{m.id}")
            state.buffer.add(m)
            if self._is_own(m.user):
                state.bot_message_ids.add(m.id)
                state.bot.last_reply_at = m.ts
            if state.tracker is not None:
                state.tracker.observe(m)

    async def _run(self, state: ChannelState) -> None:
        await self._rebuild(state)
        while True:
            batch = [await state.queue.get()]
            # Take what else is already waiting, so per-message preparation (embeddings)
            # runs once for the lot; the items are still handled one by one, in order.
            while len(batch) < PREPARE_BATCH and not state.queue.empty():
                batch.append(state.queue.get_nowait())
            await self._prepare([e for e in batch if isinstance(e, ChatEvent)])
            for item in batch:
                done = True
                try:
                    if isinstance(item, CaughtUp):
                        await self._answer_missed(state)
                    elif isinstance(item, Timer):
                        await self._on_timer(state, item)
                    elif isinstance(item, Proposed):
                        await self._on_proposed(state, item)
                    else:
                        await self._process(state, item)
                except StoreError as exc:
                    # The store failed under it (an outage): not handled, so it stays in
                    # the inbox and is handled again at the next start (`recover`), where
                    # an answer it may already have got is read back from the platform.
                    done = False
                    log.warning("%s in channel %s left for later: the store failed: %s",
                                _what(item), state.channel.id, exc)
                except Exception:  # the queue must survive anything one item does
                    log.exception("%s in channel %s failed", _what(item), state.channel.id)
                finally:
                    if (
                        isinstance(item, ChatEvent)
                        and done
                        and item.event_id not in state.missed_events
                        and item.event_id not in state.held_events
                    ):
                        await self._handled(item.event_id)
                    _finish(item)
                    state.queue.task_done()
                    state.busy -= 1
                    self._inflight -= 1
                    if self._inflight == 0:
                        self._idle.set()
                    if self._inflight < self.max_backlog:
                        self._room.set()

    async def _handled(self, event_id: str) -> None:
        if self.writer is None or self.inbox is None:
            return
        try:
            await self.writer.handled(event_id)
        except Exception as exc:  # the store is down: the event is handled again later
            log.warning("could not mark %s handled: %s", event_id, exc)

    async def _prepare(self, events: Sequence[ChatEvent]) -> None:
        if self.prepare is None:
            return
        msgs = [
            e.message for e in events if e.kind is EventKind.POSTED and e.message is not None
        ]
        if not msgs:
            return
        try:
            await self.prepare(msgs)
        except Exception as exc:  # a cache warm-up; the steps themselves will retry
            log.debug("prepare failed: %s", exc)

    def _mark_seen(self, key: str) -> None:
        self._seen[key] = None
        if len(self._seen) > self._seen_capacity:
            self._seen.popitem(last=False)


def _what(item: QueueItem) -> str:
    if isinstance(item, ChatEvent):
        return f"event {item.event_id}"
    if isinstance(item, Timer | Proposed):
        return f"{type(item).__name__.lower()} for {item.message.id}"
    return "catch-up"


def _finish(item: QueueItem) -> None:
    """Release whoever waits for a timer or a proposal (even when handling failed)."""
    if isinstance(item, Timer | Proposed) and item.done is not None and not item.done.done():
        item.done.set_result(None)
