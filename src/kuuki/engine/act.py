"""Steps 6 and 7 of the engine: carry out a verdict and explain it.

Generate with the shared context (the `Responder` port: kuuki.respond.responder, which owns
the output guard and the fallbacks) → drop an unasked reply if the conversation moved on
while it was written → send (failures traced) → the bot's own message joins buffer,
tracker and store (the `Timeline` it was given) → the Decision is stored, the pipeline's
history stages hear about a delivered decision (`DecisionPipeline.sent`: interventions are written
after the send, never at the verdict), and listeners are told.

In shadow mode (`MessageFilter.shadowed`) the answer is written and checked as ever, but
nothing is sent (no typing indicator either), nothing joins the timeline, the bot's state
and the history stages are not told (nothing was carried out), and the Decision is marked
`shadow`: later decisions see the channel as it really is, the bot's own messages being
only those that really came (in a benchmark's seat, the member's real lines).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from kuuki.clock import Clock
from kuuki.decide.types import Case, DecisionPipeline
from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    Decision,
    DecisionTrace,
    Message,
    Stage,
    Verdict,
)
from kuuki.engine.channels import ChannelState
from kuuki.engine.timeline import Timeline
from kuuki.ports import DailyUsage, MessageStore, Outbox, Responder, Scene, Writer
from kuuki.text.secrets import redact

log = logging.getLogger("kuuki.engine")

DecisionListener = Callable[[Decision], Awaitable[None] | None]


class Meter:
    """LLM use per UTC day, counted from the decisions' traces (`/kuuki status`)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.usage = DailyUsage()

    def roll(self) -> DailyUsage:
        day = self.clock.now().date().isoformat()
        if self.usage.day != day:
            self.usage = DailyUsage(day=day)
        return self.usage

    def count(self, trace: DecisionTrace) -> None:
        usage = self.roll()
        for call in trace.llm_calls:
            if call.outcome != "skipped":
                usage.calls += 1
                usage.prompt_tokens += call.prompt_tokens
                usage.completion_tokens += call.completion_tokens


class Actor:
    """Steps 6-7 (module doc), with the collaborators it was given."""

    def __init__(
        self,
        *,
        clock: Clock,
        outbox: Outbox,
        responder: Responder,
        pipeline: DecisionPipeline,
        timeline: Timeline,
        messages: MessageStore | None,
        writer: Writer | None,
        bot_name: str,
        shadowed: Callable[[Channel], bool] = lambda channel: False,
    ) -> None:
        self.clock = clock
        self.outbox = outbox
        self.responder = responder
        self.pipeline = pipeline
        self.timeline = timeline
        self.messages = messages
        self.writer = writer
        self.bot_name = bot_name  # the bot's own reactions are stored under it
        self.shadowed = shadowed  # shadow mode in a channel (module doc)
        self.meter = Meter(clock)
        self.listeners: list[DecisionListener] = []

    async def act(self, state: ChannelState, case: Case, verdict: Verdict) -> Decision:
        """Carry out ``verdict`` about the case's message (steps 6 and 7)."""
        msg, trace = case.message, case.trace
        action: Action | None = None
        if verdict.action is not ActionKind.NONE:
            latest = state.last_human
            conversation, other = self._split_conversation(state, msg, verdict.conversation_id)
            addressed = verdict.stage is Stage.ADDRESSED
            scene = Scene(state.channel, msg, conversation, other)
            # A reaction is not typed: no platform shows "typing…" before an emoji; a shadowed
            # channel shows nothing at all.
            typing: AbstractAsyncContextManager[None] = (
                contextlib.nullcontext()
                if self.shadowed(state.channel) or verdict.action is ActionKind.REACT
                else self.outbox.typing(state.channel))
            try:
                async with typing:
                    response = await self.responder.act(verdict, scene, trace)
                action = response.action
                if response.fallback:
                    # The headline says what finally happened, not only why it was tried.
                    verdict = replace(verdict, reason=f"{verdict.reason} → {response.fallback}")
            except Exception as exc:
                # Not a model failure (those end in the responder's fallback): a bug. The
                # person who addressed the bot still gets the documented fallback.
                trace.error(f"generation failed: {type(exc).__name__}: {redact(str(exc))}")
                fallback = self.responder.fallback(verdict, scene, trace, "failed")
                action = fallback.action if fallback.action.kind is not ActionKind.NONE else None
                verdict = replace(verdict, reason=f"{verdict.reason} → {fallback.fallback}")
            if (
                action is not None
                and not addressed
                and state.last_human is not latest
                and self._same_conversation(state, msg, state.last_human)
            ):
                trace.step("dropped: the conversation moved on while the reply was written")
                verdict = replace(verdict, action=ActionKind.NONE, reason="conversation moved on")
                action = None
        return await self.conclude(state, case, verdict, action)

    def _same_conversation(self, state: ChannelState, a: Message, b: Message | None) -> bool:
        if b is None:
            return False
        if state.tracker is None:
            return True
        ca, cb = state.tracker.conversation_of(a.id), state.tracker.conversation_of(b.id)
        return ca is None or ca == cb

    async def conclude(
        self, state: ChannelState, case: Case, verdict: Verdict, action: Action | None
    ) -> Decision:
        """Send ``action`` (if any), then store, tell the pipeline and the listeners."""
        msg, trace = case.message, case.trace
        action = action or Action.none(state.channel.id, msg.id)
        shadow = self.shadowed(state.channel)
        if shadow:
            trace.features["shadow"] = True
            if action.kind is not ActionKind.NONE:
                trace.step(f"shadow mode: would {action.kind.value}; nothing was sent")
            delivered = False
        else:
            delivered = action.kind is ActionKind.NONE or await self._send(
                state, case, verdict, action)
        self.meter.count(trace)
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
            message_at=msg.ts,
            shadow=shadow,
        )
        if delivered:
            self.pipeline.sent(case, decision)
        if self.writer is not None:
            await self.writer.add_decision(decision)
        for listener in self.listeners:
            try:
                result = listener(decision)
                if result is not None:
                    await result
            except Exception:
                log.exception("decision listener failed")
        return decision

    async def _send(
        self, state: ChannelState, case: Case, verdict: Verdict, action: Action
    ) -> bool:
        """Send ``action``; the bot's state and timeline follow. False when it failed."""
        msg, trace = case.message, case.trace
        delivered = False
        try:
            posted = await self.outbox.send(state.channel, action)
            delivered = True
        except Exception as exc:
            # A platform's error may quote the token it was sent (kuuki.text.secrets).
            trace.error(f"send failed: {type(exc).__name__}: {redact(str(exc))}")
            posted = None
        now = self.clock.now()
        if delivered:
            state.bot.last_action_at = now
        if delivered and action.kind in (ActionKind.REPLY, ActionKind.ACK):
            state.bot.last_reply_at = now
            state.bot.last_reply_conversation = verdict.conversation_id or (
                state.tracker.conversation_of(msg.id) if state.tracker else None
            )
            state.bot.last_reply_to = case.addressing.kind
        reacted = posted is None and delivered and action.kind is ActionKind.REACT
        if reacted and self.messages is not None:
            # Remembered so that catching up after a crash knows this was answered.
            with contextlib.suppress(Exception):
                await self.messages.add_reaction(msg.id, self.bot_name, action.emoji or "", now)
        if posted is not None:
            await self.timeline.record_own(state, posted)
        return delivered

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


