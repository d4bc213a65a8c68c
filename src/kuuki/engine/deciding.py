"""Step 5 of the engine: the glue around the decision pipeline (the `DecisionPipeline` port).

A posted message the recorder let in (`Admitted`), a timer (a settled burst, a re-check)
or proposed proactive talk becomes a `Case` (the situation, the pass, the trace) and runs
through the pipeline (kuuki.decide); its verdict is carried out (the `Actor`, steps 6-7),
deferred (a timer that puts the case back on the channel's own queue when due; a newer
deferral with the same key supersedes it) or followed by a re-check. Catch-up answers
missed addressed messages at the channel's marker. Timers and proposals wait on the queue
like events (the `Backlog` it was given), so one channel's work is always handled in order.
The bot's own messages are recorded and not judged (step 1 said whose they are).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from datetime import timedelta

from kuuki.clock import Clock
from kuuki.decide.situation import Situation
from kuuki.decide.types import Case, Pass, Proposal
from kuuki.decide.types import DecisionPipeline as Pipeline
from kuuki.domain import (
    ActionKind,
    Channel,
    ChatEvent,
    Decision,
    DecisionTrace,
    Message,
    Stage,
    Verdict,
)
from kuuki.engine.act import Actor
from kuuki.engine.channels import (
    Backlog,
    ChannelState,
    ChannelTable,
    PendingJudgment,
    Proposed,
    Timer,
)
from kuuki.engine.filter import Admitted, MessageFilter
from kuuki.errors import StoreError
from kuuki.ports import CatchUpHistory
from kuuki.text.secrets import redact

# Re-checks of decisions older than this are not rebuilt on a takeover (one is due at most
# RECHECK_S = 180 s after its decision; kuuki.decide.stages.common).
RECHECK_SPAN_S = 600.0

MarkHandled = Callable[[str], Awaitable[None]]


class Decider:
    """Step 5 (module doc), with the collaborators it was given."""

    def __init__(
        self,
        *,
        clock: Clock,
        pipeline: Pipeline,
        actor: Actor,
        filter: MessageFilter,
        channels: ChannelTable,
        backlog: Backlog,
        history: CatchUpHistory | None,
        mark_handled: MarkHandled,
        catch_up_minutes: float,
    ) -> None:
        self.clock = clock
        self.pipeline = pipeline
        self.actor = actor
        self.filter = filter
        self.channels = channels
        self.backlog = backlog
        self.history = history
        self.mark_handled = mark_handled
        self.catch_up_minutes = catch_up_minutes

    async def posted(
        self, state: ChannelState, event: ChatEvent, admitted: Admitted | None
    ) -> None:
        """Step 5 for a posted event's message (``admitted``: as recorded, None when the
        filter did not let it in); its event is held while an answer is owed."""
        assert event.message is not None
        owed = len(state.missed)
        if admitted is not None:
            await self._posted(state, admitted, backfill=event.backfill,
                               catch_up=event.catch_up)
        if len(state.missed) > owed:
            state.missed_events.append(event.event_id)
        for pending in state.pending.values():  # held for an owed answer: not yet done
            mine = pending.message.id == event.message.id
            if pending.owed and pending.event_id is None and mine:
                pending.event_id = event.event_id
                state.held_events.add(event.event_id)

    async def _posted(
        self, state: ChannelState, admitted: Admitted, *, backfill: bool, catch_up: bool
    ) -> None:
        msg, own = admitted.message, admitted.own
        if backfill or (own and not catch_up):
            return  # the bot's own message joined the timeline: nothing to decide
        case = self._case(state, msg, Pass.CAUGHT_UP if catch_up else Pass.FIRST)
        if catch_up:
            # Missed while the bot was away: owed an answer only if it addressed the bot,
            # and only once the whole catch-up is recorded (the `caught_up` marker).
            if case.addressing and not msg.user.is_bot and not own:
                state.missed.append(msg)
            return
        if not msg.user.is_bot:
            state.last_human = msg
        verdict = await self.pipeline.decide(case)  # 5 decide
        # A newer message supersedes a settling burst, unless it is a copy of the message
        # waiting there sent again (kuuki.decide.stages.sent_twice): then the original is answered.
        if verdict.duplicate_of is None:
            await self._supersede(
                state, "channel", "superseded by a newer message before the burst settled"
            )
        await self._carry_out(state, case, verdict)

    def _own_posts(self, state: ChannelState) -> Iterable[str]:
        """The bot's messages a message here may answer: the channel's own and, for a
        thread that is a channel of its own (Discord), its parent's, where its root is."""
        parent_id = state.channel.parent_id
        parent = self.channels.get(parent_id) if parent_id is not None else None
        if parent is None:
            return state.bot_message_ids
        return itertools.chain(state.bot_message_ids, parent.bot_message_ids)

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
        addressing = self.pipeline.address(
            msg,
            bot_user_ids=self.filter.bot_user_ids,
            bot_message_ids=self._own_posts(state),
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
        awaiting = frozenset(p.message.id for p in state.pending.values()) | frozenset(
            state.rechecks
        )
        return Case(situation, passing, trace, state.bot_message_ids, proposal,
                    awaiting=awaiting)

    async def _carry_out(self, state: ChannelState, case: Case, verdict: Verdict) -> None:
        if not verdict.log:
            return
        if verdict.quiet_s is not None:
            self._quiet(state, case, verdict.quiet_s)
        if verdict.defer_s is not None and verdict.defer_s > 0:
            await self._defer(state, case, verdict)
        else:
            await self.actor.act(state, case, verdict)
        self._schedule_recheck(state, case.message, verdict)

    def _quiet(self, state: ChannelState, case: Case, seconds: float) -> None:
        """A stage was asked to keep the bot quiet here: as `Engine.quiet` does, before
        the verdict is carried out, so the stored trace says until when."""
        until = self.clock.now() + timedelta(seconds=seconds)
        state.bot.quiet_until = until
        case.trace.features["quiet_until"] = until.isoformat()
        case.trace.step(f"quiet in this channel until {until.isoformat()} unless addressed")

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
        await self.actor.conclude(state, case, verdict, None)
        await self._release(state, pending)

    async def _release(self, state: ChannelState, pending: PendingJudgment) -> None:
        """An owed deferral was decided: its event may now be marked handled."""
        if pending.event_id is not None:
            state.held_events.discard(pending.event_id)
            await self.mark_handled(pending.event_id)

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
            if self.backlog.closed or self.channels.get(state.channel.id) is not state:
                return
            item.done = asyncio.get_running_loop().create_future()
            self.backlog.put(state, item)
            await item.done

        return fire

    async def on_timer(self, state: ChannelState, item: Timer) -> None:
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

    async def recover_timers(
        self, channel: Channel, open_channel: Callable[[Channel], ChannelState]
    ) -> int:
        """Rebuild the channel's re-checks from its stored decisions (a scale-out worker
        taking over a channel whose previous owner died, kuuki.scale.worker): each open
        question not yet judged again is, at its time or now if that has passed. Debounce
        timers need no rebuilding: their events stay pending and are recovered."""
        if self.history is None:
            return 0
        now = self.clock.now()
        due = await self.history.open_rechecks(channel.id, now - timedelta(seconds=RECHECK_SPAN_S))
        if not due:
            return 0
        found = {m.id: m for m in await self.history.messages_by_ids([mid for mid, _ in due])}
        state = open_channel(channel)
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
        if state is None or self.backlog.closed:
            return None
        done: asyncio.Future[Decision | None] = asyncio.get_running_loop().create_future()
        self.backlog.put(state, Proposed(wake, Proposal(topic, score, reason, wake.ts), done))
        return await done

    async def on_proposed(self, state: ChannelState, item: Proposed) -> None:
        trigger = state.last_human or item.message
        case = self._case(state, trigger, Pass.PROACTIVE, proposal=item.proposal)
        case.trace.step(item.proposal.reason)
        verdict = await self.pipeline.decide(case)
        decision = await self.actor.act(state, case, verdict) if verdict.log else None
        if not item.done.done():
            item.done.set_result(decision)

    # -- catching up ----------------------------------------------------------------------

    async def answer_missed(self, state: ChannelState) -> None:
        """At a `caught_up` marker: answer the addressed messages missed while away that
        are still owed an answer (no decision yet, not answered before, recent enough).
        When the store fails under it (`StoreError`), what it did not decide stays owed,
        its events not marked handled, for the next marker (kuuki.engine.core `_left`)."""
        missed, state.missed = state.missed, []
        events, state.missed_events = state.missed_events, []  # one per missed message
        if not missed:
            return
        ids = [m.id for m in missed]
        decided: set[str] = set()
        answered: set[str] = set()
        if self.history is not None:
            try:
                decided = await self.history.decided(ids)
                answered = await self.history.answered(ids, self.filter.bot_user_ids)
            except Exception as exc:
                state.missed[:0], state.missed_events[:0] = missed, events
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(f"cannot tell what was answered: {type(exc).__name__}: "
                                 f"{redact(str(exc))}") from exc
        done = 0
        try:
            for msg in missed:
                await self._answer_owed(state, msg, decided, answered)
                done += 1
        except StoreError:
            # The rest are not decided (the one it failed under may be: the next marker
            # reads its decision or its answer back), so not handled: still owed.
            state.missed[:0], state.missed_events[:0] = missed[done:], events[done:]
            events = events[:done]
            raise
        finally:
            for event_id in events:  # with the decisions, in the writer's order
                await self.mark_handled(event_id)

    async def _answer_owed(
        self, state: ChannelState, msg: Message, decided: set[str], answered: set[str]
    ) -> None:
        if msg.id in decided:
            return  # decided before the restart; the decision stands
        case = self._case(state, msg, Pass.CAUGHT_UP)
        case.trace.step("missed while the bot was away (restart or outage); caught up")
        age = self.clock.now() - msg.ts
        window = timedelta(minutes=self.catch_up_minutes)
        if msg.id in answered:
            reason = "addressed; answered before the restart"
        elif age > window:
            reason = (
                f"addressed {age.total_seconds() / 60:.0f} min ago while the bot was "
                f"away: too late to answer (catch-up answers within "
                f"{self.catch_up_minutes:g} min)"
            )
        else:
            await self._carry_out(state, case, await self.pipeline.decide(case))
            return
        verdict = Verdict(ActionKind.NONE, Stage.ADDRESSED, 100, reason)
        await self.actor.conclude(state, case, verdict, None)
