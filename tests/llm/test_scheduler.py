"""Replies first: the model's queue admits calls by purpose, then by arrival."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from kuuki.errors import LLMUnavailable
from kuuki.llm.base import ChatMessage, Completion, current_purpose
from kuuki.llm.record import call_llm
from kuuki.llm.scheduler import ScheduledLLM


class SlowModel:
    """Answers each call only when the test releases it; records the order of calls."""

    name = "slow"

    def __init__(self) -> None:
        self.order: list[str] = []
        self.gates: list[asyncio.Event] = []

    async def complete(self, messages: Sequence[ChatMessage], **kw: Any) -> Completion:
        self.order.append(str(current_purpose.get()))
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()
        return Completion(text="done", model=self.name)


async def _spin(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_reply_overtakes_queued_memory_and_judge_calls() -> None:
    model = SlowModel()
    llm = ScheduledLLM(model)
    msgs = [ChatMessage("user", "x")]
    running = asyncio.ensure_future(call_llm(llm, None, "memory_summary", msgs, max_tokens=5,
                                             temperature=0))
    await _spin()
    queued = [
        asyncio.ensure_future(call_llm(llm, None, p, msgs, max_tokens=5, temperature=0))
        for p in ("memory_reflection", "judge", "reply")
    ]
    await _spin()
    assert model.order == ["memory_summary"] and llm.waiting == 3
    for _ in range(4):
        model.gates[-1].set()
        await _spin()
    await asyncio.gather(running, *queued)
    assert model.order == ["memory_summary", "reply", "judge", "memory_reflection"]
    assert llm.served == [1, 1, 2]


async def test_close_fails_waiting_calls_and_lets_the_running_one_finish() -> None:
    model = SlowModel()
    llm = ScheduledLLM(model)
    msgs = [ChatMessage("user", "x")]
    running = asyncio.ensure_future(llm.complete(msgs))
    await _spin()
    waiting = asyncio.ensure_future(llm.complete(msgs))
    await _spin()
    llm.close()
    with pytest.raises(LLMUnavailable, match="shutting down"):
        await waiting
    model.gates[0].set()
    assert (await running).text == "done"
    with pytest.raises(LLMUnavailable):
        await llm.complete(msgs)


async def test_memory_calls_are_visible_to_the_clock_as_background() -> None:
    model = SlowModel()
    llm = ScheduledLLM(model)
    token = current_purpose.set("memory_summary")
    try:
        task = asyncio.ensure_future(llm.complete([ChatMessage("user", "x")]))
    finally:
        current_purpose.reset(token)
    await _spin()
    assert llm.background_tasks() == frozenset({task})
    model.gates[0].set()
    await task
    assert llm.background_tasks() == frozenset()


class StoppableModel(SlowModel):
    """Like SlowModel, and a running call can be ended early (a local model)."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = 0

    def interrupt(self) -> None:
        self.interrupted += 1
        for gate in self.gates:
            gate.set()


async def test_close_ends_a_running_memory_call_early_but_never_a_reply() -> None:
    for purpose, stopped in (("memory_summary", 1), ("reply", 0)):
        model = StoppableModel()
        llm = ScheduledLLM(model)
        token = current_purpose.set(purpose)
        try:
            task = asyncio.ensure_future(llm.complete([ChatMessage("user", "x")]))
        finally:
            current_purpose.reset(token)
        await _spin()
        llm.close()
        assert model.interrupted == stopped
        for gate in model.gates:
            gate.set()
        await task


async def test_a_reply_interrupts_a_running_memory_call_but_not_a_judge_call() -> None:
    for running_purpose, stopped in (("memory_summary", 1), ("judge", 0)):
        model = StoppableModel()
        llm = ScheduledLLM(model)
        msgs = [ChatMessage("user", "x")]
        first = asyncio.ensure_future(
            call_llm(llm, None, running_purpose, msgs, max_tokens=5, temperature=0)
        )
        await _spin()
        reply = asyncio.ensure_future(call_llm(llm, None, "reply", msgs, max_tokens=5,
                                               temperature=0))
        await _spin()
        assert model.interrupted == stopped and llm.preempted == stopped
        for gate in model.gates:
            gate.set()
        await _spin()
        for gate in model.gates:
            gate.set()
        await asyncio.gather(first, reply)
        assert model.order == [running_purpose, "reply"]
