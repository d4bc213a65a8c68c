"""`kuuki bench …`: measured figures for docs/benchmarks.md (never timed assertions in tests)."""

from __future__ import annotations

import contextlib
import random
import resource
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Iterator
from datetime import datetime, timedelta
from typing import Any

from kuuki.clock import VirtualClock
from kuuki.domain import Channel, ChatEvent, EventKind, Message, User
from kuuki.replay.runner import RecordingOutbox
from kuuki.settings import Settings

_WORDS_EN = [
    "deploy",
    "build",
    "error",
    "config",
    "server",
    "docker",
    "python",
    "test",
    "release",
    "branch",
    "merge",
    "review",
    "lunch",
    "coffee",
    "weekend",
    "game",
    "music",
    "movie",
    "cat",
    "dog",
    "rain",
    "train",
    "meeting",
    "bug",
    "fix",
    "idea",
]
_WORDS_JA = [
    "デプロイ",
    "ビルド",
    "エラー",
    "設定",
    "サーバー",
    "テスト",
    "昼ごはん",
    "コーヒー",
    "週末",
    "ゲーム",
    "音楽",
    "猫",
    "雨",
    "会議",
    "バグ",
]


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic_events(n: int, channels: int, seed: int = 7) -> list[ChatEvent]:
    return list(synthetic_stream(n, channels, seed=seed))


def synthetic_stream(
    n: int, channels: int, start: datetime | None = None, seed: int = 7
) -> Iterator[ChatEvent]:
    """The synthetic chat, made one message at a time (the soak never holds it all)."""
    rng = random.Random(seed)
    chans = [Channel(f"c{i}", f"channel-{i}") for i in range(channels)]
    users = [User(f"u{i}", f"user{i}") for i in range(max(4, channels * 3))]
    t = start or VirtualClock().now()
    for i in range(n):
        ch = chans[i % channels]
        user = users[(i * 7 + rng.randrange(3)) % len(users)]
        words = _WORDS_JA if rng.random() < 0.3 else _WORDS_EN
        text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 12)))
        if rng.random() < 0.1:
            text += "?"
        if rng.random() < 0.01:
            text = "Kuu, " + text  # a few name calls: the reply path without an LLM
        t += timedelta(seconds=rng.random() * 0.5)
        m = Message(f"m{i}", ch.id, user, text, t)
        yield ChatEvent(EventKind.POSTED, ch, m.id, t, message=m)


async def ingest(
    messages: int, channels: int, store_url: str | None = None, *, window: int = 256,
    metrics: bool = False,
) -> dict[str, Any]:
    """Steps 0-7 for `messages` messages over `channels` channels, LLM off, on SQLite,
    each message durable (acknowledged) before the platform would be told it arrived;
    ``window`` unacknowledged messages at most (1: one at a time, no group commit).
    ``metrics``: as `kuuki run --dashboard`, the Prometheus metrics counted and the
    operator server listening (what they cost the message path)."""
    from kuuki.app import build_app
    from kuuki.app.heap import settle
    from kuuki.ops.server import app_metrics, serving

    events = synthetic_events(messages, channels)
    with tempfile.TemporaryDirectory(prefix="kuuki-bench-") as tmp:
        url = store_url or f"sqlite:///{tmp}/bench.sqlite3"
        clock = VirtualClock(events[0].at)
        outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
        app = await build_app(
            Settings(), clock=clock, outbox=outbox, llm=None, judge_llm=None, store=url
        )
        # Load the embedder before the clock starts: it is a one-off start-up cost.
        app.engine.tracker_factory and app.engine.tracker_factory(Channel("warm", "warm"))
        settle()  # as `kuuki run` does once started (kuuki.app.heap)
        decisions = 0

        def count(_: Any) -> None:
            nonlocal decisions
            decisions += 1

        app.engine.on_decision(count)
        async with contextlib.AsyncExitStack() as stack:
            counted = app_metrics(app) if metrics else None
            if counted is not None:
                await stack.enter_async_context(serving(app.settings, counted, port=0))
            started = time.perf_counter()
            acks = await feed(app.engine, events, window=window)
            await app.engine.idle()
            await app.writer.flush()
            elapsed = time.perf_counter() - started
        peak = peak_rss_mb()  # the message path's high-water mark, before shutdown work
        commits = app.engine.intake.commits
        await app.close()
    return {
        "benchmark": "ingest",
        "messages": messages,
        "channels": channels,
        "window": window,
        "metrics": metrics,
        # what /metrics counted, when on (it must be every decision)
        "metrics_decisions": counted_decisions(counted) if counted is not None else None,
        "decisions": decisions,
        "seconds": round(elapsed, 3),
        "messages_per_s": round(messages / elapsed, 1),
        "peak_rss_mb": round(peak, 1),
        "intake_commits": commits,
        "ack_ms_p50": round(percentile(acks, 50) * 1000, 2),
        "ack_ms_p99": round(percentile(acks, 99) * 1000, 2),
    }


async def feed(engine: Any, events: list[ChatEvent], *, window: int) -> list[float]:
    """Hand ``events`` to the engine as a platform does: in order, with up to ``window``
    not yet acknowledged at once (Slack's concurrent envelopes, discord.py's handler
    tasks). Returns each event's time from hand-over to "durable" (the acknowledgement)."""
    waiting: deque[tuple[float, Awaitable[bool]]] = deque()
    acks: list[float] = []

    async def settle_one() -> None:
        at, result = waiting.popleft()
        await result
        acks.append(time.perf_counter() - at)

    for ev in events:
        waiting.append((time.perf_counter(), engine.submit(ev)))
        if len(waiting) >= window:
            await settle_one()
    while waiting:
        await settle_one()
    return acks


def counted_decisions(metrics: Any) -> int:
    """The decisions the metrics counted, summed over their labels."""
    from prometheus_client.parser import text_string_to_metric_families

    text = metrics.exposition()[0].decode()
    return int(sum(s.value for f in text_string_to_metric_families(text)
                   if f.name == "kuuki_decisions" for s in f.samples
                   if s.name == "kuuki_decisions_total"))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]
