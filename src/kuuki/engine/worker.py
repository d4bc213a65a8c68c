"""The channels' workers: opening a channel (its state, rebuilt from the store, and its
worker task) and taking each item off its queue to hand it forward.

An event goes to the recorder (steps 1-4, kuuki.engine.record), then, when it posted a
message, to the decider (step 5, kuuki.engine.deciding), which hands a verdict to the actor
(steps 6-7); a timer, a proposal or the caught-up marker goes to the decider. What is
waiting is taken as a batch so per-message preparation (embeddings) runs once for the lot;
the items are still handled one by one, in order. A failure inside one item never stops
the queue; an event whose store failed stays in the inbox, handled again at the next start
or, with an adapter that reads back, once the store answers (`left`, kuuki.engine.core).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kuuki.clock import Clock
from kuuki.decide.situation import BotState
from kuuki.domain import Channel, ChatEvent, EventKind, Message
from kuuki.engine.channels import (
    Backlog,
    CaughtUp,
    ChannelState,
    ChannelTable,
    Proposed,
    QueueItem,
    Timer,
    stop,
)
from kuuki.engine.deciding import Decider
from kuuki.engine.record import Recorder
from kuuki.engine.timeline import Timeline
from kuuki.errors import StoreError
from kuuki.ports import BufferFactory, Tracker

log = logging.getLogger("kuuki.engine")

PREPARE_BATCH = 64

# Warms per-message caches (sentence embeddings) before steps 3-5; implementations batch
# the requests of all channel workers that are ready at the same moment.
Prepare = Callable[[Sequence[Message]], Awaitable[None]]


class Worker:
    """Runs channels' queues through the steps it was given (module doc)."""

    def __init__(
        self, recorder: Recorder, decider: Decider, timeline: Timeline, backlog: Backlog,
        clock: Clock,
        channels: ChannelTable, *, buffer_factory: BufferFactory,
        tracker_factory: Callable[[Channel], Tracker | None] | None = None,
        bot_user_ids: set[str], prepare: Prepare | None = None,
    ) -> None:
        self.recorder = recorder
        self.timeline = timeline
        self.decider = decider
        self.backlog = backlog
        self.clock = clock
        self.channels = channels
        self.buffer_factory = buffer_factory
        self.tracker_factory = tracker_factory
        self.bot_user_ids = bot_user_ids
        self.prepare = prepare
        self.stopping: set[asyncio.Task[Any]] = set()  # workers of evicted channels
        # told of an item the store failed under (left for later: not handled)
        self.left: Callable[[ChannelState, QueueItem], None] | None = None

    def enqueue(self, event: ChatEvent) -> None:
        """Queue a durable event on its channel (opened if need be)."""
        state = self.open(event.channel)
        self.channels.touch(state, self.clock.now())
        self.backlog.put(state, event)

    def open(self, channel: Channel) -> ChannelState:
        """The channel's live state; a new one starts its worker, which rebuilds it from
        the store before its first item."""
        state = self.channels.get(channel.id)
        if state is not None:
            return state
        tracker = self.tracker_factory(channel) if self.tracker_factory else None
        bot = BotState(frozenset(self.bot_user_ids))
        state = ChannelState(channel, self.buffer_factory(), tracker, bot, self.clock.now())
        self.stop(self.channels.add(state))
        state.worker = asyncio.get_running_loop().create_task(
            self.run(state), name=f"kuuki-channel-{channel.id}"
        )
        return state

    def stop(self, states: list[ChannelState]) -> None:
        """Stop the workers of evicted channels (awaited on close)."""
        for task in stop(states):
            self.stopping.add(task)
            task.add_done_callback(self.stopping.discard)

    async def run(self, state: ChannelState) -> None:
        """The channel's worker task: rebuild it from the store, then its queue, forever."""
        await self.recorder.rebuild(state, self.clock.now())
        while True:
            batch = [await state.queue.get()]
            # Take what else is already waiting, so per-message preparation (embeddings)
            # runs once for the lot; the items are still handled one by one, in order.
            while len(batch) < PREPARE_BATCH and not state.queue.empty():
                batch.append(state.queue.get_nowait())
            await self._prepare([e for e in batch if isinstance(e, ChatEvent)])
            for item in batch:
                await self._one(state, item)

    async def _one(self, state: ChannelState, item: QueueItem) -> None:
        done = True
        try:
            await self._forward(state, item)
        except StoreError as exc:
            # The store failed under it (an outage): not handled, so it stays in the
            # inbox and is handled again (`left`: once the store answers, or at the next
            # start, `recover`), where an answer it may already have got is known.
            done = False
            log.warning("%s in channel %s left for later: the store failed: %s",
                        _what(item), state.channel.id, exc)
            if self.left is not None:
                self.left(state, item)
        except Exception:  # the queue must survive anything one item does
            log.exception("%s in channel %s failed", _what(item), state.channel.id)
        finally:
            if (
                isinstance(item, ChatEvent)
                and done
                and item.event_id not in state.missed_events
                and item.event_id not in state.held_events
            ):
                await self.timeline.handled(item.event_id)
            _finish(item)
            self.backlog.done(state)

    async def _forward(self, state: ChannelState, item: QueueItem) -> None:
        """One item down the steps: an event to record (1-4), then decide (5 → 6-7)."""
        if isinstance(item, CaughtUp):
            await self.decider.answer_missed(state)
        elif isinstance(item, Timer):
            await self.decider.on_timer(state, item)
        elif isinstance(item, Proposed):
            await self.decider.on_proposed(state, item)
        else:
            admitted = await self.recorder.take(state, item)
            if item.kind is EventKind.POSTED and item.message is not None:
                await self.decider.posted(state, item, admitted)

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
