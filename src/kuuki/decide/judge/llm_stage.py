"""The LLM stage: the model calls the judge makes when the local stage cannot tell.

Four questions, each with its own prompt (``prompts/<lang>/*.j2``), structured output and
the seed's fail-safe when the model errs:

    state               ENDING / MISUNDERSTANDING / CONFLICT / ACTIVE   error → ACTIVE
    same_conversation   is this the conversation of my last intervention? error → same
    situation_changed   within that conversation, did the situation change? error → changed
    judge               {should_respond, response_type, reason, confidence} error → silent

Every answer is validated against its schema here, whatever the back-end promised. The
model is reached through a circuit breaker; `available` says whether it is worth trying.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from kuuki.clock import Clock
from kuuki.decide.judge.cache import LLMJudgment
from kuuki.decide.judge.history import TTLCache
from kuuki.decide.judge.state import ConvState, StateResult, parse_state
from kuuki.decide.situation import Situation
from kuuki.decide.tracking import format_log
from kuuki.domain import DecisionTrace, GuardRecord, Message
from kuuki.guard.judgment import judgment_problem
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage
from kuuki.llm.breaker import BreakerState, CircuitBreaker, GuardedLLM
from kuuki.llm.record import PromptDump, call_llm
from kuuki.llm.schema import parse_json, schema_errors
from kuuki.memory.context import ContextBuilder, PromptContext
from kuuki.ports import MemoryProvider
from kuuki.prompts import Prompts
from kuuki.text.language import conversation_language

JUDGE_SCHEMA: dict[str, Any] = {
    "title": "judge",
    "type": "object",
    "properties": {
        "should_respond": {"type": "boolean"},
        "response_type": {"type": "string", "enum": ["none", "react", "ack", "reply"]},
        "reason": {"type": "string", "maxLength": 400},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["should_respond", "response_type", "reason", "confidence"],
    "additionalProperties": False,
}
STATE_SCHEMA: dict[str, Any] = {
    "title": "state",
    "type": "object",
    "properties": {
        "state": {"type": "string", "enum": ["ACTIVE", "ENDING", "MISUNDERSTANDING", "CONFLICT"]}
    },
    "required": ["state"],
}
SAME_SCHEMA: dict[str, Any] = {
    "title": "same_conversation",
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["SAME", "DIFFERENT"]}},
    "required": ["answer"],
}
CHANGED_SCHEMA: dict[str, Any] = {
    "title": "situation_changed",
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["UNCHANGED", "CHANGED"]}},
    "required": ["answer"],
}


def _data(completion: Any, schema: dict[str, Any]) -> Any:
    """The completion's JSON object if it matches ``schema``; None otherwise."""
    if completion is None:
        return None
    data = completion.data
    if data is None:
        try:
            data = parse_json(completion.text, schema)
        except Exception:
            return None
    return None if schema_errors(data, schema) else data


def _key(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:20]


