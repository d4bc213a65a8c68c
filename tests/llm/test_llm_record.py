from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kuuki.clock import VirtualClock
from kuuki.domain import DecisionTrace
from kuuki.errors import LLMBadOutput, LLMError, LLMInterrupted, LLMTimeout, LLMUnavailable
from kuuki.llm.base import ChatMessage
from kuuki.llm.breaker import BreakerState, CircuitBreaker, GuardedLLM
from kuuki.llm.record import call_llm
from kuuki.llm.stub import StubLLM
from kuuki.testing.llm import ScriptedLLM

ASK = [ChatMessage("system", "be brief"), ChatMessage("user", "hi there")]


def state(breaker: CircuitBreaker) -> BreakerState:
    return breaker.state  # read through a call, so mypy does not narrow between reads


def new_trace() -> DecisionTrace:
    return DecisionTrace("m1", "c1", datetime(2026, 1, 5, tzinfo=UTC))


async def test_a_successful_call_is_recorded() -> None:
    trace = new_trace()
    result = await call_llm(
        ScriptedLLM("hello"), trace, "reply", ASK, max_tokens=30, temperature=0.5
    )
    assert result is not None and result.text == "hello"
    (record,) = trace.llm_calls
    assert record.purpose == "reply"
    assert record.model == "scripted"
    assert record.outcome == "ok"
    assert record.prompt_tokens > 0 and record.completion_tokens == 1
    assert record.latency_ms >= 0
    assert record.prompt is None


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (LLMTimeout("too slow"), "timeout"),
        (LLMBadOutput("garbage"), "invalid"),
        (LLMUnavailable("down"), "unavailable"),
        (LLMInterrupted("stopped for a reply"), "interrupted"),
        (LLMError("odd"), "error"),
    ],
)
async def test_failures_return_none_and_are_recorded(error: LLMError, outcome: str) -> None:
    trace = new_trace()
    result = await call_llm(ScriptedLLM(error), trace, "judge", ASK, max_tokens=5, temperature=0)
    assert result is None
    (record,) = trace.llm_calls
    assert record.outcome == outcome
    assert record.detail == str(error)


async def test_keep_prompt_and_dump_see_the_messages() -> None:
    trace = new_trace()
    dumped: list[tuple[str, list[ChatMessage]]] = []
    await call_llm(
        ScriptedLLM("x"),
        trace,
        "reply",
        ASK,
        max_tokens=5,
        temperature=0,
        keep_prompt=True,
        dump=lambda purpose, msgs: dumped.append((purpose, msgs)),
    )
    assert dumped == [("reply", ASK)]
    prompt = trace.llm_calls[0].prompt
    assert prompt is not None and "system: be brief" in prompt and "user: hi there" in prompt


async def test_without_a_trace_nothing_is_recorded() -> None:
    assert await call_llm(ScriptedLLM("x"), None, "reply", ASK, max_tokens=5, temperature=0)


async def test_the_stub_counts_calls_by_purpose() -> None:
    stub = StubLLM()
    for purpose in ("judge", "judge", "reply"):
        await call_llm(stub, None, purpose, ASK, max_tokens=5, temperature=0)
    assert stub.by_purpose == {"judge": 2, "reply": 1}


async def test_breaker_opens_after_n_failures_and_half_opens_after_cooldown() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, failure_threshold=3, cooldown_s=30)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure()
    assert state(breaker) is BreakerState.CLOSED
    breaker.record_failure()
    assert state(breaker) is BreakerState.OPEN and not breaker.allow()
    await clock.advance(29.9)
    assert not breaker.allow()
    await clock.advance(0.2)
    assert state(breaker) is BreakerState.HALF_OPEN
    assert breaker.allow()
    assert not breaker.allow()  # one trial at a time
    breaker.record_success()
    assert state(breaker) is BreakerState.CLOSED and breaker.failures == 0


async def test_a_failed_trial_reopens_for_a_full_cooldown() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(clock, failure_threshold=1, cooldown_s=10)
    breaker.record_failure()
    await clock.advance(10)
    assert breaker.allow()
    breaker.record_failure()
    assert state(breaker) is BreakerState.OPEN
    await clock.advance(9)
    assert not breaker.allow()


async def test_open_circuit_skips_the_model_and_records_skipped() -> None:
    clock = VirtualClock()
    inner = ScriptedLLM(LLMTimeout("t1"), LLMUnavailable("u2"), default="back")
    llm = GuardedLLM(inner, CircuitBreaker(clock, failure_threshold=2, cooldown_s=60))
    trace = new_trace()
    for _ in range(4):
        assert await call_llm(llm, trace, "judge", ASK, max_tokens=5, temperature=0) is None
    assert inner.calls == 2
    assert [r.outcome for r in trace.llm_calls] == ["timeout", "unavailable", "skipped", "skipped"]
    assert trace.llm_calls[-1].detail == "circuit open"
    assert trace.llm_calls[-1].latency_ms == 0
    await clock.advance(60)
    result = await call_llm(llm, trace, "judge", ASK, max_tokens=5, temperature=0)
    assert result is not None and result.text == "back"
    assert state(llm.breaker) is BreakerState.CLOSED


async def test_bad_output_does_not_trip_the_breaker() -> None:
    inner = ScriptedLLM(*(LLMBadOutput("junk") for _ in range(5)))
    llm = GuardedLLM(inner, CircuitBreaker(VirtualClock(), failure_threshold=2))
    for _ in range(5):
        await call_llm(llm, None, "judge", ASK, max_tokens=5, temperature=0)
    assert inner.calls == 5
