"""Step 6 of the path: turn a verdict into an Action, generating text with the shared context.

Everything a model writes passes the output guard (`kuuki.guard.reply`) before it is
posted. The conversation's language is detected from its messages (`kuuki.text.language`)
and the prompt is rendered in it; the persona's language is only the default.

    generate → guard ─ ok ──────────────────────────────▶ post the text
                     └ rejected → one retry with a short, strict prompt → guard
                                                            └ rejected again → fallback

Safe defaults (the trace records which one was used and why):
- the model fails (timeout, error, paused by the circuit breaker) or its text is rejected
  twice → for a message that addressed the bot, a reaction with a fitting emoji, so the
  person sees they were heard; for anything else, nothing (nobody asked);
- the reply budget (`llm.reply_budget_s`, on the clock) runs out, waiting for the model
  included → the same fallback at once: the channel's other messages wait behind a reply
  at most that long, whatever the model does (docs/decisions.md, "The reply budget");
- no LLM configured (`--llm none`) → the action stands with no text (replay prints null).

A reply (not an ack) may look things up first: with a `Toolbox` and a model that can call
tools, the first generation is a short tool loop (kuuki.respond.tools.loop); its final text goes
through the same guard. When tools are configured but the model cannot use them, the trace
says so and the reply is written without them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kuuki.clock import Clock
from kuuki.decide.response_type import pick_emoji
from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    DecisionTrace,
    GuardRecord,
    Message,
    Stage,
    Verdict,
)
from kuuki.guard.reply import Expect, GuardVerdict, ReplyGuard
from kuuki.llm.base import LLM, ChatMessage, Completion, ToolCalling, current_deadline
from kuuki.llm.record import call_llm
from kuuki.memory.context import ContextBuilder, PromptContext
from kuuki.ports import MemoryProvider, PromptDump, Scene
from kuuki.respond.tools.base import ToolContext
from kuuki.respond.tools.loop import answer_with_tools
from kuuki.respond.tools.toolbox import Toolbox
from kuuki.settings import Persona
from kuuki.settings.policy import ChannelPolicy
from kuuki.text.language import conversation_language
from kuuki.text.secrets import redact

__all__ = ["MemoryProvider", "ModelResponder", "PromptDump", "Response", "pick_emoji"]

_LANGUAGE_NAMES = {"ja": "Japanese", "en": "English"}
_OUTCOME = {
    "timeout": "timed out",
    "unavailable": "model unavailable",
    "skipped": "model paused after failures",
    "invalid": "empty answer",
    "error": "model error",
}


@dataclass(frozen=True, slots=True)
class Response:
    """What step 6 did: the action, and when it is a fallback, why (for the headline)."""

    action: Action
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class _Job:
    """One piece of text to write: what was decided, about what, and how it is asked."""

    verdict: Verdict
    scene: Scene
    trace: DecisionTrace
    name: str  # the prompt: reply, ack, proactive
    system: str
    max_tokens: int
    expect: Expect


@dataclass(slots=True)
class ModelResponder:
    persona: Persona
    builder: ContextBuilder
    llm: LLM | None
    guard: ReplyGuard
    memory: MemoryProvider | None = None
    dump: PromptDump | None = None
    reply_max_tokens: int = 80
    ack_max_tokens: int = 16
    # The languages the model writes (kuuki.app.model_languages); a conversation in any
    # other gets the fallback without asking the model.
    languages: frozenset[str] = frozenset({"ja", "en"})
    # How long a reply may take, model queue included, before the fallback (None: no
    # limit beyond the back-end's timeout). Enforced on `clock` by the model's door.
    clock: Clock | None = None
    budget_s: float | None = None
    # Tools a reply may use (kuuki.respond.tools); None or empty: none. ``tools_off`` is why the
    # model is not offered them although some are configured (said in the trace).
    toolbox: Toolbox | None = None
    tools_off: str | None = None
    # Each channel's policy (kuuki.settings.policy): its own system prompt and default
    # language; None: the persona's everywhere.
    policy_of: Callable[[Channel], ChannelPolicy] | None = None

    def persona_in(self, channel: Channel) -> Persona:
        """The persona as ``channel``'s policy wants it (prompt, keywords, language)."""
        if self.policy_of is None:
            return self.persona
        return self.policy_of(channel).persona(self.persona)

    async def act(self, verdict: Verdict, scene: Scene, trace: DecisionTrace) -> Response:
        """Carry out ``verdict`` about ``scene.trigger``: the action, with text written by
        the model and passed by the guard, or the documented fallback (module doc)."""
        kind, channel, trigger = verdict.action, scene.channel, scene.trigger
        if kind is ActionKind.NONE:
            return Response(Action.none(channel.id, trigger.id))
        if kind is ActionKind.REACT:
            chosen = verdict.emoji or pick_emoji(trigger.text, self.persona.emoji)
            return Response(Action(ActionKind.REACT, channel.id, trigger.id, emoji=chosen,
                                   thread=trigger.thread))
        if self.llm is None:
            trace.step("generation off: action without text")
            return Response(Action(kind, channel.id, trigger.id, text=None,
                                   thread=trigger.thread))
        own = set(self.persona.names)
        human = [m.text for m in scene.conversation
                 if m.user.name not in own and not m.user.is_bot]
        persona = self.persona_in(channel)
        lang = conversation_language(trigger.text, human, persona.default_language)
        trace.features["language"] = lang
        name = verdict.task or ("ack" if kind is ActionKind.ACK else "reply")
        if lang not in self.languages:
            why = f"not written: {self.llm.name} does not write {_LANGUAGE_NAMES[lang]}"
            return self._fallback(verdict, scene, trace, why, name=name)
        ctx = await self._context(scene, lang, trace)
        if persona.system_prompt != self.persona.system_prompt:
            ctx.persona_prompt = persona.prompt_for(lang)
        speakers = sorted({m.user.name for m in (*scene.conversation, *scene.other)} - own)
        extra = {"topic": verdict.topic} if verdict.topic else {}
        job = _Job(
            verdict, scene, trace, name,
            system=self.builder.render(name, ctx, language=lang, **extra),
            max_tokens=self.ack_max_tokens if kind is ActionKind.ACK else self.reply_max_tokens,
            expect=Expect(lang, [m.text for m in scene.conversation], speakers),
        )
        token = current_deadline.set(self._deadline())
        try:
            return await self._generate(job)
        finally:
            current_deadline.reset(token)

    async def _context(self, scene: Scene, lang: str, trace: DecisionTrace) -> PromptContext:
        """What the prompt shows: the conversation before the message, the other
        messages, and what memory adds."""
        # The message to answer is the last turn, as in any chat; the conversation before
        # it is context. (Measured on the shipped model: 67 % of first answers pass the
        # guard this way, 45 % with the message in both places.)
        trigger = scene.trigger
        before = [m for m in scene.conversation if m.id != trigger.id]
        ctx = PromptContext(
            channel=scene.channel,
            now=trace.started_at,
            conversation=before,
            other_messages=scene.other,
            trigger=trigger,
            language=lang,
        )
        if self.memory is not None:
            try:
                await self.memory.fill(ctx, trace)
            except Exception as exc:  # memory must never cost the reply
                trace.error(f"memory context failed: {type(exc).__name__}: {exc}")
        return ctx

    def _deadline(self) -> float | None:
        if self.clock is None or self.budget_s is None:
            return None
        return self.clock.monotonic() + self.budget_s

    async def _generate(self, job: _Job) -> Response:
        """The first answer through the guard, one stricter retry, else the fallback."""
        found: list[str] = []
        trigger, trace, name = job.scene.trigger, job.trace, job.name
        tools = self._tools_for(name, job.scene.channel, trigger, trace)
        first = await self._attempt(
            name, [ChatMessage("system", job.system), self._turn(trigger)], job.max_tokens,
            job.expect, trace, tools=tools, found=found,
        )
        if isinstance(first, GuardVerdict) and first.ok:
            return self._posted(job, first.text)
        if isinstance(first, GuardVerdict):
            trace.step(f"{name}: the guard rejected the answer ({first.reason}); "
                       "one retry with a shorter, stricter prompt")
            retry = self._retry_messages(job, found)
            second = await self._attempt(f"{name}-retry", retry, job.max_tokens, job.expect,
                                         trace)
            if isinstance(second, GuardVerdict) and second.ok:
                return self._posted(job, second.text)
            why = (f"rejected twice ({second.reason})" if isinstance(second, GuardVerdict)
                   else second)
        else:
            why = first
        return self._fallback(job.verdict, job.scene, trace, why, name=name)

    def _turn(self, trigger: Message) -> ChatMessage:
        """The last turn the model answers: who said it and what, without the call of the
        bot's own name ("Kuu, what do you think?"), which models copy into their answer."""
        return ChatMessage("user", f"{trigger.user.name}: {self._uncalled(trigger.text)}")

    def _uncalled(self, text: str) -> str:
        names = "|".join(re.escape(n) for n in self.persona.names if n)
        if not names:
            return text
        greeting = r"(?:(?:hey|hi|hello|ねえ|ねぇ)\s*)?"
        call = rf"^\s*{greeting}@?(?:{names})(?:\s*[,、:：!！]\s*|\s+)"
        out = re.sub(call, "", text, flags=re.I)
        out = re.sub(rf"[,、]?\s*@?(?:{names})\s*([!?.！？。]*)\s*$", r"\1", out, flags=re.I)
        out = re.sub(rf"@(?:{names})\b\s*", "", out, flags=re.I).strip()
        return out if any(ch.isalnum() for ch in out) else text

    def _tools_for(
        self, name: str, channel: Channel, trigger: Message, trace: DecisionTrace
    ) -> ToolContext | None:
        """The context tools run in, when this generation may use them."""
        if name != "reply" or not self.toolbox:
            return None
        if self.tools_off is not None:
            trace.step(f"tools off: {self.tools_off}")
            return None
        why = self.llm.tool_support() if isinstance(self.llm, ToolCalling) else (
            "this back-end cannot call tools")
        if why is not None:
            trace.step(f"tools off: {redact(why)}")
            return None
        return ToolContext(channel, trigger.user, trace.started_at)

    def _retry_messages(self, job: _Job, found: Sequence[str] = ()) -> list[ChatMessage]:
        lang, trigger = job.expect.language, job.scene.trigger
        system = self.builder.prompts.render(
            "retry",
            language=lang,
            persona_prompt=self.persona.prompt_for(lang),
            persona_name=self.persona.name,
            speaker=trigger.user.name,
            kind="ack" if job.verdict.action is ActionKind.ACK else "reply",
        )
        if found:  # what the first attempt looked up still answers the question
            system += "\n\nWhat you looked up:\n" + "\n".join(f"- {f}" for f in found)
        return [ChatMessage("system", system), ChatMessage("user", self._uncalled(trigger.text))]

    async def _attempt(
        self,
        purpose: str,
        messages: list[ChatMessage],
        max_tokens: int,
        expect: Expect,
        trace: DecisionTrace,
        *,
        tools: ToolContext | None = None,
        found: list[str] | None = None,
    ) -> GuardVerdict | str:
        """One generation through the guard: its verdict, or why the model gave nothing."""
        assert self.llm is not None
        completion: Completion | None
        if tools is not None and self.toolbox is not None:
            completion = await answer_with_tools(
                self.llm, self.toolbox, messages, tools, trace, purpose=purpose,
                max_tokens=max_tokens, dump=self._dump_for(trace), found=found,
            )
        else:
            completion = await call_llm(
                self.llm, trace, purpose, messages, max_tokens=max_tokens, temperature=0.7,
                dump=self._dump_for(trace),
            )
        if completion is None:
            outcome = trace.llm_calls[-1].outcome if trace.llm_calls else "error"
            deadline = current_deadline.get()
            if (
                outcome == "timeout"
                and deadline is not None
                and self.clock is not None
                and self.clock.monotonic() >= deadline
            ):
                return f"{purpose} not written within the reply budget ({self.budget_s:g} s)"
            return f"{purpose} {_OUTCOME.get(outcome, outcome)}"
        expect = Expect(expect.language, expect.conversation, expect.speakers,
                        truncated=completion.finish_reason == "length")
        verdict = self.guard.check(completion.text, expect)
        trace.guard.append(GuardRecord(
            purpose, verdict.ok, verdict.check, verdict.reason, _short(completion.text),
            verdict.repairs,
        ))
        return verdict

    @staticmethod
    def _posted(job: _Job, text: str) -> Response:
        trigger = job.scene.trigger
        return Response(Action(job.verdict.action, job.scene.channel.id, trigger.id, text=text,
                               thread=trigger.thread, reply_to=trigger.id))

    def fallback(
        self, verdict: Verdict, scene: Scene, trace: DecisionTrace, why: str
    ) -> Response:
        """The documented safe default for a reply that could not be written (used by the
        engine when generation failed in an unexpected way)."""
        return self._fallback(verdict, scene, trace, why, name="reply")

    def _fallback(
        self, verdict: Verdict, scene: Scene, trace: DecisionTrace, why: str, *, name: str
    ) -> Response:
        channel, trigger = scene.channel, scene.trigger
        if verdict.stage is not Stage.ADDRESSED:
            trace.step(f"{name}: {why} → say nothing (not addressed: nobody is waiting)")
            return Response(Action.none(channel.id, trigger.id), f"{name} {why}: stayed silent"
                            if not why.startswith(name) else f"{why}: stayed silent")
        emoji = pick_emoji(trigger.text, self.persona.emoji)
        trace.step(f"{name}: {why} → react {emoji} instead")
        label = why if why.startswith(name) else f"{name} {why}"
        return Response(
            Action(ActionKind.REACT, channel.id, trigger.id, emoji=emoji, thread=trigger.thread),
            f"{label}: reacted {emoji}",
        )

    def _dump_for(self, trace: DecisionTrace) -> PromptDump | None:
        dump = self.dump
        if dump is None:
            return None
        prefix = f"{trace.channel_id}-{trace.message_id}"
        return lambda purpose, messages: dump(f"{prefix}-{purpose}", messages)


def _short(text: str, n: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 1] + "…"
