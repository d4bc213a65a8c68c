"""Insert throughput of the store (a script, not collected by pytest).

    PYTHONPATH=src python tests/bench/bench_store_inserts.py [URL] [N]

Without a URL it uses a fresh SQLite file in a temp dir. Prints messages/s for N messages
through ``store.writer`` (alone, and with an event mark and a decision per message, as the
engine writes them) and for one-transaction-per-message ``add_message``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

from kuuki.domain import Action, Decision, DecisionTrace, Message, Stage, User
from kuuki.store import Store


def messages(prefix: str, n: int) -> list[Message]:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    users = [User(f"u{i}", f"user {i}") for i in range(20)]
    return [
        Message(
            f"{prefix}{i}",
            f"c{i % 5}",
            users[i % 20],
            f"message number {i} " * 4,
            t0 + timedelta(seconds=i),
            mentions=("u1",) if i % 7 == 0 else (),
        )
        for i in range(n)
    ]


def decision(m: Message) -> Decision:
    trace = DecisionTrace(m.id, m.channel_id, m.ts)
    trace.step("scored")
    trace.add("mention", 1.5, "x")
    trace.features["len"] = len(m.text)
    action = Action.none(m.channel_id, m.id)
    return Decision(m.id, m.channel_id, action, Stage.LOCAL, trace.score, "quiet", m.ts, trace)


async def main(url: str, n: int) -> None:
    store = await Store.open(url)
    try:
        w = store.writer
        t = time.perf_counter()
        for m in messages("full", n):
            await w.mark_event(f"ev-{m.id}", m.ts)
            await w.add_message(m)
            await w.add_decision(decision(m))
        await w.flush()
        dt = time.perf_counter() - t
        print(f"{store.dialect}: writer, message+event+decision: {n / dt:,.0f} msg/s ({dt:.2f}s)")
        t = time.perf_counter()
        for m in messages("only", n):
            await w.add_message(m)
        await w.flush()
        dt = time.perf_counter() - t
        print(f"{store.dialect}: writer, messages only:          {n / dt:,.0f} msg/s ({dt:.2f}s)")
        t = time.perf_counter()
        for m in messages("direct", 1000):
            await store.messages.add_message(m)
        dt = time.perf_counter() - t
        print(f"{store.dialect}: add_message, 1 tx each (1000):  {1000 / dt:,.0f} msg/s")
    finally:
        await store.close()


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    asyncio.run(main(url, int(sys.argv[2]) if len(sys.argv) > 2 else 10_000))
