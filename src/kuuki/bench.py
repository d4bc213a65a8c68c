"""`kuuki bench …`: measured figures for docs/benchmarks.md (never timed assertions in tests)."""

from __future__ import annotations

import random
import resource
import tempfile
import time
from datetime import timedelta
from typing import Any

from .clock import VirtualClock
from .domain import Channel, ChatEvent, EventKind, Message, User
from .platforms.replay import RecordingOutbox
from .settings import Settings

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
    rng = random.Random(seed)
    clock = VirtualClock()
    chans = [Channel(f"c{i}", f"channel-{i}") for i in range(channels)]
    users = [User(f"u{i}", f"user{i}") for i in range(max(4, channels * 3))]
    events: list[ChatEvent] = []
    t = clock.now()
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
        events.append(ChatEvent(EventKind.POSTED, ch, m.id, t, message=m))
    return events


async def ingest(messages: int, channels: int, store_url: str | None = None) -> dict[str, Any]:
    """Steps 1-7 for `messages` messages over `channels` channels, LLM off, on SQLite."""
    from .app import build_app

    events = synthetic_events(messages, channels)
    with tempfile.TemporaryDirectory(prefix="kuuki-bench-") as tmp:
        url = store_url or f"sqlite:///{tmp}/bench.sqlite3"
        clock = VirtualClock(events[0].at)
        outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
        app = await build_app(
            Settings(), clock=clock, outbox=outbox, llm=None, judge_llm=None, store_url=url
        )
        # Load the embedder before the clock starts: it is a one-off start-up cost.
        app.engine.tracker_factory and app.engine.tracker_factory(Channel("warm", "warm"))
        decisions = 0

        def count(_: Any) -> None:
            nonlocal decisions
            decisions += 1

        app.engine.on_decision(count)
        started = time.perf_counter()
        for ev in events:
            await app.engine.handle(ev)
        await app.engine.idle()
        await app.writer.flush()
        elapsed = time.perf_counter() - started
        peak = peak_rss_mb()  # the message path's high-water mark, before shutdown work
        await app.close()
    return {
        "benchmark": "ingest",
        "messages": messages,
        "channels": channels,
        "decisions": decisions,
        "seconds": round(elapsed, 3),
        "messages_per_s": round(messages / elapsed, 1),
        "peak_rss_mb": round(peak, 1),
    }
