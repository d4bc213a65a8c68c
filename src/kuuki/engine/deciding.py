"""Step 5 of the engine, the glue around the decision pipeline (a mixin of `Engine`).

A posted message, a timer (a settled burst, a re-check) or proposed proactive talk becomes
a `Case` (the situation, the pass, the trace) and runs through the pipeline
(kuuki.decide); its verdict is carried out (kuuki.engine.act), deferred (a timer that puts the
case back on the channel's own queue when due; a newer deferral with the same key
supersedes it) or followed by a re-check. Catch-up answers missed addressed messages at
the channel's marker. Timers and proposals wait on the queue like events, so one channel's
work is always handled in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kuuki.decide.base import Situation, Verdict
from kuuki.decide.gates import allowed, listening
from kuuki.decide.types import Case, Pass, Proposal
from kuuki.domain import ActionKind, Channel, Decision, DecisionTrace, Message, Stage, User
from kuuki.engine.act import Acting
from kuuki.engine.channels import ChannelState, PendingJudgment, Proposed, QueueItem, Timer
from kuuki.ports import Usage
from kuuki.text.safety import clean_incoming

# Re-checks of decisions older than this are not rebuilt on a takeover (one is due at most
# RECHECK_S = 180 s after its decision; kuuki.decide.local).
RECHECK_SPAN_S = 600.0

if TYPE_CHECKING:
    from kuuki.engine.channels import ChannelTable


class Deciding(Acting):
    """Step 5 (a mixin: `Engine` provides the attributes and methods declared here;
    steps 6-7 come from `Acting`)."""

    channels: ChannelTable
    handled: int
    bot_user_ids: set[str]
    _closed: bool

    def _put(self, state: ChannelState, item: QueueItem) -> None: ...

    def _open(self, channel: Channel) -> ChannelState:
        raise NotImplementedError  # the engine's

    async def _handled(self, event_id: str) -> None: ...

    def _is_own(self, user: User) -> bool:
        return user.id in self.bot_user_ids

    async def _posted(
        self, state: ChannelState, raw: Message, *, backfill: bool = False, catch_up: bool = False
    ) -> None:
        text = clean_incoming(raw.text)
        msg = raw if text == raw.text else replace(raw, text=text)  # frozen: shared when clean
        if not allowed(self.settings, state.channel):
            return  # a denied channel leaves nothing behind, not even in the store
        own = self._is_own(msg.user)
        await self._record(state, msg, own=own)  # steps 1-4
        if backfill:
            return
        case = self._case(state, msg, Pass.CAUGHT_UP if catch_up else Pass.FIRST)
        if catch_up:
            # Missed while the bot was away: owed an answer only if it addressed the bot,
            # and only once the whole catch-up is recorded (the `caught_up` marker).
            if case.addressing and not msg.user.is_bot and not own:
                state.missed.append(msg)
            return
        if not own:
            if not msg.user.is_bot:
                state.last_human = msg
            await self._supersede(
                state, "channel", "superseded by a newer message before the burst settled"
            )
        verdict = await self.pipeline.decide(case)  # 5 decide
        await self._carry_out(state, case, verdict)

    def _case(
        self,
        state: ChannelState,
        msg: Message,
        passing: Pass,
        trace: DecisionTrace | None = None,
        proposal: Proposal | None = None,
    ) -> Case:
        now = self.clock.now()
        trace = trace or DecisionTrace(msg.id, state.channel.id, now)
        addressing = self.pipeline.detector.detect(
            msg,
            bot_user_ids=self.bot_user_ids,
            bot_message_ids=state.bot_message_ids,
            dm=state.channel.visibility.value == "dm",
            recent=state.buffer.recent() if msg.thread else (),
        )
        if passing is Pass.PROACTIVE:
            addressing = replace(addressing, kind="")
        conversation_id = state.tracker.conversation_of(msg.id) if state.tracker else None
        trace.features["addressed"] = addressing.kind or None
        trace.features["conversation"] = conversation_id
        situation = Situation(
            message=msg,
            channel=state.channel,
            addressing=addressing,
            recent=state.buffer.recent(),
            now=now,
            conversation_id=conversation_id,
            tracker=state.tracker,
            bot=state.bot,
        )
        return Case(situation, passing, trace, state.bot_message_ids, proposal)

    async def _carry_out(self, state: ChannelState, case: Case, verdict: Verdict) -> None:
        if not verdict.log:
            return
        if verdict.defer_s is not None and verdict.defer_s > 0:
            await self._defer(state, case, verdict)
        else:
            await self.act(state, case, verdict)
        self._schedule_recheck(state, case.message, verdict)

    async def _defer(self, state: ChannelState, case: Case, verdict: Verdict) -> None:
        """Judge ``case`` again after ``defer_s`` unless a newer deferral with the same key
        supersedes it first (the debounce's key is also superseded by any new message)."""
        key, delay = verdict.defer_key, verdict.defer_s or 0.0
        await self._supersede(state, key, "superseded by a newer message of the burst")
        case.trace.step(f"waiting {delay:.0f} s for the burst to settle")
        item = Timer(Pass.SETTLED, case.message, case.trace, key)
        handle = self.clock.call_later(delay, self._fire(state, item))
        state.pending[key] = PendingJudgment(case.message, case.trace, handle, verdict.owed)

    async def _supersede(self, state: ChannelState, key: str, why: str) -> None:
        pending = state.pending.pop(key, None)
        if pending is None:
            return
        pending.handle.cancel()
        pending.trace.step(why)
        case = self._case(state, pending.message, Pass.SETTLED, pending.trace)
        verdict = Verdict(ActionKind.NONE, Stage.LOCAL, pending.trace.score, "superseded")
        await self._decide_done(state, case, verdict, None)
        await self._release(state, pending)

    async def _release(self, state: ChannelState, pending: PendingJudgment) -> None:
        """An owed deferral was decided: its event may now be marked handled."""
        if pending.event_id is not None:
            state.held_events.discard(pending.event_id)
            await self._handled(pending.event_id)

    def _schedule_recheck(self, state: ChannelState, msg: Message, verdict: Verdict) -> None:
        if verdict.recheck_s is None or verdict.recheck_s <= 0:
            return
        old = state.rechecks.pop(msg.id, None)
        if old is not None:
            old.cancel()
        item = Timer(Pass.RECHECK, msg)
        state.rechecks[msg.id] = self.clock.call_later(verdict.recheck_s, self._fire(state, item))

    def _fire(self, state: ChannelState, item: Timer) -> Callable[[], Awaitable[None]]:
        """A timer's callback: put ``item`` on the channel's queue and wait until it was
        handled (so a virtual clock runs the work at the time it was due)."""

        async def fire() -> None:
            if self._closed or self.channels.get(state.channel.id) is not state:
                return
            item.done = asyncio.get_running_loop().create_future()
            self._put(state, item)
            await item.done

        return fire

    async def _on_timer(self, state: ChannelState, item: Timer) -> None:
        msg = item.message
        if item.passing is Pass.SETTLED:
            pending = state.pending.get(item.key or "")
            if pending is None or pending.message.id != msg.id:
                return  # superseded meanwhile
            del state.pending[item.key or ""]
            case = self._case(state, msg, Pass.SETTLED, item.trace)
            try:
                await self._carry_out(state, case, await self.pipeline.decide(case))
            finally:
                await self._release(state, pending)
            return
        else:
            if state.rechecks.pop(msg.id, None) is None:
                return
            case = self._case(state, msg, Pass.RECHECK)
            age = (self.clock.now() - msg.ts).total_seconds()
            case.trace.step(f"re-judged after {age:.0f} s")
        verdict = await self.pipeline.decide(case)
        await self._carry_out(state, case, verdict)

    async def recover_timers(self, channel: Channel) -> int:
        """Rebuild the channel's re-checks from its stored decisions (a scale-out worker
        taking over a channel whose previous owner died, kuuki.scale.worker): each open
        question not yet judged again is, at its time or now if that has passed. Debounce
        timers need no rebuilding: their events stay pending and are recovered."""
        if self.store is None:
            return 0
        now = self.clock.now()
        due = await self.store.open_rechecks(channel.id, now - timedelta(seconds=RECHECK_SPAN_S))
        if not due:
            return 0
        found = {m.id: m for m in await self.store.messages_by_ids([mid for mid, _ in due])}
        state = self._open(channel)
        count = 0
        for message_id, at in due:
            msg = found.get(message_id)
            if msg is None or message_id in state.rechecks:
                continue
            delay = max(0.0, (at - now).total_seconds())
            item = Timer(Pass.RECHECK, msg)
            state.rechecks[message_id] = self.clock.call_later(delay, self._fire(state, item))
            count += 1
        return count

    # -- proactive talk ---------------------------------------------------------------------

    async def propose(
        self, channel: Channel, wake: Message, *, topic: str, score: float, reason: str
    ) -> Decision | None:
        """Offer proactive talk about ``wake`` in ``channel`` (the memory layer does): it
        goes on the channel's queue and through the same pipeline (quiet, the intervention
        interval, …). Returns the decision, or None when the channel is not live."""
        state = self.channels.get(channel.id)
        if state is None or self._closed:
            return None
        done: asyncio.Future[Decision | None] = asyncio.get_running_loop().create_future()
        self._put(state, Proposed(wake, Proposal(topic, score, reason, wake.ts), done))
        return await done

    async def _on_proposed(self, state: ChannelState, item: Proposed) -> None:
        trigger = state.last_human or item.message
        case = self._case(state, trigger, Pass.PROACTIVE, proposal=item.proposal)
        case.trace.step(item.proposal.reason)
        verdict = await self.pipeline.decide(case)
        decision = await self.act(state, case, verdict) if verdict.log else None
        if not item.done.done():
            item.done.set_result(decision)

    # -- catching up ----------------------------------------------------------------------

    async def _answer_missed(self, state: ChannelState) -> None:
        """At a `caught_up` marker: answer the addressed messages missed while away that
        are still owed an answer (no decision yet, not answered before, recent enough)."""
        missed, state.missed = state.missed, []
        events, state.missed_events = state.missed_events, []
        if not missed:
            return
        ids = [m.id for m in missed]
        decided: set[str] = set()
        answered: set[str] = set()
        if self.store is not None:
            try:
                decided = await self.store.decided(ids)
                answered = await self.store.answered(ids, self.bot_user_ids)
            except Exception:
                # the store is down: still owed, at the next marker (the retrier's round)
                state.missed[:0], state.missed_events[:0] = missed, events
                raise
        try:
            await self._answer_owed(state, missed, decided, answered)
        finally:
            for event_id in events:  # with the decisions, in the writer's order
                await self._handled(event_id)

    async def _answer_owed(
        self, state: ChannelState, missed: list[Message], decided: set[str], answered: set[str]
    ) -> None:
        window = timedelta(minutes=self.settings.catch_up_minutes)
        for msg in missed:
            if msg.id in decided:
                continue  # decided before the restart; the decision stands
            case = self._case(state, msg, Pass.CAUGHT_UP)
            case.trace.step("missed while the bot was away (restart or outage); caught up")
            age = self.clock.now() - msg.ts
            if msg.id in answered:
                reason = "addressed; answered before the restart"
            elif age > window:
                reason = (
                    f"addressed {age.total_seconds() / 60:.0f} min ago while the bot was "
                    f"away: too late to answer (catch-up answers within "
                    f"{self.settings.catch_up_minutes:g} min)"
                )
            else:
                await self._carry_out(state, case, await self.pipeline.decide(case))
                continue
            verdict = Verdict(ActionKind.NONE, Stage.ADDRESSED, 100, reason)
            await self._decide_done(state, case, verdict, None)

    # -- commands (used by platform slash commands) ----------------------------------------

    async def quiet(self, channel: Channel, minutes: float) -> datetime | None:
        """Stay silent in a channel unless addressed, for `minutes` (0 ends it)."""
        state = self._open(channel)
        until = self.clock.now() + timedelta(minutes=minutes) if minutes > 0 else None
        state.bot.quiet_until = until
        return until

    def listening(self, channel: Channel) -> bool:
        return listening(self.settings, channel)

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
