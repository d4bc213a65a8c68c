"""`kuuki bench broker`: the scale-out broker candidates measured on this machine.

Each engine carries chat-event-like messages (~1 KB JSON, 200 channel ids, a per-channel
sequence number) over 8 partitions, as kuuki's gateways would hand events to the worker that
owns their channel. Measured: (a) publish throughput with broker confirms, persistent
messages; (b) draining a backlog with 1 and 2 consumer processes, manual acks, checking each
channel's order; (c) failover: the active consumer is killed with SIGKILL mid-stream and the
standby takes over; the time until it receives, and the messages lost, handled twice, or out
of order are counted.

RabbitMQ: a consistent-hash exchange over quorum queues with single-active-consumer (SAC);
the broker itself picks the standby and redelivers the dead consumer's unacked messages.
NATS JetStream 2.9: the server's deterministic partition mapping (`.ci/nats.sh`) and one
durable pull consumer per partition; JetStream 2.9 has no consumer ownership, so the standby
waits on a lease key in a KV bucket with a TTL (what kuuki would have to build itself).

Consumers run in their own processes (`python -m kuuki.bench.broker consume SPEC`) so
that a kill is a real kill and two consumers use two cores. Every consumer writes one line per
handled message ("channel seq redelivered time") and flushes before it acks, as a worker
commits to the store before acking; the parent counts from those files.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kuuki.bench.broker_wire import (
    DEFAULT_AMQP,
    DEFAULT_NATS,
    PARTITIONS,
    BrokerEngine,
)


@dataclass
class Row:
    engine: str
    case: str
    rate: float | None = None  # messages per second
    handled: int = 0
    lost: int = 0
    twice: int = 0
    disorder: int = 0
    takeover_s: float | None = None
    note: str = ""


def plan(messages: int, channels: int) -> list[tuple[str, int]]:
    """Messages round-robin over the channels, each channel numbered from 0."""
    return [(f"c{i % channels:03d}", i // channels) for i in range(messages)]


# --- counting -------------------------------------------------------------------------------


@dataclass
class Handled:
    channel: str
    seq: int
    redelivered: bool
    at: float


def read_ledger(path: Path) -> list[Handled]:
    """A consumer's lines; a last line cut short by SIGKILL is not a handled message."""
    out: list[Handled] = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.append(Handled(parts[0], int(parts[1]), parts[2] == "1", float(parts[3])))
    return out


def tally(expected: list[tuple[str, int]], handled: list[Handled]) -> tuple[int, int, int]:
    """(lost, handled twice, out of order) over every consumer's ledger, in time order.

    Out of order: a channel's message handled for the first time after a later one of the
    same channel had been. A repeat is counted as handled twice only: the worker drops it by
    its event id, so it cannot disorder what the worker did.
    """
    seen: dict[tuple[str, int], int] = {}
    latest: dict[str, int] = {}
    disorder = 0
    for h in sorted(handled, key=lambda h: h.at):
        seen[(h.channel, h.seq)] = seen.get((h.channel, h.seq), 0) + 1
        if seen[(h.channel, h.seq)] == 1 and h.seq < latest.get(h.channel, -1):
            disorder += 1
        latest[h.channel] = max(h.seq, latest.get(h.channel, -1))
    lost = sum(1 for key in expected if key not in seen)
    twice = sum(n - 1 for n in seen.values() if n > 1)
    return lost, twice, disorder


# --- consumer processes ---------------------------------------------------------------------


