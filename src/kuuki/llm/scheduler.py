"""Replies first: one queue in front of a model, ordered by what each call is for.

A model serves the whole process: replies, the judge, summaries, reflection. On a small
local model calls run one at a time, so the order matters more than anything else for
how quick the bot feels. `ScheduledLLM` wraps a back-end (it is itself an `LLM`) and
lets waiting calls in by priority, then by arrival:

    0  reply, ack (and their guarded retries)   someone is waiting for the bot
    1  proactive talk, the judge's questions     the bot deciding whether to speak
    2  everything else: memory                   summaries, profiles, reflection

A reply waits at most for the one call already running, and not even that when the
running call is memory work on a model that can stop early (a local model: `Interruptible`):
the summary is interrupted (its job fails, keeps its messages and tries again later) and
the reply goes first; an interrupted call is not a failure of the model (the breaker does
not count it). Judge calls are never interrupted. `close()` turns every call still
waiting into `LLMUnavailable`, so a shutdown or the end of a replay waits for the running
call only (and not for a memory call that can stop early). `background_tasks`
tells the virtual clock which jobs are inside a memory call (it does not wait for them:
a clock jump or a replay is not held up by memory work).

This is also every caller's one door to the model, so two more things live here:

- a circuit breaker (`kuuki.llm.breaker`) for all purposes at once: after failures, or a
  429 asking to wait, calls fail at once (`CircuitOpen`) instead of each paying a timeout;
- the caller's deadline (`current_deadline`, on the clock): a call still waiting or
  running when it passes ends as `LLMTimeout`. A call cut off while running counts as a
  failure for the breaker (the model is too slow); one cut off in the queue does not.

A back-end that raises anything but an `LLMError` breaks the port's contract; it is
turned into one here, counted as a failure, so no caller ever sees a bare exception.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from kuuki.clock import Clock
from kuuki.errors import LLMBadOutput, LLMError, LLMInterrupted, LLMTimeout, LLMUnavailable
from kuuki.llm.base import (
    LLM,
    ChatMessage,
    Completion,
    Interruptible,
    ToolCalling,
    ToolSpec,
    Warmable,
    current_deadline,
    current_purpose,
)
from kuuki.llm.breaker import CircuitBreaker, CircuitOpen
from kuuki.text.secrets import redact

REPLY, DECIDE, BACKGROUND = 0, 1, 2
_PRIORITY = {
    "reply": REPLY,
    "ack": REPLY,
    "reply-retry": REPLY,
    "ack-retry": REPLY,
    "proactive": DECIDE,
    "proactive-retry": DECIDE,
    "judge": DECIDE,
    "state": DECIDE,
    "same_conversation": DECIDE,
    "situation_changed": DECIDE,
}


def priority_of(purpose: str | None) -> int:
    # "reply-round2" (the answer after a tool round) is as urgent as "reply".
    purpose = purpose or ""
    return _PRIORITY.get(purpose, _PRIORITY.get(purpose.split("-")[0], BACKGROUND))


class _Call:
    __slots__ = ("expired", "interrupted", "running")

    def __init__(self) -> None:
        self.running = False
        self.expired = False
        self.interrupted = False  # stopped early for a reply or a shutdown


class ScheduledLLM:
    """An `LLM` that admits at most ``concurrency`` calls at once, most urgent first.

    ``clock`` enforces callers' deadlines (without one they are ignored); ``breaker``
    guards the model for every purpose (see the module docstring).
    """

    def __init__(
        self,
        inner: LLM,
        *,
        concurrency: int = 1,
        clock: Clock | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.clock = clock
        self.breaker = breaker
        self.concurrency = max(1, concurrency)
        self._running = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._tasks: dict[asyncio.Task[Any], int] = {}
        self._running_calls: dict[_Call, int] = {}  # admitted calls → their priority
        self.preempted = 0  # memory calls interrupted for a reply
        self._closed = False
        self.changed = asyncio.Event()
        self.served = [0, 0, 0]  # calls admitted per priority, for benchmarks and tests

    async def warm(self) -> None:
        if isinstance(self.inner, Warmable):
            await self.inner.warm()

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, f in self._waiting if not f.done())

    def background_tasks(self) -> frozenset[asyncio.Task[Any]]:
        """Tasks inside a background (memory) call of this model, queued or running."""
        return frozenset(t for t, p in self._tasks.items() if p == BACKGROUND)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        inner = self.inner
        return await self._through_door(lambda: inner.complete(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature,
        ))

    def tool_support(self) -> str | None:
        inner = self.inner
        if isinstance(inner, ToolCalling):
            return inner.tool_support()
        return f"the {self.name} back-end cannot call tools"

    async def complete_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        """A tool round goes through the same door as any call: queue, breaker, deadline."""
        inner = self.inner
        if not isinstance(inner, ToolCalling):
            raise LLMError(f"the {self.name} back-end cannot call tools")
        return await self._through_door(lambda: inner.complete_tools(
            messages, tools, max_tokens=max_tokens, temperature=temperature,
        ))

    async def _through_door(self, send: Callable[[], Awaitable[Completion]]) -> Completion:
        priority = priority_of(current_purpose.get())
        breaker = self.breaker
        if breaker is not None and not breaker.allow():
            raise CircuitOpen(f"{self.name}: paused after failures")
        task = asyncio.current_task()
        if task is not None:
            self._tasks[task] = priority
            self._signal()
        call = _Call()
        if priority == REPLY:
            self._preempt()
        try:
            return await self._bounded(self._run(call, priority, send), call, task)
        finally:
            if call.running is False and breaker is not None:
                breaker.record_aborted()  # never reached the model: frees a trial slot
            if task is not None:
                self._tasks.pop(task, None)
                self._signal()

    async def _run(
        self, call: _Call, priority: int, send: Callable[[], Awaitable[Completion]]
    ) -> Completion:
        await self._admit(priority)
        call.running = True
        self._running_calls[call] = priority
        breaker = self.breaker
        try:
            result = await send()
        except LLMBadOutput:
            if breaker is not None:  # the service is up; the model wrote nonsense
                breaker.record_success()
            raise
        except LLMUnavailable as exc:
            if breaker is not None:
                if call.interrupted:
                    breaker.record_aborted()  # stopped on purpose, not a failing model
                else:
                    breaker.record_failure(retry_after=exc.retry_after)
            raise
        except LLMError:
            if breaker is not None:
                breaker.record_failure()
            raise
        except asyncio.CancelledError:
            if breaker is not None:
                if call.expired:
                    breaker.record_failure()  # still running at the deadline: too slow
                else:
                    breaker.record_aborted()
            raise
        except Exception as exc:
            if breaker is not None:
                breaker.record_failure()
            raise LLMError(
                f"{self.name} failed: {type(exc).__name__}: {redact(str(exc))}"
            ) from exc
        finally:
            del self._running_calls[call]
            self._release()
        if breaker is not None:
            breaker.record_success()
        return result

    async def _bounded(
        self, work: Awaitable[Completion], call: _Call, task: asyncio.Task[Any] | None
    ) -> Completion:
        """``work`` within the caller's deadline, measured on the clock."""
        deadline = current_deadline.get()
        clock = self.clock
        if deadline is None or clock is None or task is None:
            return await work
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            if isinstance(work, Coroutine):
                work.close()
            raise LLMTimeout(f"{self.name}: the call's time budget was already spent")

        async def expire() -> None:
            call.expired = True
            task.cancel()

        handle = clock.call_later(remaining, expire)
        try:
            return await work
        except asyncio.CancelledError:
            if call.expired and task.uncancel() == 0:  # our deadline, nobody else's cancel
                where = "while it ran" if call.running else "waiting for the model"
                raise LLMTimeout(
                    f"{self.name}: the call's time budget ({remaining:.3g}s) ran out {where}"
                ) from None
            raise
        finally:
            handle.cancel()

    async def _admit(self, priority: int) -> None:
        if self._closed:
            raise LLMInterrupted(f"{self.name}: shutting down")
        if self._running < self.concurrency and not self.waiting:
            self._running += 1
            self.served[priority] += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._release()  # admitted and cancelled in the same moment
            raise
        if self._closed:
            self._release()
            raise LLMInterrupted(f"{self.name}: shutting down")
        self.served[priority] += 1

    def _interrupt_background(self) -> bool:
        """Stop the running call at its next token when it is memory work only, on a model
        that can stop early; True when it was asked to."""
        running = self._running_calls
        if not running or set(running.values()) != {BACKGROUND}:
            return False
        if not isinstance(self.inner, Interruptible):
            return False
        for call in running:
            call.interrupted = True
        self.inner.interrupt()
        return True

    def _preempt(self) -> None:
        """A reply arrives while only memory work runs: stop that work at its next token."""
        if self._interrupt_background():
            self.preempted += 1

    def _release(self) -> None:
        self._running -= 1
        while self._waiting and self._running < self.concurrency:
            _, _, fut = heapq.heappop(self._waiting)
            if fut.done():
                continue
            self._running += 1
            fut.set_result(None)

    def _signal(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def close(self) -> None:
        """Refuse new calls and let every waiting one fail now; the running ones finish,
        except a memory call on a model that can stop early: nobody waits for it."""
        self._closed = True
        self._interrupt_background()
        while self._waiting:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                self._running += 1
                fut.set_result(None)  # woken into the closed check, which releases
