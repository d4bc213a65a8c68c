"""The engine: one ordered queue per channel, and the steps of one message.

    0 intake     the event is durable (the store's inbox) before `handle` returns, so an
                 adapter acknowledges only what a crash cannot lose (kuuki.intake)
    1 filter     own messages, other bots (loop guard), allow/deny lists, DM policy
    2 record     store + short-term buffer; edits, deletes and reactions update both
    3 structure  the channel's ConversationTracker places the message in a conversation
    4 remember   memory hooks (counters, background jobs — never on the reply path)
    5 decide     addressed → speak now; else the Judge
    6 act        none | react | ack | reply, sent through the Outbox; the bot's own
                 message joins store, buffer and tracker
    7 explain    a Decision with its DecisionTrace, stored and announced to listeners

Channels run in parallel; within a channel events are handled in order. An event id is
handled once however often it is delivered, across restarts: handling ends by marking it
handled in the same transaction as what it wrote, and what a crash interrupted is handled
again by `recover`. Events that arrive after the fact (recovered, or read back from a
platform's history by its adapter: `ChatEvent.catch_up`) are recorded; the addressed ones
among them are answered at the channel's `caught_up` marker if no decision exists yet, the
bot did not answer them before, and they are at most ``catch_up_minutes`` old. A failure
inside one event is recorded in its trace and never stops the channel's queue. Memory is
bounded (kuuki.channels). The engine knows no platform or vendor names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from .channels import CaughtUp, ChannelState, ChannelTable, PendingJudgment, stop
from .clock import Clock
from .domain import (
    Action,
    ActionKind,
    Channel,
    ChatEvent,
    Decision,
    DecisionTrace,
    EventKind,
    Message,
    Stage,
    User,
    Visibility,
)
from .intake import Inbox, Intake
from .judge.addressing import AddressDetector, Addressing
from .judge.base import AddressedOnlyJudge, BotState, Judge, Situation, Verdict
from .memory.buffer import ChannelBuffer
from .respond import Responder
from .safety import clean_incoming
from .settings import Settings

log = logging.getLogger("kuuki.engine")

DecisionListener = Callable[[Decision], Awaitable[None] | None]
PREPARE_BATCH = 64
PING_BURST_GAP = timedelta(seconds=20)  # a ping this soon after the person's last one
PING_SETTLE_S = 8.0  # quiet from that person before the burst is answered
SEEN_CAPACITY = 20_000  # ids answered from memory; older redeliveries ask the store


class Outbox(Protocol):
    """Where actions go: a platform adapter, the terminal, the replay printer.

    `send` performs the action in `channel` and returns the bot's posted Message for reply
    and ack (so it joins the timeline), None for reactions. It may raise; the engine
    records the failure in the decision's trace. `typing` shows a typing indicator while
    the body runs (a no-op where the platform has none).
    """

    async def send(self, channel: Channel, action: Action) -> Message | None: ...

    def typing(self, channel: Channel) -> contextlib.AbstractAsyncContextManager[None]: ...


class Tracker(Protocol):
    def observe(self, msg: Message) -> Any: ...

    def conversation_of(self, message_id: str) -> str | None: ...

    def edit(self, message_id: str, text: str) -> None: ...

    def delete(self, message_id: str) -> None: ...


class MessageStore(Protocol):
    async def upsert_channel(self, ch: Channel) -> None: ...

    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: Any = None
    ) -> list[Message]: ...

    async def edit_message(self, message_id: str, text: str) -> bool: ...

    async def delete_message(self, message_id: str) -> bool: ...

    async def add_reaction(self, message_id: str, user_id: str, emoji: str, at: Any) -> None: ...

    async def decided(self, message_ids: Sequence[str]) -> set[str]: ...

    async def answered(self, message_ids: Sequence[str], bot_ids: Iterable[str]) -> set[str]: ...


class Writer(Protocol):
    """Write-behind for the hot path: messages, decisions, and inbox events handled.

    `handled` marks an inbox event done in the same transaction as everything queued
    before it, so a crash never separates what handling wrote from the mark.
    """

    async def add_message(self, m: Message, *, conversation_id: str | None = None) -> None: ...

    async def add_decision(self, d: Decision) -> None: ...

    async def handled(self, event_id: str) -> None: ...

    async def flush(self) -> Any: ...


class MemoryHook(Protocol):
    """Step 4: sees every recorded message; must return quickly (schedule, don't work)."""

    async def observe(self, channel: Channel, msg: Message, *, from_bot: bool) -> None: ...


@dataclass(slots=True)
class Usage:
    """LLM use per UTC day, for `/kuuki status`."""

    day: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Engine:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock,
        store: MessageStore | None,
        writer: Writer | None,
        outbox: Outbox,
        responder: Responder,
        judge: Judge | None = None,
        tracker_factory: Callable[[Channel], Tracker | None] | None = None,
        memory_hooks: Sequence[MemoryHook] = (),
        bot_user_ids: Sequence[str] = (),
        seen_capacity: int = SEEN_CAPACITY,
        prepare: Callable[[Sequence[Message]], Awaitable[None]] | None = None,
        inbox: Inbox | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.store = store
        self.writer = writer
        self.outbox = outbox
        self.responder = responder
        self.judge: Judge = judge or AddressedOnlyJudge()
        self.tracker_factory = tracker_factory
        self.memory_hooks = list(memory_hooks)
        # Warms per-message caches (sentence embeddings) before steps 3-5; implementations
        # batch the requests of all channel workers that are ready at the same moment.
        self.prepare = prepare
        self.bot_user_ids: set[str] = set(bot_user_ids) | {settings.persona.name}
        self.address = AddressDetector(settings.persona.names)
        self.channels = ChannelTable(
            max_live=settings.max_live_channels,
            idle=timedelta(minutes=settings.channel_idle_minutes),
        )
        self._listeners: list[DecisionListener] = []
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._seen_capacity = seen_capacity
        self._pending: dict[str, asyncio.Future[bool]] = {}
        self.intake = Intake(inbox, self._deliver)
        self.inbox = inbox
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
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

    def _deliver(self, events: list[ChatEvent]) -> None:
        """Intake committed these (new) events: remember them, queue them in order."""
        for event in events:
            self._mark_seen(event.event_id)
            key = self._echo_key(event)
            if key is not None:
                self._mark_seen(key)
            self._enqueue(event)

    def _enqueue(self, item: ChatEvent, channel: Channel | None = None) -> None:
        state = self._open(channel or item.channel)
        self.channels.touch(state, self.clock.now())
        state.busy += 1
        self._inflight += 1
        self._idle.clear()
        state.queue.put_nowait(item)

    async def recover(self, platform: str | None = None) -> list[Channel]:
        """Queue the events a crash left taken in but not handled (those of ``platform``'s
        channels, or all), as catch-up; returns their channels, which an adapter then
        marks `caught_up` once it has also read their history."""
        if self.inbox is None:
            return []
        channels: dict[str, Channel] = {}
        for event in await self.inbox.pending_events(platform=platform):
            if event.event_id in self._seen:
                continue
            self._mark_seen(event.event_id)
            self._enqueue(replace(event, catch_up=True))
            channels[event.channel.id] = event.channel
        if channels:
            log.info("recovering %d channels' events taken in before a crash", len(channels))
        return list(channels.values())

    def caught_up(self, channel: Channel) -> None:
        """Everything missed in ``channel`` has been handed in: answer what is owed."""
        self._inflight += 1
        self._idle.clear()
        state = self._open(channel)
        state.busy += 1
        state.queue.put_nowait(CaughtUp())

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
            # runs once for the lot; the events are still handled one by one, in order.
            while len(batch) < PREPARE_BATCH and not state.queue.empty():
                batch.append(state.queue.get_nowait())
            await self._prepare([e for e in batch if isinstance(e, ChatEvent)])
            for item in batch:
                try:
                    if isinstance(item, CaughtUp):
                        await self._answer_missed(state)
                    else:
                        await self._process(state, item)
                except Exception:  # the queue must survive anything one event does
                    what = item.event_id if isinstance(item, ChatEvent) else "catch-up"
                    log.exception("event %s in channel %s failed", what, state.channel.id)
                finally:
                    if isinstance(item, ChatEvent):
                        await self._handled(item)
                    state.queue.task_done()
                    state.busy -= 1
                    self._inflight -= 1
                    if self._inflight == 0:
                        self._idle.set()

    async def _handled(self, event: ChatEvent) -> None:
        if self.writer is None or self.inbox is None:
            return
        try:
            await self.writer.handled(event.event_id)
        except Exception as exc:  # the store is down: the event is handled again later
            log.warning("could not mark %s handled: %s", event.event_id, exc)

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

    def _is_own(self, user: User) -> bool:
        return user.id in self.bot_user_ids

    # -- the steps ------------------------------------------------------------------------------

    async def _process(self, state: ChannelState, event: ChatEvent) -> None:
        self.handled += 1
        if event.kind is EventKind.POSTED and event.message is not None:
            await self._posted(
                state, event.message, backfill=event.backfill, catch_up=event.catch_up
            )
        elif event.kind is EventKind.EDITED and event.target_id is not None:
            text = clean_incoming(event.text or "")
            state.buffer.edit(event.target_id, text)
            if state.tracker is not None:
                state.tracker.edit(event.target_id, text)
            if self.store is not None:
                await self._flush()
                await self.store.edit_message(event.target_id, text)
        elif event.kind is EventKind.DELETED and event.target_id is not None:
            state.buffer.delete(event.target_id)
            if state.tracker is not None:
                state.tracker.delete(event.target_id)
            if self.store is not None:
                await self._flush()
                await self.store.delete_message(event.target_id)
        elif (
            event.kind is EventKind.REACTION_ADDED
            and event.target_id
            and event.emoji
            and self.store is not None
            and event.user is not None
        ):
            await self._flush()
            await self.store.add_reaction(event.target_id, event.user.id, event.emoji, event.at)

    async def _flush(self) -> None:
        if self.writer is not None:
            await self.writer.flush()

    async def _posted(
        self, state: ChannelState, raw: Message, *, backfill: bool = False, catch_up: bool = False
    ) -> None:
        msg = replace(raw, text=clean_incoming(raw.text))
        trace = DecisionTrace(msg.id, state.channel.id, self.clock.now())
        own = self._is_own(msg.user)
        # 1 filter -------------------------------------------------------------------------
        blocked = self._filter(state, msg)
        if blocked == "denied":
            return  # a denied channel leaves nothing behind, not even in the store
        # 2 record ---------------------------------------------------------------------------
        conversation_id = await self._record(state, msg, own=own)
        if own or backfill:
            return
        if catch_up:
            # Missed while the bot was away: owed an answer only if it addressed the bot,
            # and only once the whole catch-up is recorded (the `caught_up` marker).
            if not blocked and self._addressing(state, msg):
                state.missed.append(msg)
            return
        if blocked:
            trace.step(f"filtered: {blocked}")
            verdict = Verdict(ActionKind.NONE, Stage.FILTERED, 0, blocked)
            await self._decide_done(state, msg, verdict, None, trace)
            return
        # 5 decide -----------------------------------------------------------------------------
        if not msg.user.is_bot:
            state.last_human = msg
        await self._supersede(state)
        addressing = self._addressing(state, msg)
        trace.features["addressed"] = addressing.kind or None
        trace.features["conversation"] = conversation_id
        now = self.clock.now()
        if state.bot.quiet_until is not None and now < state.bot.quiet_until and not addressing:
            trace.step(f"quiet in this channel until {state.bot.quiet_until.isoformat()}")
            verdict = Verdict(ActionKind.NONE, Stage.FILTERED, 0, "asked to be quiet here")
            await self._decide_done(state, msg, verdict, None, trace)
            return
        if addressing and self._in_ping_burst(state, msg):
            await self._hold_ping(state, msg, trace)
            return
        situation = self._situation(state, msg, conversation_id, addressing)
        verdict = await self._judge(situation, trace)
        if verdict.defer_s is not None and verdict.defer_s > 0 and not addressing:
            trace.step(f"waiting {verdict.defer_s:.0f} s for the burst to settle")
            handle = self.clock.call_later(
                verdict.defer_s, lambda: self._settled(state, msg, trace)
            )
            state.pending = PendingJudgment(msg, trace, handle)
            # judge change (issue 4): an open question keeps its recheck timer even when a
            # newer message supersedes the debounced judgment, so "nobody answered it" is
            # still noticed in a busy channel.
            self._schedule_recheck(state, msg, verdict)
            return
        await self.act(state, msg, verdict, trace)
        self._schedule_recheck(state, msg, verdict)

    def _addressing(self, state: ChannelState, msg: Message) -> Addressing:
        return self.address.detect(
            msg,
            bot_user_ids=self.bot_user_ids,
            bot_message_ids=state.bot_message_ids,
            dm=state.channel.visibility is Visibility.DM,
            recent=state.buffer.recent() if msg.thread else (),
        )

    def _situation(
        self, state: ChannelState, msg: Message, conversation_id: str | None, addressing: Any
    ) -> Situation:
        return Situation(
            message=msg,
            channel=state.channel,
            addressing=addressing,
            recent=state.buffer.recent(),
            now=self.clock.now(),
            conversation_id=conversation_id,
            tracker=state.tracker,
            bot=state.bot,
        )

    async def _judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        try:
            return await self.judge.judge(situation, trace)
        except Exception as exc:
            trace.error(f"judge failed: {type(exc).__name__}: {exc}")
            return Verdict(ActionKind.NONE, Stage.ERROR, 0, "judge failed: stay silent")

    async def _supersede(self, state: ChannelState) -> None:
        pending, state.pending = state.pending, None
        if pending is None:
            return
        pending.handle.cancel()
        pending.trace.step("superseded by a newer message before the burst settled")
        verdict = Verdict(ActionKind.NONE, Stage.LOCAL, pending.trace.score, "superseded")
        await self._decide_done(state, pending.message, verdict, None, pending.trace)

    async def _timer_work(self, work: Callable[[], Awaitable[None]]) -> None:
        self._inflight += 1
        self._idle.clear()
        try:
            await work()
        except Exception:
            log.exception("timer work failed")
        finally:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.set()

    async def _judge_again(
        self, state: ChannelState, msg: Message, trace: DecisionTrace, flag: str
    ) -> Verdict:
        """Judge `msg` once more from a timer, with the channel as it is now."""
        conversation_id = state.tracker.conversation_of(msg.id) if state.tracker else None
        addressing = self._addressing(state, msg)
        situation = self._situation(state, msg, conversation_id, addressing)
        situation.extra[flag] = True
        verdict = await self._judge(situation, trace)
        await self.act(state, msg, verdict, trace)
        return verdict

    async def _settled(self, state: ChannelState, msg: Message, trace: DecisionTrace) -> None:
        async def work() -> None:
            if state.pending is None or state.pending.message.id != msg.id:
                return
            state.pending = None
            verdict = await self._judge_again(state, msg, trace, "settled")
            self._schedule_recheck(state, msg, verdict)

        await self._timer_work(work)

    def _in_ping_burst(self, state: ChannelState, msg: Message) -> bool:
        """A person pinging again within PING_BURST_GAP of a ping the bot answered in words
        (or while one of theirs is held) is in a burst: a person answers the burst, not
        each ping of it. A ping after a failed send or a fallback reaction is a fair
        repeat and is answered at once."""
        if msg.user.is_bot:
            return False
        if msg.user.id in state.held:
            return True
        last = state.pings.get(msg.user.id)
        return last is not None and timedelta(0) <= msg.ts - last <= PING_BURST_GAP

    async def _hold_ping(self, state: ChannelState, msg: Message, trace: DecisionTrace) -> None:
        """Hold a ping of a burst until the person stops; the newest one is answered then,
        with the whole burst in view. A held ping is superseded only by the same person's
        next ping, never by other people's talk."""
        user = msg.user.id
        old = state.held.pop(user, None)
        if old is not None:
            old.handle.cancel()
            old.trace.step("part of a burst of pings: answered together with the newer one")
            verdict = Verdict(ActionKind.NONE, Stage.ADDRESSED, 100, "ping burst: answered later")
            await self._decide_done(state, old.message, verdict, None, old.trace)
        trace.step(f"another ping within {PING_BURST_GAP.total_seconds():.0f} s: waiting "
                   f"{PING_SETTLE_S:.0f} s for the burst to end")

        async def settled() -> None:
            async def work() -> None:
                held = state.held.get(user)
                if held is None or held.message.id != msg.id:
                    return
                del state.held[user]
                await self._judge_again(state, msg, trace, "settled")

            await self._timer_work(work)

        handle = self.clock.call_later(PING_SETTLE_S, settled)
        state.held[user] = PendingJudgment(msg, trace, handle)

    def _schedule_recheck(self, state: ChannelState, msg: Message, verdict: Verdict) -> None:
        if verdict.recheck_s is None or verdict.recheck_s <= 0:
            return
        old = state.rechecks.pop(msg.id, None)
        if old is not None:
            old.cancel()
        delay = verdict.recheck_s

        async def recheck() -> None:
            async def work() -> None:
                state.rechecks.pop(msg.id, None)
                trace = DecisionTrace(msg.id, state.channel.id, self.clock.now())
                trace.step(f"re-judged after {delay:.0f} s")
                await self._judge_again(state, msg, trace, "recheck")

            await self._timer_work(work)

        state.rechecks[msg.id] = self.clock.call_later(delay, recheck)

    # -- catching up ----------------------------------------------------------------------

    async def _answer_missed(self, state: ChannelState) -> None:
        """At a `caught_up` marker: answer the addressed messages missed while away that
        are still owed an answer (no decision yet, not answered before, recent enough)."""
        missed, state.missed = state.missed, []
        if not missed:
            return
        ids = [m.id for m in missed]
        decided: set[str] = set()
        answered: set[str] = set()
        if self.store is not None:
            decided = await self.store.decided(ids)
            answered = await self.store.answered(ids, self.bot_user_ids)
        window = timedelta(minutes=self.settings.catch_up_minutes)
        for msg in missed:
            if msg.id in decided:
                continue  # decided before the restart; the decision stands
            now = self.clock.now()
            trace = DecisionTrace(msg.id, state.channel.id, now)
            trace.step("missed while the bot was away (restart or outage); caught up")
            age = now - msg.ts
            if msg.id in answered:
                reason = "addressed; answered before the restart"
            elif age > window:
                reason = (
                    f"addressed {age.total_seconds() / 60:.0f} min ago while the bot was "
                    f"away: too late to answer (catch-up answers within "
                    f"{self.settings.catch_up_minutes:g} min)"
                )
            else:
                await self._judge_again(state, msg, trace, "caught_up")
                continue
            verdict = Verdict(ActionKind.NONE, Stage.ADDRESSED, 100, reason)
            await self._decide_done(state, msg, verdict, None, trace)

    # -- commands (used by platform slash commands) ----------------------------------------

    async def quiet(self, channel: Channel, minutes: float) -> datetime | None:
        """Stay silent in a channel unless addressed, for `minutes` (0 ends it)."""
        state = self._open(channel)
        until = self.clock.now() + timedelta(minutes=minutes) if minutes > 0 else None
        state.bot.quiet_until = until
        return until

    def _allowed(self, channel: Channel) -> bool:
        s = self.settings
        keys = set(channel.names)
        if s.channel_allow and not keys & set(s.channel_allow):
            return False
        return not keys & set(s.channel_deny)

    def listening(self, channel: Channel) -> bool:
        if not self._allowed(channel):
            return False
        return not (channel.visibility is Visibility.DM and not self.settings.dms_enabled)

    def status(self, channel: Channel) -> dict[str, Any]:
        state = self.channels.get(channel.id)
        self._roll_usage()
        quiet = state.bot.quiet_until if state else None
        return {
            "listening": self.listening(channel),
            "judge_mode": self.settings.judge_mode,
            "quiet_until": quiet.isoformat() if quiet and quiet > self.clock.now() else None,
            "llm_calls_today": self.usage.calls,
            "tokens_today": self.usage.prompt_tokens + self.usage.completion_tokens,
            "messages_handled": self.handled,
        }

    def _roll_usage(self) -> None:
        day = self.clock.now().date().isoformat()
        if self.usage.day != day:
            self.usage = Usage(day=day)

    def _filter(self, state: ChannelState, msg: Message) -> str:
        ch = state.channel
        if not self._allowed(ch):
            return "denied"
        if self._is_own(msg.user):
            return "own message"
        if ch.visibility is Visibility.DM and not self.settings.dms_enabled:
            return "DMs are off"
        if msg.user.is_bot:
            if state.bot_turns_since_human >= 2:
                return "loop guard: two bot turns since the last human message"
            return ""
        if not msg.text.strip():
            return "empty message"
        return ""

    async def _record(self, state: ChannelState, msg: Message, *, own: bool) -> str | None:
        if msg.user.is_bot or own:
            state.bot_turns_since_human += 1
        else:
            state.bot_turns_since_human = 0
        if own:
            state.bot_message_ids.add(msg.id)
        state.buffer.add(msg)
        conversation_id: str | None = None
        if state.tracker is not None:
            try:
                state.tracker.observe(msg)
                conversation_id = state.tracker.conversation_of(msg.id)
            except Exception as exc:
                log.warning("tracker failed on %s: %s", msg.id, exc)
        if self.writer is not None:
            await self.writer.add_message(msg, conversation_id=conversation_id)
        for hook in self.memory_hooks:  # 4 remember
            try:
                await hook.observe(state.channel, msg, from_bot=own)
            except Exception as exc:
                log.warning("memory hook %s failed on %s: %s", type(hook).__name__, msg.id, exc)
        return conversation_id

    async def act(
        self,
        state: ChannelState,
        msg: Message,
        verdict: Verdict,
        trace: DecisionTrace,
        *,
        task: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> Decision:
        """Step 6 and 7 for a verdict about `msg` (also used by timers of the judge).

        `task` and `extra` choose another prompt than reply/ack (the memory layer's
        proactive talk passes ``task="proactive"`` with the remembered topic).
        """
        action: Action | None = None
        if verdict.action is not ActionKind.NONE:
            latest = state.last_human
            conversation, other = self._split_conversation(state, msg, verdict.conversation_id)
            try:
                async with self.outbox.typing(state.channel):
                    response = await self.responder.act(
                        verdict.action,
                        state.channel,
                        msg,
                        conversation,
                        other,
                        trace,
                        emoji=verdict.emoji,
                        task=task,
                        extra=extra,
                        addressed=verdict.stage is Stage.ADDRESSED,
                    )
                action = response.action
                if response.fallback:
                    # The headline says what finally happened, not only why it was tried.
                    verdict = replace(verdict, reason=f"{verdict.reason} → {response.fallback}")
            except Exception as exc:
                # Not a model failure (those end in the responder's fallback): a bug. The
                # person who addressed the bot still gets the documented fallback.
                trace.error(f"generation failed: {type(exc).__name__}: {exc}")
                fallback = self.responder.fallback(
                    state.channel, msg, trace, "failed", addressed=verdict.stage is Stage.ADDRESSED
                )
                action = fallback.action if fallback.action.kind is not ActionKind.NONE else None
                verdict = replace(verdict, reason=f"{verdict.reason} → {fallback.fallback}")
            if (
                action is not None
                and verdict.stage is not Stage.ADDRESSED
                and state.last_human is not latest
                and self._same_conversation(state, msg, state.last_human)
            ):
                trace.step("dropped: the conversation moved on while the reply was written")
                verdict = Verdict(
                    ActionKind.NONE, verdict.stage, verdict.score, "conversation moved on"
                )
                action = None
        return await self._decide_done(state, msg, verdict, action, trace)

    def _same_conversation(self, state: ChannelState, a: Message, b: Message | None) -> bool:
        if b is None:
            return False
        if state.tracker is None:
            return True
        ca, cb = state.tracker.conversation_of(a.id), state.tracker.conversation_of(b.id)
        return ca is None or ca == cb

    async def _decide_done(
        self,
        state: ChannelState,
        msg: Message,
        verdict: Verdict,
        action: Action | None,
        trace: DecisionTrace,
    ) -> Decision:
        action = action or Action.none(state.channel.id, msg.id)
        if action.kind is not ActionKind.NONE:
            try:
                posted = await self.outbox.send(state.channel, action)
            except Exception as exc:
                trace.error(f"send failed: {type(exc).__name__}: {exc}")
                posted = None
            now = self.clock.now()
            state.bot.last_action_at = now
            if action.kind in (ActionKind.REPLY, ActionKind.ACK):
                state.bot.last_reply_at = now
                state.bot.last_reply_conversation = verdict.conversation_id or (
                    state.tracker.conversation_of(msg.id) if state.tracker else None
                )
                state.note_intervention(now, state.bot.last_reply_conversation)
            if posted is None and action.kind is ActionKind.REACT and self.store is not None:
                # Remembered so that catching up after a crash knows this was answered.
                with contextlib.suppress(Exception):
                    await self.store.add_reaction(
                        msg.id, self.settings.persona.name, action.emoji or "", now
                    )
            if posted is not None and verdict.stage is Stage.ADDRESSED and not msg.user.is_bot:
                state.pings[msg.user.id] = msg.ts  # answered in words: see _in_ping_burst
                if len(state.pings) > 64:  # bounded: forget pings answered long ago
                    cutoff = msg.ts - PING_BURST_GAP
                    state.pings = {u: t for u, t in state.pings.items() if t >= cutoff}
            if posted is not None:
                self._mark_seen(f"msg:{posted.channel_id}:{posted.id}")
                await self._record(state, posted, own=True)
        self._roll_usage()
        for call in trace.llm_calls:
            if call.outcome != "skipped":
                self.usage.calls += 1
                self.usage.prompt_tokens += call.prompt_tokens
                self.usage.completion_tokens += call.completion_tokens
        decision = Decision(
            message_id=msg.id,
            channel_id=state.channel.id,
            action=action,
            stage=verdict.stage,
            score=verdict.score,
            reason=verdict.reason,
            decided_at=self.clock.now(),
            trace=trace,
            decided=verdict.action if verdict.action is not action.kind else None,
        )
        if self.writer is not None:
            await self.writer.add_decision(decision)
        for listener in self._listeners:
            try:
                result = listener(decision)
                if result is not None:
                    await result
            except Exception:
                log.exception("decision listener failed")
        return decision

    def _split_conversation(
        self, state: ChannelState, msg: Message, conversation_id: str | None
    ) -> tuple[list[Message], list[Message]]:
        """The target conversation in full, and the channel's other recent messages."""
        recent = state.buffer.recent()
        tracker = state.tracker
        if tracker is None:
            return recent[-10:], []
        target = conversation_id or tracker.conversation_of(msg.id)
        if target is None:
            return recent[-10:], []
        mine = [m for m in recent if tracker.conversation_of(m.id) == target]
        other = [m for m in recent if tracker.conversation_of(m.id) != target]
        if msg not in mine:
            mine.append(msg)
        return mine[-20:], other[-10:]
