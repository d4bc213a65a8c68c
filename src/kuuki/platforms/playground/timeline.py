"""The playground's time: a VirtualClock that follows real time and can jump ahead.

A background task advances the clock every `tick_s` by the real time elapsed, multiplied
by `rate` (1 normally; a transcript played at 10× sets 10). `jump` moves it ahead at
once. Both go through one lock, so timers (debounce, re-judging, reflection) run in time
order whichever way the clock moves. Decisions made while the driver moves the clock are
timer-driven; `timer_driven()` tells a decision listener so.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from kuuki.clock import VirtualClock
from kuuki.explain.lines import Due

_IN_TIMER: contextvars.ContextVar[bool] = contextvars.ContextVar("kuuki_pg_timer", default=False)

Listener = Callable[[], Awaitable[None]]


def timer_driven() -> bool:
    """True inside work that a clock advance started (a timer's callback)."""
    return _IN_TIMER.get()


class ClockDriver:
    """Moves a VirtualClock with real time, faster on request, or in jumps."""

    def __init__(self, clock: VirtualClock, *, tick_s: float = 0.5) -> None:
        self.clock = clock
        self.tick_s = tick_s
        self.rate = 1.0
        self._lock = asyncio.Lock()
        self._moved = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[Listener] = []

    def on_move(self, listener: Listener) -> None:
        """Called (awaited) after every move of the clock."""
        self._listeners.append(listener)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._follow(), name="kuuki-playground-clock"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(self.tick_s)
            now = loop.time()
            elapsed, last = now - last, now
            await self.advance(elapsed * self.rate)

    async def advance(self, seconds: float) -> None:
        if seconds > 0:
            await self.advance_to(self.clock.now() + timedelta(seconds=seconds))

    async def advance_to(self, when: datetime) -> None:
        async with self._lock:
            token = _IN_TIMER.set(True)
            try:
                await self.clock.advance_to(when)
            finally:
                _IN_TIMER.reset(token)
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()
        for listener in self._listeners:
            await listener()

    async def wait_until(self, when: datetime) -> None:
        """Return once the clock reaches `when`, stepping exactly onto it at the end.

        Waits for the driver's ticks while the gap is larger than about one tick, then
        advances to `when` itself, so an event meant for `when` happens at `when`.
        """
        while (gap := (when - self.clock.now()).total_seconds()) > 0:
            if gap <= self.tick_s * max(self.rate, 1.0) or self._task is None:
                await self.advance_to(when)
                return
            await self._moved.wait()

    def status(self) -> dict[str, object]:
        due = self.clock.next_due()
        return {
            "now": self.clock.now().isoformat(),
            "rate": self.rate,
            "pending_timers": self.clock.pending(),
            "next_due": due.isoformat() if due else None,
        }


def pending_of(engine: Any, channel_ids: Iterable[str]) -> list[dict[str, str]]:
    """What the engine will still do about messages: each one waiting for its burst to
    settle ("settling") and each open question it will look at again ("recheck"), with when
    (the page counts down to it; an unaddressed message gets its decision only then)."""
    out: list[dict[str, str]] = []
    for channel_id in channel_ids:
        state = engine.state(channel_id)
        if state is None:
            continue
        waits = [(p.message.id, p.handle, "settling") for p in state.pending.values()]
        waits += [(mid, handle, "recheck") for mid, handle in state.rechecks.items()]
        for message_id, handle, kind in waits:
            if isinstance(handle, Due) and not getattr(handle, "cancelled", False):
                out.append({"message_id": message_id, "channel": channel_id, "kind": kind,
                            "due": handle.due.isoformat()})
    return sorted(out, key=lambda p: (p["due"], p["message_id"]))
