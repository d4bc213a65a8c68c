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

Reads that sit on the message path (a channel's recent messages, read when its queue
starts) run there too, as one job through a synchronous SQLAlchemy engine over that same
connection (`read`): the same statement and result processing as the store's other
reads, and one hop instead of eight. Through the pooled connection a hundred channels
starting together read one after another, ~50 ms each: the hundredth waited five seconds
to handle its first message. A read on this connection also sees every commit of the
intake and the writer, which run there.

An in-memory database has a single connection: jobs and reads run on the pooled one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import aiosqlite
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import StaticPool

from kuuki.settings.urls import is_memory
from kuuki.store import fastwrite
from kuuki.store.engine import sqlite_setup


class HotConnection:
    """Runs ``fn(db, *args)`` on the intake's and the writer's SQLite connection."""

    def __init__(self, engine: AsyncEngine, conn: aiosqlite.Connection | None) -> None:
        self._engine = engine
        # Any: aiosqlite's `_execute` (run a function on the connection's thread) is untyped
        self._conn: Any = conn
        # used on that thread only (inside jobs), over that one connection
        self._sync: Engine | None = None
        if conn is not None:
            raw = cast(Any, conn)._conn
            self._sync = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)

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

    async def read(self, fn: Callable[[Connection], Any]) -> Any:
        """``fn(connection)`` for a read: a synchronous SQLAlchemy connection, on this
        connection's thread in one hop (the pooled one's `run_sync` for in-memory)."""
        if self._conn is not None and self._sync is not None:
            sync = self._sync

            def job(_: Any) -> Any:
                with sync.connect() as conn:
                    return fn(conn)

            return await self._conn._execute(job, None)
        async with self._engine.connect() as conn:
            return await conn.run_sync(fn)

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if self._sync is not None:
                await conn._execute(self._sync.dispose, False)
                self._sync = None
            await conn.close()
