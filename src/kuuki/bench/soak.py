"""`kuuki bench soak`: does memory stay bounded over a long stream in many channels?

The ingest benchmark's message path (steps 0-7, LLM off, a temporary SQLite store, durable
acknowledgements in a window of 256) fed with ``messages`` messages spread round-robin
over ``channels`` channels, on a virtual clock that follows the messages' own times, so
the engine's timers (debounce, the memory layer's maintenance, which evicts idle
channels) run as they would live. The messages are made as they are fed, never held in
a list: only the bot's own memory shows in the figures.

The process's resident set (VmRSS) is sampled every ``sample_every`` messages. Once the
stream ends the clock moves past the idle-eviction time (plus two maintenance rounds),
and RSS is read again after a garbage collection and, where glibc is the allocator,
``malloc_trim(0)``: freed Python objects otherwise stay in glibc's arenas and the RSS
would not show what was released. The report says whether trim ran.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import tempfile
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from kuuki.bench.ingest import peak_rss_mb, synthetic_stream
from kuuki.clock import VirtualClock
from kuuki.domain import Channel, User
from kuuki.replay.runner import RecordingOutbox
from kuuki.settings import Settings

if TYPE_CHECKING:
    from kuuki.engine.core import Engine

WINDOW = 256
ADVANCE_EVERY = 500  # messages between moves of the virtual clock


def rss_mb() -> float:
    """The resident set now (not the peak), from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def malloc_trim() -> bool:
    """Give freed heap back to the system (glibc only); True if it could be called."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


async def soak(
    messages: int, channels: int, *, sample_every: int = 10_000, store_url: str | None = None
) -> dict[str, Any]:
    from kuuki.app import build_app

    settings = Settings()
    clock = VirtualClock()
    with tempfile.TemporaryDirectory(prefix="kuuki-soak-") as tmp:
        url = store_url or f"sqlite:///{tmp}/soak.sqlite3"
        outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True), keep=False)
        app = await build_app(
            settings, clock=clock, outbox=outbox, llm=None, judge_llm=None, store=url
        )
        engine = app.engine
        engine.tracker_factory and engine.tracker_factory(Channel("warm", "warm"))
        gc.collect()
        start_rss = rss_mb()
        started = time.perf_counter()
        samples = await _stream(engine, clock, messages, channels, sample_every, started)
        await engine.idle()
        await app.writer.flush()
        elapsed = time.perf_counter() - started
        end_rss = rss_mb()
        live_at_end = len(engine.channels)
        after_gc, trimmed, after_idle, live_after, evicted = await _idle(engine, clock, settings)
        peak = peak_rss_mb()
        await app.close()
    half = [s["rss_mb"] for s in samples[len(samples) // 2:]] or [end_rss]
    return {
        "benchmark": "soak",
        "messages": messages,
        "channels": channels,
        "seconds": round(elapsed, 1),
        "messages_per_s": round(messages / elapsed, 1),
        "rss_start_mb": round(start_rss, 1),
        "rss_second_half_mb": [min(half), max(half)],
        "rss_end_of_traffic_mb": round(end_rss, 1),
        "rss_peak_mb": round(peak, 1),
        "rss_after_idle_gc_mb": round(after_gc, 1),
        "rss_after_idle_mb": round(after_idle, 1),
        "malloc_trim": trimmed,
        "live_channels_end_of_traffic": live_at_end,
        "live_channels_after_idle": live_after,
        "channels_evicted": evicted,
        "max_live_channels": settings.max_live_channels,
        "channel_idle_minutes": settings.channel_idle_minutes,
        "samples": samples,
    }


async def _stream(
    engine: Engine, clock: VirtualClock, messages: int, channels: int, sample_every: int,
    started: float,
) -> list[dict[str, float]]:
    """Send the synthetic stream, at most WINDOW messages in flight, reading the resident
    set every ``sample_every`` messages; the readings."""
    samples: list[dict[str, float]] = []
    waiting: deque[Awaitable[bool]] = deque()
    for i, ev in enumerate(synthetic_stream(messages, channels, clock.now(), seed=11), 1):
        waiting.append(engine.submit(ev))
        if len(waiting) >= WINDOW:
            await waiting.popleft()
        if i % ADVANCE_EVERY == 0:
            await clock.advance_to(ev.at)
        if i % sample_every == 0:
            samples.append({"messages": i, "rss_mb": round(rss_mb(), 1),
                            "live_channels": len(engine.channels),
                            "seconds": round(time.perf_counter() - started, 1)})
    while waiting:
        await waiting.popleft()
    return samples


async def _idle(
    engine: Engine, clock: VirtualClock, settings: Settings
) -> tuple[float, bool, float, int, int]:
    """Traffic stops: past the idle time, with the maintenance that evicts. The resident
    set after a collection, what malloc_trim said, the resident set then, the channels
    still live and those evicted."""
    await clock.advance(settings.channel_idle_minutes * 60 + 2 * 600)
    await engine.idle()
    gc.collect()
    after_gc = rss_mb()
    trimmed = malloc_trim()
    after_idle = rss_mb()
    return after_gc, trimmed, after_idle, len(engine.channels), engine.channels.evicted
