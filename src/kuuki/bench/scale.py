"""`kuuki bench scale`: messages per second through gateway → broker → worker → store,
with 1 and with 2 workers on this machine, LLM off.

Each run gets a fresh PostgreSQL database (created on the server of ``--postgres`` and
dropped afterwards: the role needs CREATEDB, which .ci/postgres.sh grants) and a fresh
RabbitMQ virtual host (made with ``rabbitmqctl``, so the broker must be on this machine).
N worker processes (`kuuki.testing.scale_process`, the product path, no model) are started
on empty queues; then the synthetic chat of `kuuki bench ingest` (``messages`` over
``channels``, re-timed to end now) is handed to the broker the way a gateway's relay does
it (`BrokerRelay`, group commits of 256, each confirmed), and the clock runs from the first
publish until the store has every event marked handled. The platforms' own sessions are
not in the timed part: the local protocol servers that would feed a gateway would share
the same two cores.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.bench.ingest import synthetic_events
from kuuki.domain import ChatEvent
from kuuki.errors import KuukiError
from kuuki.scale.broker import Publisher
from kuuki.scale.gateway import BrokerRelay
from kuuki.settings.urls import normalise_url

BATCH = 256


@dataclass(slots=True)
class ScaleRun:
    workers: int
    messages: int
    publish_s: float
    drain_s: float

    @property
    def publish_rate(self) -> float:
        return self.messages / self.publish_s

    @property
    def rate(self) -> float:
        return self.messages / self.drain_s


async def bench_scale(
    amqp_url: str, postgres_url: str, *, messages: int, channels: int,
    workers: tuple[int, ...] = (1, 2), out: TextIO,
) -> list[ScaleRun]:
    if not postgres_url.startswith(("postgresql", "postgres:")):
        raise KuukiError("bench scale needs a PostgreSQL server: --postgres "
                         "postgresql://user:password@host/db (a role with CREATEDB)")
    runs: list[ScaleRun] = []
    for n in workers:
        async with _scratch_db(postgres_url) as db, _scratch_vhost(amqp_url) as broker:
            run = await _one(broker, db, n, messages, channels)
        runs.append(run)
        out.write(f"{n} worker{'s' if n > 1 else ''}: {run.rate:,.0f} msg/s gateway → store "
                  f"({run.drain_s:.1f} s for {messages:,}); the gateway's publishing alone "
                  f"{run.publish_rate:,.0f} msg/s\n")
    if len(runs) >= 2:
        out.write(f"ratio {runs[1].workers} : {runs[0].workers} workers = "
                  f"{runs[1].rate / runs[0].rate:.2f}\n")
    return runs


async def _one(amqp_url: str, db_url: str, workers: int, messages: int,
               channels: int) -> ScaleRun:
    from kuuki.store import Store
    from kuuki.testing.cluster import Cluster

    store = await Store.open(db_url)  # the schema, once, before the workers race for it
    await store.close()
    # The ingest bench's chat, re-timed to end now, 10 ms apart (2 s between a channel's
    # messages over 200 channels): the workers run on the real clock, and messages weeks
    # old would skip most of the path (the buffer's TTL, the judge's staleness).
    spacing = timedelta(milliseconds=10)
    start = datetime.now(UTC) - spacing * messages
    events = [_at(e, start + spacing * i)
              for i, e in enumerate(synthetic_events(messages, channels))]
    cluster = Cluster(amqp_url, db_url, gateways=0, workers=workers, llm="none")
    engine = create_async_engine(normalise_url(db_url))
    publisher = Publisher(amqp_url, 16)
    try:
        await cluster.start(channels=2)  # the workers wait on empty queues
        await publisher.open()
        relay = BrokerRelay(publisher)
        # The clock runs from the gateway's first publish to the store's last handled
        # mark: gateway, broker, workers and store all share this machine meanwhile.
        started = time.perf_counter()
        for i in range(0, len(events), BATCH):
            await relay.admit_events(events[i : i + BATCH])
        publish_s = time.perf_counter() - started
        while True:
            async with engine.connect() as conn:
                done = (await conn.execute(text(
                    "select count(*) from processed_events where handled"))).scalar_one()
            if done >= messages:
                break
            if time.perf_counter() - started > 600:
                raise KuukiError(f"the workers handled {done} of {messages} in 10 min")
            await asyncio.sleep(0.05)
        drain_s = time.perf_counter() - started
    finally:
        await publisher.close()
        await cluster.stop()
        await engine.dispose()
    return ScaleRun(workers, messages, publish_s, drain_s)


def _at(event: ChatEvent, at: datetime) -> ChatEvent:
    assert event.message is not None
    return replace(event, at=at, message=replace(event.message, ts=at))


class _scratch_db:
    """CREATE DATABASE kuuki_bench_<random> on the server of ``url``; dropped on exit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.name = f"kuuki_bench_{uuid.uuid4().hex[:8]}"

    async def __aenter__(self) -> str:
        await self._admin(f'CREATE DATABASE "{self.name}"')
        return str(make_url(normalise_url(self.url)).set(database=self.name)
                   .render_as_string(hide_password=False))

    async def __aexit__(self, *exc: Any) -> None:
        await self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    async def _admin(self, sql: str) -> None:
        engine = create_async_engine(normalise_url(self.url), isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(text(sql))
        except Exception as exc:
            raise KuukiError(f"bench scale: {sql.split()[0]} DATABASE failed (the role needs "
                             f"CREATEDB): {type(exc).__name__}: {exc}") from exc
        finally:
            await engine.dispose()


class _scratch_vhost:
    """A fresh RabbitMQ virtual host for one run (rabbitmqctl); deleted on exit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.vhost = f"kuuki-bench-{uuid.uuid4().hex[:8]}"
        self.user = url.split("//", 1)[1].split(":", 1)[0] if "//" in url else "guest"

    async def __aenter__(self) -> str:
        self._ctl("add_vhost", self.vhost)
        self._ctl("set_permissions", "-p", self.vhost, self.user, ".*", ".*", ".*")
        return self.url.rstrip("/") + "/" + self.vhost

    async def __aexit__(self, *exc: Any) -> None:
        self._ctl("delete_vhost", self.vhost)

    @staticmethod
    def _ctl(*args: str) -> None:
        try:
            subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True,
                           timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            raise KuukiError(f"bench scale needs rabbitmqctl on this machine "
                             f"(rabbitmqctl {args[0]}: {exc})") from exc
