"""Replies first: the model's queue admits calls by purpose, then by arrival."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
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
        self._called = asyncio.Event()

    async def complete(self, messages: Sequence[ChatMessage], **kw: Any) -> Completion:
        self.order.append(str(current_purpose.get()))
        gate = asyncio.Event()
        self.gates.append(gate)
        self._called.set()
        await gate.wait()
        return Completion(text="done", model=self.name)

    async def called(self, n: int) -> None:
        """Until the model has been called ``n`` times in all."""
        async with asyncio.timeout(10):
            while len(self.order) < n:
                self._called.clear()
                await self._called.wait()


async def until(holds: Callable[[], bool], what: str) -> None:
    """Until the scheduler's state satisfies ``holds`` (its queue has no event of its own):
    nothing here does I/O, so it holds within a few turns of the event loop or not at all;
    after 100 turns the test fails, saying ``what`` never happened."""
    for _ in range(100):
        if holds():
            return
        await asyncio.sleep(0)  # one turn of the loop, not a wait for time
    raise AssertionError(f"never happened: {what}")


async def test_a_reply_overtakes_queued_memory_and_judge_calls() -> None:
    model = SlowModel()
    llm = ScheduledLLM(model)
    msgs = [ChatMessage("user", "x")]
    running = asyncio.ensure_future(call_llm(llm, None, "memory_summary", msgs, max_tokens=5,
                                             temperature=0))
    await model.called(1)
    queued = [
        asyncio.ensure_future(call_llm(llm, None, p, msgs, max_tokens=5, temperature=0))
        for p in ("memory_reflection", "judge", "reply")
    ]
    await until(lambda: llm.waiting == 3, "three calls queued")
    assert model.order == ["memory_summary"]
    for n in (2, 3, 4):
        model.gates[-1].set()  # the running call ends; the first in line is let in
        await model.called(n)
    model.gates[-1].set()
    await asyncio.gather(running, *queued)
    assert model.order == ["memory_summary", "reply", "judge", "memory_reflection"]
    assert llm.served == [1, 1, 2]


async def test_close_fails_waiting_calls_and_lets_the_running_one_finish() -> None:
    model = SlowModel()
    llm = ScheduledLLM(model)
    msgs = [ChatMessage("user", "x")]
    running = asyncio.ensure_future(llm.complete(msgs))
    await model.called(1)
    waiting = asyncio.ensure_future(llm.complete(msgs))
    await until(lambda: llm.waiting == 1, "the second call queued")
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
    await model.called(1)
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
        await model.called(1)
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
        await model.called(1)
        reply = asyncio.ensure_future(call_llm(llm, None, "reply", msgs, max_tokens=5,
                                               temperature=0))
        # the reply is at the door: queued behind the running call (or ending it first)
        await until(lambda m=llm: m.waiting == 1 or m.preempted > 0, "the reply queued")
        assert model.interrupted == stopped and llm.preempted == stopped
        model.gates[0].set()
        await model.called(2)  # the reply reached the model once the first call ended
        model.gates[1].set()
        await asyncio.gather(first, reply)
        assert model.order == [running_purpose, "reply"]
