"""Engine construction and the few dialect-specific statements the store needs.

SQLite gets WAL (readers never block the writer), ``synchronous=NORMAL`` (durable at
checkpoints, far faster than FULL, and safe with WAL), foreign keys, and a busy timeout so
another process — the CLI inspecting a live bot's database — waits instead of failing.
The store talks to a SQLite file through a single pooled connection — SQLite has one writer
anyway, and one connection rules out lock-upgrade deadlocks between our own tasks — plus
the intake's and the writer's own connection (``hot.py``), whose transactions never wait
on anything of ours while they hold the lock.
Transactions start with ``BEGIN IMMEDIATE`` for the same reason across processes, and so
that DDL in migrations is transactional (the sqlite3 module would otherwise autocommit it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from kuuki.settings.urls import is_memory
from kuuki.store.schema import Base

BUSY_TIMEOUT_MS = 10_000
PG_CONNECT_TIMEOUT_S = 10
# Ids bound into one ``IN (...)``: SQLite's variable limit is 32,766, PostgreSQL's 65,535;
# 500 keeps each statement small on both.
IN_CHUNK = 500
_Id = TypeVar("_Id", str, int)

Insert = sqlite.Insert | postgresql.Insert


def json_dumps(value: Any) -> str:
    # Values arrive already cleaned by SafeJSON; default=str is a last resort for exotic
    # objects so that a debug-only trace field can never abort a write.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def create_engine(url: URL) -> AsyncEngine:
    """An async engine for a URL already passed through ``normalise_url``."""
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    return create_async_engine(
        url,
        json_serializer=json_dumps,
        pool_pre_ping=True,
        connect_args={"timeout": PG_CONNECT_TIMEOUT_S},
    )


def _sqlite_engine(url: URL) -> AsyncEngine:
    memory = is_memory(url)
    if memory:
        # Every new connection to :memory: is a new, empty database: keep exactly one.
        engine = create_async_engine(url, json_serializer=json_dumps, poolclass=StaticPool)
    else:
        engine = create_async_engine(
            url, json_serializer=json_dumps, pool_size=1, max_overflow=0, pool_timeout=60
        )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" hook below control transactions instead of sqlite3.
        sqlite_setup(dbapi_connection, memory=memory)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def sqlite_setup(dbapi_connection: Any, *, memory: bool) -> None:
    """Every connection to a SQLite database: transactions begun by us (BEGIN IMMEDIATE),
    WAL, ``synchronous=NORMAL``, foreign keys, the busy timeout."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def insert_stmt(dialect: str, model: type[Base]) -> Insert:
    """Dialect-specific INSERT, which offers ON CONFLICT on both SQLite and PostgreSQL."""
    if dialect == "postgresql":
        return postgresql.insert(model)
    return sqlite.insert(model)


def insert_ignore(dialect: str, model: type[Base], keys: Iterable[str]) -> Insert:
    """INSERT … ON CONFLICT (keys) DO NOTHING."""
    stmt = insert_stmt(dialect, model)
    return stmt.on_conflict_do_nothing(index_elements=list(keys))


def in_chunks(ids: Iterable[_Id]) -> Iterable[list[_Id]]:
    """The distinct ``ids``, in order, in lists of at most :data:`IN_CHUNK`."""
    items = list(dict.fromkeys(ids))
    for i in range(0, len(items), IN_CHUNK):
        yield items[i : i + IN_CHUNK]
