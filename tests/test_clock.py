from __future__ import annotations

import asyncio

from kuuki.clock import VirtualClock


async def test_virtual_timers_run_in_time_order_at_their_time() -> None:
    clock = VirtualClock()
    start = clock.now()
    seen: list[tuple[str, float]] = []

    def at(name: str):  # type: ignore[no-untyped-def]
        async def fn() -> None:
            seen.append((name, (clock.now() - start).total_seconds()))

        return fn

    clock.call_later(30, at("b"))
    clock.call_later(10, at("a"))
    cancelled = clock.call_later(20, at("never"))
    cancelled.cancel()
    await clock.advance(25)
    assert seen == [("a", 10.0)]
    assert (clock.now() - start).total_seconds() == 25
    await clock.advance(60)
    assert seen == [("a", 10.0), ("b", 30.0)]
    assert clock.pending() == 0


async def test_virtual_sleep_wakes_when_time_passes() -> None:
    clock = VirtualClock()
    woke: list[float] = []

    async def sleeper() -> None:
        await clock.sleep(5)
        woke.append(clock.now().timestamp())

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0)
    await clock.advance(4)
    assert woke == []
    await clock.advance(1)
    await task
    assert len(woke) == 1
