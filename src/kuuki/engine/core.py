"""The engine: one ordered queue per channel, and the steps of one message, each an object
it composed from the collaborators it was given (all of them ports, kuuki.ports):

    0 intake     the event is durable (the store's inbox) before `handle` returns, so an
                 adapter acknowledges only what a crash cannot lose (kuuki.engine.intake)
    1 filter     channel allow/deny lists, the bot's own messages (kuuki.engine.filter)
    2-4 record   store + short-term buffer, the conversation tracker, memory hooks; edits,
                 deletes and reactions update both (kuuki.engine.record)
    5 decide     the decision pipeline (the `DecisionPipeline` port, kuuki.decide) run by its glue:
                 deferrals, re-checks, catch-up, proactive talk (kuuki.engine.deciding)
    6-7 act      carry out the verdict and explain it (kuuki.engine.act)

The intake hands each durable event to the worker (kuuki.engine.worker), which queues it
on its channel and later hands it forward: to the recorder, then the decider, which hands
a verdict to the actor; no step calls back into one before it. Channels run in parallel;
within a channel, events, timers (a settled burst, a re-check) and proactive talk are
handled in order, on the channel's one queue. An event id is handled once however often it
is delivered, across restarts: handling ends by marking it handled in the same transaction
as what it wrote, and what a crash interrupted is handled again by `recover`. Events that
arrive after the fact (recovered, or read back from a platform's history by its adapter:
`ChatEvent.catch_up`) are recorded; the addressed ones among them are answered at the
channel's `caught_up` marker if no decision exists yet, the bot did not answer them
before, and they are at most ``catch_up_minutes`` old. A failure inside one event is
recorded in its trace and never stops the channel's queue. Memory is bounded
(kuuki.engine.channels). The engine knows no platform or vendor names.

Others use the engine through ports it implements: the memory layer `EngineControl`,
adapters `ReadBack` and the `/kuuki` commands `EngineCommands` (kuuki.ports).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from kuuki.clock import Clock
from kuuki.decide.types import DecisionPipeline as Pipeline
from kuuki.domain import Channel, ChatEvent, Decision, Message
from kuuki.engine.act import Actor, DecisionListener
from kuuki.engine.channels import (
    Backlog,
    CaughtUp,
    ChannelState,
    ChannelTable,
    QueueItem,
    stop,
)
from kuuki.engine.config import SINGLE_PROCESS, EngineConfig, EngineOptions
from kuuki.engine.deciding import Decider
from kuuki.engine.filter import MessageFilter
from kuuki.engine.intake import Door, Inbox, Seen
from kuuki.engine.record import Recorder
from kuuki.engine.timeline import Timeline
from kuuki.engine.worker import Prepare, Worker
from kuuki.ports import (
    BufferFactory,
    DailyUsage,
    EngineStorage,
    LiveChannel,
    MemoryHook,
    Outbox,
    Responder,
    Tracker,
    Writer,
)

__all__ = ["DecisionListener", "Engine", "EngineConfig", "EngineOptions"]

log = logging.getLogger("kuuki.engine")

MAX_BACKLOG = 8_192  # events held (queued or in hand) before the intake waits


class Engine:
    _read_back: Callable[[str], object] | None = None  # see `read_back_on_refusal`

    def __init__(
        self,
        config: EngineConfig,
        *,
        clock: Clock,
        store: EngineStorage | None,
        writer: Writer | None,
        outbox: Outbox,
        responder: Responder,
        pipeline: Pipeline,
        buffer_factory: BufferFactory,
        tracker_factory: Callable[[Channel], Tracker | None] | None = None,
        memory_hooks: Sequence[MemoryHook] = (),
        bot_user_ids: Sequence[str] = (),
        prepare: Prepare | None = None,
        inbox: Inbox | None = None,
        options: EngineOptions = SINGLE_PROCESS,
        listen_only: Callable[[Channel], bool] | None = None,
    ) -> None:
        relay = options.relay
        self.clock = clock
        self.store = store
        self.writer = writer
        self.outbox = outbox
        self.responder = responder
        # The decision pipeline, built once by the composition root (kuuki.app.build).
        self.pipeline = pipeline
        self.buffer_factory = buffer_factory
        self.tracker_factory = tracker_factory
        # Adapters add the bot's platform ids once logged in (shared with the filter).
        self.bot_user_ids: set[str] = set(bot_user_ids) | {config.bot_name}
        self.channels = ChannelTable(
            max_live=config.max_live_channels,
            idle=timedelta(minutes=config.channel_idle_minutes),
        )
        # Events taken in but not yet handled are held in memory, in their channels'
        # queues: past `max_backlog` the intake commits no more until the engine catches up.
        self.backlog = Backlog(MAX_BACKLOG)
        # A gateway's engine (kuuki.scale) relays what it takes in to the worker that owns
        # the channel instead of handling it: the relay is its inbox, nothing is queued here.
        self.relay = relay
        self.inbox = relay if relay is not None else inbox
        self._config = config
        self._compose(config, store, writer, memory_hooks, prepare, options, listen_only)

    def _compose(self, config: EngineConfig, store: EngineStorage | None,
                 writer: Writer | None, memory_hooks: Sequence[MemoryHook],
                 prepare: Prepare | None, options: EngineOptions,
                 listen_only: Callable[[Channel], bool] | None) -> None:
        """The steps, each given the collaborators it uses (the numbers: DESIGN §1)."""
        clock, pipeline = self.clock, self.pipeline
        seen = Seen(options.seen_capacity)
        messages = None if store is None else store.messages
        history = None if store is None else store.history
        self.filter = MessageFilter(config, self.bot_user_ids, listen_only)  # 1
        self.timeline = Timeline(seen, writer=writer, memory_hooks=memory_hooks,  # 2-4, 6
                                 marks_handled=self.inbox is not None)
        self.recorder = Recorder(self.filter, self.timeline, seen,  # 1-4
                                 messages=messages, writer=writer)
        self.actor = Actor(clock=clock, outbox=self.outbox, responder=self.responder,  # 6-7
                           pipeline=pipeline, timeline=self.timeline, messages=messages,
                           writer=writer, bot_name=config.bot_name,
                           shadowed=self.filter.shadowed)
        self.decider = Decider(clock=clock, pipeline=pipeline, actor=self.actor,  # 5
                               filter=self.filter, channels=self.channels,
                               backlog=self.backlog, history=history,
                               mark_handled=self.timeline.handled,
                               catch_up_minutes=config.catch_up_minutes)
        self.worker = Worker(  # takes each channel's items forward through the steps
            self.recorder, self.decider, self.timeline, self.backlog, clock, self.channels,
            buffer_factory=self.buffer_factory, tracker_factory=self.tracker_factory,
            bot_user_ids=self.bot_user_ids, prepare=prepare,
        )
        self.door = Door(self.inbox, seen, self.worker.enqueue if self.relay is None else None,
                         room=self.backlog.room)  # 0
        self.intake = self.door.intake  # published: its waiting events, lag and commits

    # -- configuration and counters ---------------------------------------------------------

    @property
    def config(self) -> EngineConfig:
        return self._config

    @config.setter
    def config(self, config: EngineConfig) -> None:
        """Replace the settings the steps read (the filter's lists, catch-up's window)."""
        self._config = config
        self.filter.config = config
        self.decider.catch_up_minutes = config.catch_up_minutes

    @property
    def max_backlog(self) -> int:
        return self.backlog.max_backlog

    @max_backlog.setter
    def max_backlog(self, value: int) -> None:
        self.backlog.max_backlog = value

    @property
    def prepare(self) -> Prepare | None:
        return self.worker.prepare

    @prepare.setter
    def prepare(self, prepare: Prepare | None) -> None:
        self.worker.prepare = prepare

    @property
    def handled(self) -> int:
        return self.recorder.handled

    @property
    def usage(self) -> DailyUsage:
        return self.actor.meter.usage

    # -- taking events in (step 0) ---------------------------------------------------------

    def on_decision(self, listener: DecisionListener) -> None:
        self.actor.listeners.append(listener)

    async def handle(self, event: ChatEvent) -> bool:
        """Take an event in: True once it is durable and queued on its channel (tell the
        platform it arrived only then), False when it was taken in before. Raises
        `IntakeUnavailable` when the store cannot take it (do not acknowledge it)."""
        return await self.submit(event)

    def submit(self, event: ChatEvent) -> Awaitable[bool]:
        """`handle` in two halves: the event's place in line is taken now, synchronously
        (an adapter calls this in delivery order), and the result is awaited later."""
        if self.backlog.closed:
            raise RuntimeError("engine is closed")
        return self.door.submit(event)

    def last_taken(self, channel_id: str) -> str | None:
        """The id of the last message of this channel taken in (durably) by this run, or
        None. Events are taken in in delivery order, so when the store refuses one, what
        it lost comes after this message: an adapter reads the channel back from here."""
        return self.door.last_taken(channel_id)

    def read_back_on_refusal(self, left: Callable[[str], object] | None = None) -> None:
        """An adapter reads lost events back (kuuki.platforms.retry): a channel whose
        events the store refused refuses newer ones until `reopen`. ``left`` is told a
        channel whose work the store failed under (`_left`): the adapter reopens it and
        reads it back once the store answers. Front ends with no read-back (chat, replay,
        playground) leave it off."""
        self.door.read_back_on_refusal()
        self._read_back = left
        self.worker.left = self._left

    def _left(self, state: ChannelState, item: QueueItem) -> None:
        """The store failed under ``item`` (the worker left it for later). An event stays
        in the inbox, not handled: `reopen` is to queue it again (it was seen). The
        caught-up marker kept its owed answers: they wait for another marker. Both come,
        in this run, when the adapter told (``left``) reopens the channel and reads it
        back once the store answers; without one, at the next start (`recover`)."""
        if isinstance(item, ChatEvent):
            self.door.left(item.event_id)
        elif not isinstance(item, CaughtUp):
            return  # a timer or a proposal: nothing left in the inbox or owed
        if self._read_back is not None:
            self._read_back(state.channel.id)

    async def reopen(self, channel_ids: Iterable[str]) -> None:
        """Take these channels' events in again (their loss is being read back), and queue
        what the store's inbox holds of them taken in and not handled that this run never
        queued: a commit whose answer the outage lost (the connection broke after COMMIT)
        stored events the intake refused, and their redelivery or read-back is then "taken
        in before" and dropped; without this they waited for the next start's `recover`.
        So are events whose handling the store failed under (`_left`). Raises `StoreError`
        when the store cannot say (the caller tries again)."""
        ids = list(channel_ids)
        self.door.reopen(ids)
        for channel_id in ids:
            await self.recover(channel_id=channel_id)

    async def drain_intake(self) -> None:
        """Wait until every event submitted so far is committed or has failed."""
        await self.door.drain()

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
        return await self.door.recover(platform, owns=owns, channel_id=channel_id,
                                       enqueue=self.worker.enqueue)

    def caught_up(self, channel: Channel) -> None:
        """Everything missed in ``channel`` has been handed in: answer what is owed."""
        if self.relay is not None:
            self.relay.caught_up(channel)  # after what was handed in, to the channel's owner
            return
        self.backlog.put(self.worker.open(channel), CaughtUp())

    async def recover_timers(self, channel: Channel) -> int:
        """Rebuild the channel's re-checks from its stored decisions (a scale-out worker
        taking over a channel whose previous owner died, kuuki.scale.worker)."""
        return await self.decider.recover_timers(channel, self.worker.open)

    async def idle(self) -> None:
        """Wait until every queued event has been handled and every action sent."""
        await self.door.drain()
        await self.backlog.idle()

    async def close(self) -> None:
        await self.idle()
        self.backlog.closed = True
        tasks = stop(self.channels.clear())
        await asyncio.gather(*tasks, *self.worker.stopping, return_exceptions=True)
        if self.writer is not None:
            await self.writer.flush()

    def state(self, channel_id: str) -> ChannelState | None:
        return self.channels.get(channel_id)

    # -- the memory layer's port (EngineControl) -------------------------------------------

    async def propose(
        self, channel: Channel, wake: Message, *, topic: str, score: float, reason: str
    ) -> Decision | None:
        """Offer proactive talk about ``wake`` in ``channel``: it goes on the channel's
        queue and through the same pipeline (quiet, the intervention interval, …).
        Returns the decision, or None when the channel is not live."""
        return await self.decider.propose(channel, wake, topic=topic, score=score,
                                          reason=reason)

    def live(self, channel_id: str) -> LiveChannel | None:
        state = self.channels.get(channel_id)
        if state is None:
            return None
        return LiveChannel(state.buffer.recent(), state.last_human)

    def channels_of(self, user_id: str) -> set[str]:
        return {s.channel.id for s in self.channels.values() if s.holds_message_of(user_id)}

    def forget_person(self, user_id: str) -> set[str]:
        """Erase ``user_id``'s messages (and the bot's answers to them) from every live
        buffer and tracker; returns the channels they were erased from."""
        return {s.channel.id for s in self.channels.values() if s.erase_person(user_id)}

    def prune_buffers(self, now: datetime) -> int:
        """Drop expired messages from every buffer (reads prune lazily too, but a channel
        that went quiet would keep its last messages until someone spoke there again)."""
        return sum(s.buffer.prune(now) for s in self.channels.values())

    def evict_idle(self) -> int:
        """Drop channels idle for ``channel_idle_minutes`` (they are rebuilt from the store
        when they speak again); returns how many. Called by periodic maintenance."""
        gone = self.channels.idle_ones(self.clock.now())
        self.worker.stop(gone)
        return len(gone)

    def live_channels(self) -> int:
        return len(self.channels)

    def buffered(self) -> int:
        return sum(len(s.buffer) for s in self.channels.values())

    # -- the commands' port (EngineCommands), used by platform slash commands ----------------

    async def quiet(self, channel: Channel, minutes: float) -> datetime | None:
        """Stay silent in a channel unless addressed, for `minutes` (0 ends it)."""
        state = self.worker.open(channel)
        until = self.clock.now() + timedelta(minutes=minutes) if minutes > 0 else None
        state.bot.quiet_until = until
        return until

    def listening(self, channel: Channel) -> bool:
        return self.filter.listening(channel)

    def denies(self, channel_id: str) -> bool:
        """The settings deny this channel by its id (an adapter asks before a look-up)."""
        return self.filter.denies_id(channel_id)

    def status(self, channel: Channel) -> dict[str, Any]:
        state = self.channels.get(channel.id)
        usage = self.actor.meter.roll()
        quiet = state.bot.quiet_until if state else None
        return {
            "listening": self.listening(channel),
            "judge_mode": self.config.judge_mode,
            "quiet_until": quiet.isoformat() if quiet and quiet > self.clock.now() else None,
            "llm_calls_today": usage.calls,
            "tokens_today": usage.prompt_tokens + usage.completion_tokens,
            "messages_handled": self.handled,
        }

    async def latest_decision(self, channel_id: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        return await self.store.browse.latest_decision(channel_id)
