"""Time, through one door.

Every part of kuuki that needs "now", a sleep or a timer asks a Clock, so a whole channel's
behaviour can be replayed on virtual time: `VirtualClock` moves only when told to, and
runs due timers in time order as it moves.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Source of the current time and of timers.

    `now()` is timezone-aware. `call_later` schedules a coroutine factory to run after
    `delay` seconds of this clock's time and returns a handle that cancels it.
    `sleep` waits for `delay` seconds of this clock's time.
    """

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, delay: float) -> None: ...

    def call_later(self, delay: float, fn: Callable[[], Awaitable[None]]) -> TimerHandle: ...


class _TaskHandle:
    def __init__(self, task: asyncio.Task[None]) -> None:
        self._task = task

    def cancel(self) -> None:
        self._task.cancel()


class RealClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay))

    def call_later(self, delay: float, fn: Callable[[], Awaitable[None]]) -> TimerHandle:
        async def run() -> None:
            await asyncio.sleep(max(0.0, delay))
            await fn()

        return _TaskHandle(asyncio.get_running_loop().create_task(run()))


class _VirtualTimer:
    __slots__ = ("cancelled", "due", "fn", "future")

    def __init__(
        self,
        due: datetime,
        fn: Callable[[], Awaitable[None]] | None,
        future: asyncio.Future[None] | None,
    ) -> None:
        self.due = due
        self.fn = fn
        self.future = future
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.future is not None and not self.future.done():
            self.future.cancel()


class VirtualClock:
    """A clock that only moves when `advance` or `advance_to` is awaited.

    Timers due within the step run in time order, each at its own due time, and the
    clock waits for what they start (through `settle`) before moving on.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
        self._heap: list[tuple[datetime, int, _VirtualTimer]] = []
        self._seq = itertools.count()
        self._settlers: list[Callable[[], Awaitable[None]]] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._now.timestamp()

    def add_settler(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Register a coroutine that waits until in-flight work triggered by a timer is done."""
        self._settlers.append(fn)

    def call_later(self, delay: float, fn: Callable[[], Awaitable[None]]) -> TimerHandle:
        timer = _VirtualTimer(self._now + timedelta(seconds=max(0.0, delay)), fn, None)
        heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
        return timer

    async def sleep(self, delay: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = _VirtualTimer(self._now + timedelta(seconds=max(0.0, delay)), None, fut)
        heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
        await fut

    def pending(self) -> int:
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    def next_due(self) -> datetime | None:
        for due, _, t in sorted(self._heap):
            if not t.cancelled:
                return due
        return None

    async def settle(self) -> None:
        # Let tasks woken by timers run, then wait for registered in-flight work.
        for _ in range(3):
            await asyncio.sleep(0)
        for fn in self._settlers:
            await fn()

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self._now + timedelta(seconds=seconds))

    async def advance_to(self, when: datetime) -> None:
        while self._heap and self._heap[0][0] <= when:
            due, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            if due > self._now:
                self._now = due
            if timer.future is not None:
                if not timer.future.done():
                    timer.future.set_result(None)
            elif timer.fn is not None:
                await timer.fn()
            await self.settle()
        if when > self._now:
            self._now = when
        await self.settle()
