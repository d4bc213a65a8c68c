"""The intake's and the writer's own connection to a SQLite file.

Every event is committed by the intake before it is handled, and every handled event is
marked by the writer's batch: these two transactions are on the message path. On the
pooled connection each costs several hops to aiosqlite's thread (a pool check-out, a
reset on return, three per statement through SQLAlchemy), and a hop comes back only when
the event loop gets round to it — behind every channel's message in hand, ~45 ms with a
hundred busy channels. The intake's next commit then waited for the writer's check-out,
and the engine sat idle meanwhile (`kuuki bench ingest`: 0.33 s of 5.2 s).

Here both run whole, transaction included, as one job each on a connection of their own
(`fastwrite.admit`, `fastwrite.write_batch`): jobs queue on its thread in order and never
wait for the loop to start. Each job begins and commits (or rolls back) its own
transaction, so two never share one. SQLite still has one writer: a transaction of the
pooled connection and a job here take turns on the database lock (the busy timeout), and
neither holds the lock while waiting for the other.

An in-memory database has a single connection: jobs run on the pooled one, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiosqlite
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.store import fastwrite
from kuuki.store.engine import sqlite_setup
from kuuki.store.urls import is_memory


class HotConnection:
    """Runs ``fn(db, *args)`` on the intake's and the writer's SQLite connection."""

    def __init__(self, engine: AsyncEngine, conn: aiosqlite.Connection | None) -> None:
        self._engine = engine
        # Any: aiosqlite's `_execute` (run a function on the connection's thread) is untyped
        self._conn: Any = conn

    @classmethod
    async def open(cls, engine: AsyncEngine, url: URL) -> HotConnection:
        if is_memory(url):
            return cls(engine, None)
        conn: Any = await aiosqlite.connect(str(url.database), isolation_level=None)
        try:
            await conn._execute(sqlite_setup, conn._conn, memory=False)
        except BaseException:
            await conn.close()
            raise
        return cls(engine, conn)

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._conn is not None:
            return await self._conn._execute(fn, self._conn._conn, *args)
        async with self._engine.connect() as conn:
            driver = await fastwrite.driver(conn)
            return await driver._execute(fn, driver._conn, *args)

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()
