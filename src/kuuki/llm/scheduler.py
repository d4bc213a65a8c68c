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
the reply goes first. Judge calls are never interrupted. `close()` turns every call still
waiting into `LLMUnavailable`, so a shutdown or the end of a replay waits for the running
call only (and not for a memory call that can stop early). `background_tasks`
tells the virtual clock which jobs are inside a memory call (it does not wait for them:
a clock jump or a replay is not held up by memory work).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import LLMUnavailable
from .base import LLM, ChatMessage, Completion, Interruptible, Warmable, current_purpose

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
    return _PRIORITY.get(purpose or "", BACKGROUND)


class ScheduledLLM:
    """An `LLM` that admits at most ``concurrency`` calls at once, most urgent first."""

    def __init__(self, inner: LLM, *, concurrency: int = 1) -> None:
        self.inner = inner
        self.name = inner.name
        self.concurrency = max(1, concurrency)
        self._running = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._tasks: dict[asyncio.Task[Any], int] = {}
        self._running_calls: dict[int, int] = {}  # id of an admitted call → its priority
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
        priority = priority_of(current_purpose.get())
        task = asyncio.current_task()
        if task is not None:
            self._tasks[task] = priority
            self._signal()
        try:
            if priority == REPLY:
                self._preempt()
            await self._admit(priority)
            call = next(self._seq)
            self._running_calls[call] = priority
            try:
                return await self.inner.complete(
                    messages, json_schema=json_schema, max_tokens=max_tokens,
                    temperature=temperature,
                )
            finally:
                del self._running_calls[call]
                self._release()
        finally:
            if task is not None:
                self._tasks.pop(task, None)
                self._signal()

    async def _admit(self, priority: int) -> None:
        if self._closed:
            raise LLMUnavailable(f"{self.name}: shutting down")
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
            raise LLMUnavailable(f"{self.name}: shutting down")
        self.served[priority] += 1

    def _preempt(self) -> None:
        """A reply arrives while only memory work runs: stop that work at its next token."""
        running = set(self._running_calls.values())
        if running == {BACKGROUND} and isinstance(self.inner, Interruptible):
            self.inner.interrupt()
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
        running = set(self._tasks.values())
        if running == {BACKGROUND} and isinstance(self.inner, Interruptible):
            self.inner.interrupt()
        while self._waiting:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                self._running += 1
                fut.set_result(None)  # woken into the closed check, which releases