class Consumer:
    """A consumer process and its ledger file."""

    def __init__(self, proc: asyncio.subprocess.Process, ledger: Path) -> None:
        self.proc = proc
        self.ledger = ledger

    @classmethod
    async def start(cls, spec: dict[str, Any], ledger: Path) -> Consumer:
        """The process, connected to its broker but not consuming yet (see `go`)."""
        spec = {**spec, "ledger": str(ledger)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kuuki.bench.broker", "consume", json.dumps(spec),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        consumer = cls(proc, ledger)
        await consumer._expect(b"ready")
        return consumer

    async def go(self) -> None:
        """Start consuming; returns once the consumer is registered."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        await self.proc.stdin.drain()
        await self._expect(b"consuming")

    async def _expect(self, word: bytes) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        if line.strip() != word:
            raise RuntimeError(f"consumer did not start (exit {await self.proc.wait()})")

    def count(self) -> int:
        return len(read_ledger(self.ledger))

    async def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:  # a consumer stuck in its client library: no hang here
                self.proc.kill()
                await self.proc.wait()


async def wait_handled(consumers: list[Consumer], target: int, patience: float = 15.0) -> None:
    """Until the ledgers hold `target` lines, or nothing new came for `patience` seconds."""
    last, since = -1, time.monotonic()
    while True:
        now = sum(c.count() for c in consumers)
        if now >= target:
            return
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > patience:
            return
        await asyncio.sleep(0.05)


# --- the cases, common to both engines ------------------------------------------------------


async def run_cases(engine: BrokerEngine, messages: int, channels: int, tmp: Path) -> list[Row]:
    rows: list[Row] = []
    todo = plan(messages, channels)
    everything = list(range(PARTITIONS))
    await engine.setup()
    try:
        start = time.perf_counter()
        await engine.publish(todo)
        rows.append(Row(engine.name, "publish, confirmed",
                        messages / (time.perf_counter() - start), note=engine.note))
        for n in (1, 2):
            if n == 2:
                await engine.publish(todo)
            shares = [[p for p in everything if p % n == i] for i in range(n)]
            ledgers = [tmp / f"{engine.name}-drain{n}-{i}.log" for i in range(n)]
            consumers = [await Consumer.start(engine.spec(s, "active"), led)
                         for s, led in zip(shares, ledgers, strict=True)]
            began = time.time()  # all connected; they start consuming together
            await asyncio.gather(*(c.go() for c in consumers))
            await wait_handled(consumers, messages)
            for c in consumers:
                await c.stop()
            handled = [h for led in ledgers for h in read_ledger(led)]
            lost, twice, disorder = tally(todo, handled)
            elapsed = max((h.at for h in handled), default=began) - began
            rows.append(Row(engine.name, f"drain, {n} consumer{'s' if n > 1 else ''}",
                            len(handled) / elapsed if elapsed > 0 else None, len(handled),
                            lost, twice, disorder))
        rows.append(await failover(engine, todo, tmp, backlog=True))
        rows.append(await failover(engine, todo, tmp, backlog=False))
    finally:
        await engine.teardown()
    return rows


async def failover(engine: BrokerEngine, todo: list[tuple[str, int]], tmp: Path,
                   backlog: bool) -> Row:
    """An active and then a standby consumer on every partition, SIGKILL to the active once
    it has handled a third, and the last third published after the kill. The first two thirds
    are either waiting beforehand (`backlog`: the active dies with its prefetch windows full)
    or published while it consumes (live: the publisher sets the pace, windows part full)."""
    everything = list(range(PARTITIONS))
    case = "backlog" if backlog else "live"
    first_led = tmp / f"{engine.name}-{case}-active.log"
    second_led = tmp / f"{engine.name}-{case}-standby.log"
    cut = 2 * len(todo) // 3
    if backlog:
        await engine.publish(todo[:cut])
    active = await Consumer.start(engine.spec(everything, "active"), first_led)
    standby = await Consumer.start(engine.spec(everything, "standby"), second_led)
    await active.go()  # registered first: the active one
    await standby.go()
    publishing = asyncio.ensure_future(asyncio.sleep(0) if backlog else
                                       engine.publish(todo[:cut]))
    deadline = time.monotonic() + 60
    while active.count() < len(todo) // 3:
        if time.monotonic() > deadline or active.proc.returncode is not None:
            raise RuntimeError(f"the active consumer handled only {active.count()} messages")
        await asyncio.sleep(0.005)
    killed_at = time.time()
    await active.stop(signal.SIGKILL)
    await publishing
    await engine.publish(todo[cut:])
    await wait_handled([active, standby], len(todo))
    await standby.stop()
    first, second = read_ledger(first_led), read_ledger(second_led)
    lost, twice, disorder = tally(todo, first + second)
    takeover = min((h.at for h in second), default=None)
    return Row(engine.name, f"failover, {case}", None, len(first) + len(second), lost, twice,
               disorder, None if takeover is None else takeover - killed_at,
               f"{sum(h.redelivered for h in second)} redelivered to the standby")


def print_table(rows: list[Row], skipped: list[str], out: TextIO) -> None:
    for line in skipped:
        print(line, file=out)
    head = ("engine", "case", "msg/s", "handled", "lost", "twice", "disorder", "takeover s",
            "note")
    cells = [head] + [(r.engine, r.case, "" if r.rate is None else f"{r.rate:,.0f}",
                       str(r.handled or ""), str(r.lost), str(r.twice), str(r.disorder),
                       "" if r.takeover_s is None else f"{r.takeover_s:.3f}", r.note)
                      for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip(), file=out)


async def bench_broker(messages: int, channels: int, amqp_url: str | None, nats_url: str | None,
                       out: TextIO, engines: tuple[str, ...] = ("rabbitmq", "nats"),
                       rabbit_queue: str = "quorum") -> list[Row]:
    """Run every reachable engine's cases, print the table, return its rows."""
    from kuuki.bench.broker_engines import nats_engine, rabbit_engine

    amqp_url = amqp_url or DEFAULT_AMQP
    nats_url = nats_url or DEFAULT_NATS
    run = f"{int(time.time())}{os.getpid()}"
    # The clients log every failed connection attempt; the table's skip line says it once.
    for name in ("aiormq", "aio_pika", "nats"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    rows: list[Row] = []
    skipped: list[str] = []
    makers = {"rabbitmq": lambda: rabbit_engine(amqp_url, run, rabbit_queue),
              "nats": lambda: nats_engine(nats_url, run)}
    with tempfile.TemporaryDirectory(prefix="kuuki-broker-") as tmp:
        for name in engines:
            made = await makers[name]()
            if isinstance(made, str):
                skipped.append(f"{name}: skipped: {made}")
                continue
            try:
                rows.extend(await run_cases(made, messages, channels, Path(tmp)))
            except Exception as exc:  # a broker that goes away mid-run: say so, go on
                skipped.append(f"{name}: stopped: {type(exc).__name__}: {exc}"[:300])
    print_table(rows, skipped, out)
    return rows


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "consume":
        from kuuki.bench.broker_engines import consume_forever

        asyncio.run(consume_forever(json.loads(argv[1])))
        return 0
    print("usage: python -m kuuki.bench.broker consume SPEC (used by kuuki bench broker)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