class LLMStage:
    """The judge's model calls, behind a circuit breaker, with the seed's caches."""

    def __init__(
        self,
        llm: LLM,
        clock: Clock,
        prompts: Prompts,
        builder: ContextBuilder,
        *,
        memory: MemoryProvider | None = None,
        dump: PromptDump | None = None,
        scaffold: Scaffold | None = None,
        failure_threshold: int = 3,
        cooldown_s: float = 120.0,
    ) -> None:
        self.inner = llm
        self.breaker = CircuitBreaker(
            clock, failure_threshold=failure_threshold, cooldown_s=cooldown_s
        )
        self.llm: LLM = GuardedLLM(llm, self.breaker)
        self.clock = clock
        self.prompts = prompts
        self.builder = builder
        self.memory = memory
        self.dump = dump
        self.scaffold = scaffold
        self.same_cache: TTLCache[str, bool] = TTLCache()
        self.changed_cache: TTLCache[str, bool] = TTLCache()

    @property
    def available(self) -> bool:
        return self.breaker.state is not BreakerState.OPEN

    def describe_breaker(self) -> str:
        return f"{self.breaker.state.value} after {self.breaker.failures} failure(s)"

    async def _ask(
        self,
        trace: DecisionTrace,
        purpose: str,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        max_tokens: int,
    ) -> Any:
        completion = await call_llm(
            self.llm,
            trace,
            purpose,
            messages,
            json_schema=schema,
            max_tokens=max_tokens,
            temperature=0.0,
            dump=self.dump,
        )
        return _data(completion, schema)

    async def state(self, conversation: Sequence[Message], trace: DecisionTrace) -> StateResult:
        prompt = self.prompts.render("state", conversation_log=format_log(conversation))
        data = await self._ask(trace, "state", [ChatMessage("user", prompt)], STATE_SCHEMA, 20)
        state = parse_state(data.get("state")) if isinstance(data, dict) else None
        if state is None:
            trace.step("state by LLM failed: fail-safe ACTIVE")
            return StateResult(ConvState.ACTIVE, 0.5, "fail-safe")
        trace.step(f"state by LLM: {state.value}")
        return StateResult(state, 0.8, "llm")

    async def same_conversation(self, previous: str, current: str, trace: DecisionTrace) -> bool:
        return await self._cached_question(
            "same_conversation", self.same_cache, SAME_SCHEMA, "SAME", previous, current, trace,
            cached_label="same conversation (cached 5 min): {}", cached_no="DIFFERENT",
            failed="same conversation by LLM failed: fail-safe SAME",
            answered="same conversation by LLM: {}",
        )

    async def situation_changed(self, previous: str, current: str, trace: DecisionTrace) -> bool:
        return await self._cached_question(
            "situation_changed", self.changed_cache, CHANGED_SCHEMA, "CHANGED", previous,
            current, trace,
            cached_label="situation (cached 5 min): {}", cached_no="UNCHANGED",
            failed="situation-changed by LLM failed: fail-safe CHANGED",
            answered="situation by LLM: {}",
        )

    async def _cached_question(
        self,
        purpose: str,
        cache: Any,
        schema: dict[str, Any],
        yes: str,
        previous: str,
        current: str,
        trace: DecisionTrace,
        *,
        cached_label: str,
        cached_no: str,
        failed: str,
        answered: str,
    ) -> bool:
        """A seed yes/no question about two conversation logs, cached 5 min per pair.

        Both seed fail-safes answer yes (same conversation / situation changed), and a
        failure is not cached: the next try may get a real answer.
        """
        now = self.clock.now()
        key = _key(previous, current)
        cached = cache.get(key, now)
        if cached is not None:
            trace.step(cached_label.format(yes if cached else cached_no))
            return bool(cached)
        prompt = self.prompts.render(
            purpose, previous_conversation=previous, current_conversation=current
        )
        data = await self._ask(trace, purpose, [ChatMessage("user", prompt)], schema, 20)
        if not isinstance(data, dict):
            trace.step(failed)
            return True
        result: bool = data["answer"] == yes
        cache.put(key, result, now)
        trace.step(answered.format(data["answer"]))
        return result

    async def judge(
        self,
        s: Situation,
        conversation: Sequence[Message],
        other: Sequence[Message],
        trace: DecisionTrace,
        hints: str = "",
    ) -> LLMJudgment | None:
        """The seed 003 judgment; None when the call or its answer is unusable."""
        ctx = PromptContext(
            channel=s.channel,
            now=s.now,
            conversation=conversation,
            other_messages=other,
            trigger=s.message,
        )
        if self.memory is not None:
            try:
                await self.memory.fill(ctx, trace)
            except Exception as exc:  # memories are context, not a reason to fail
                trace.error(f"memory context failed: {type(exc).__name__}: {exc}")
        own = {m.user.id for m in conversation if m.user.is_bot}
        lang = conversation_language(
            s.message.text,
            [m.text for m in conversation if m.user.id not in own],
            self.builder.persona.default_language,
        )
        system = self.builder.render("judge", ctx, language=lang, hints=hints)
        data = await self._ask(trace, "judge", [ChatMessage("system", system)], JUDGE_SCHEMA, 120)
        if not isinstance(data, dict):
            return None
        problem = judgment_problem(data, self.scaffold) if self.scaffold is not None else None
        shown = json.dumps(data, ensure_ascii=False)[:300]
        trace.guard.append(GuardRecord("judge", problem is None, "meaning" if problem else "",
                                       problem or "", shown))
        if problem is not None:
            trace.step(f"LLM judge: answer rejected ({problem})")
            return None
        return LLMJudgment(
            should_respond=bool(data["should_respond"]),
            response_type=str(data["response_type"]),
            reason=str(data["reason"])[:400],
            confidence=float(data["confidence"]),
        )
