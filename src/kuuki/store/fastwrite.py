"""The writer's batch on SQLite: prebuilt statements, plain tuples, one thread hop.

Through SQLAlchemy Core an ``executemany`` processes every bound value in Python and
crosses to aiosqlite's worker thread once per statement and cursor operation, which made
the batched writer the second-largest cost of ingest. Here each statement is compiled
once with SQLAlchemy itself (so the SQL, and every column type's bind processing, are the
ones the Core path uses: same stored bytes, same clean-up of hostile text), rows become
tuples on the event loop, and the inserts of one batch run in a single call on the
connection's own thread. The intake's commit and the writer's batch run there whole,
transaction included (`admit`, `write_batch`): a hop to that thread comes back only when
the event loop gets round to it, behind every channel's message in hand, so a commit of
ten hops held the intake up long enough to leave the engine idle (docs/decisions.md).
JSON documents are encoded once each (see :func:`~kuuki.store.types.dump_json`).

PostgreSQL keeps the Core path: asyncpg already sends a batch in one round trip.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Dialect, Insert
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import JSON

from kuuki.store.types import SafeJSON, UTCDateTime, dump_json

Processor = Callable[[Any], Any] | None

# Parameters one statement may bind (SQLITE_MAX_VARIABLE_NUMBER: 32,766 by default since
# SQLite 3.32, 999 before), the most rows in one multi-row INSERT, and RETURNING (SQLite 3.35).
_MAX_VARS = 32_766 if sqlite3.sqlite_version_info >= (3, 32) else 999
_MAX_ROWS = 256
_RETURNING = sqlite3.sqlite_version_info >= (3, 35)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One compiled statement and how to turn a row dict into its parameter tuple."""

    sql: str
    keys: tuple[str, ...]
    processors: tuple[Processor, ...]

    def rows(self, rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
        keys, procs = self.keys, self.processors
        pairs = tuple(zip(keys, procs, strict=True))
        return [
            tuple(r[k] if p is None else p(r[k]) for k, p in pairs)
            for r in rows
        ]


def prepare(stmt: Insert, keys: Sequence[str], dialect: Dialect) -> Prepared:
    """Compile ``stmt`` for ``dialect`` with parameters named by ``keys``.

    Raises ValueError when the compiled statement needs a parameter that is not one of
    ``keys`` (a literal bound by SQLAlchemy, say); callers then keep the Core path.
    """
    compiled = stmt.compile(dialect=dialect, column_keys=list(keys))
    order = compiled.positiontup
    if order is None or any(name not in keys for name in order):
        raise ValueError(f"cannot prepare {stmt!r} for plain tuples")
    procs = compiled._bind_processors
    types = {name: b.type for name, b in compiled.binds.items()}
    out: list[Processor] = []
    for name in order:
        t = types.get(name)
        if isinstance(t, SafeJSON | JSON):
            out.append(dump_json)  # one encode per document instead of two
        elif isinstance(t, UTCDateTime) and _same_text(procs.get(name), sqlite_datetime):
            out.append(sqlite_datetime)
        else:
            proc = procs.get(name)
            if proc is not None and not callable(proc):  # per-element (array types)
                raise ValueError(f"cannot prepare {name!r} for plain tuples")
            out.append(proc)
    return Prepared(str(compiled), tuple(order), tuple(out))


def sqlite_datetime(value: datetime | None) -> str | None:
    """A `UTCDateTime` bound for SQLite, as SQLAlchemy's processors write it (in UTC, no
    zone, microseconds always): one format instead of a TypeDecorator, a zone conversion,
    a dict and a format (6 µs → 1 µs; two or three a message). `prepare` uses it only
    after checking that it writes what SQLAlchemy's processor writes."""
    if value is None:
        return None
    v = value.astimezone(UTC) if value.tzinfo is not None else value
    # %-formatting: 1.1 µs here, the same f-string 2.5 µs
    return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (  # noqa: UP031
        v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond
    )


_SAMPLES = (
    datetime(2026, 1, 5, 10, 0, 3, 1234, tzinfo=UTC),
    datetime(2026, 1, 5, 19, 0, tzinfo=timezone(timedelta(hours=9))),
    datetime(999, 12, 31, 23, 59, 59),
    None,
)


def _same_text(proc: Any, fast: Callable[[Any], Any]) -> bool:
    if proc is None or not callable(proc):
        return False
    try:
        return all(proc(v) == fast(v) for v in _SAMPLES)
    except Exception:
        return False


def run(db: sqlite3.Connection, steps: Sequence[tuple[str, list[tuple[Any, ...]]]],
        count: int) -> int:
    """Run ``steps`` (sql, parameter tuples) on ``db``; return the changes of step ``count``.

    Runs on aiosqlite's worker thread, inside the transaction the caller has begun.
    """
    changed = 0
    for i, (sql, params) in enumerate(steps):
        if not params:
            continue
        before = db.total_changes
        if " VALUES (" in sql:
            for stmt, flat in multirow(sql, params):
                db.execute(stmt, flat)
        else:
            db.executemany(sql, params)
        if i == count:
            changed = db.total_changes - before
    return changed


def multirow(
    sql: str, params: Sequence[tuple[Any, ...]], suffix: str = ""
) -> Iterator[tuple[str, list[Any]]]:
    """An ``INSERT … VALUES (?, …)`` run once per parameter tuple, as few statements:
    ``VALUES (…), (…), …`` (the rows go in one after the other, as ``executemany`` puts
    them, conflict clauses included), so the connection's thread takes the GIL a few times
    a batch instead of once a row — each time it must wait for the event loop's thread to
    let go (docs/decisions.md). The statements hold 256, 128, … 1 rows: sqlite3 keeps a
    prepared statement per distinct text, and one per batch size (1–500 rows) held ~46 MB
    of them. ``suffix`` ends each statement."""
    head, sep, rest = sql.partition(" VALUES (")
    group, _, tail = rest.partition(")")
    if not sep:
        raise ValueError(f"not an INSERT … VALUES statement: {sql[:60]!r}")
    if not params:
        return
    most = max(1, min(_MAX_ROWS, _MAX_VARS // len(params[0])))
    most = 1 << (most.bit_length() - 1)  # a power of two
    s = 0
    while s < len(params):
        size = most
        while size > len(params) - s:
            size //= 2
        part = params[s : s + size]
        values = ",".join(["(" + group + ")"] * size)
        yield f"{head} VALUES {values}{tail}{suffix}", [v for p in part for v in p]
        s += size


async def driver(conn: AsyncConnection) -> Any:
    """The aiosqlite connection under a checked-out SQLAlchemy connection. Its
    ``_execute(fn, db, …)`` runs ``fn`` on the connection's thread: one hop, where each
    statement through SQLAlchemy takes three (cursor, execute, close), and every hop waits
    for the event loop's turn behind the channels' work."""
    raw = await conn.get_raw_connection()
    return raw.driver_connection


def admit(
    db: sqlite3.Connection, sql: str, params: Sequence[tuple[Any, ...]], key: str, at: int,
    *, returning: bool = _RETURNING,
) -> set[Any]:
    """:func:`insert_new` in a transaction of its own: the intake's commit as one job."""
    db.execute("BEGIN IMMEDIATE")
    try:
        out = insert_new(db, sql, params, key, at, returning=returning)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return out


def write_batch(
    db: sqlite3.Connection, tombstones_sql: str,
    steps: Sequence[tuple[str, list[tuple[Any, ...]]]], count: int,
) -> int | None:
    """The writer's batch as one job: begin, read who is forgotten (inside the writing
    transaction, so a forget cannot slip between), run ``steps`` and commit; the changes
    of step ``count``. None, and nothing written, when someone is forgotten: the caller
    then leaves out what is theirs in a transaction of its own (forgetting.py)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute(tombstones_sql).fetchone() is not None:
            db.execute("ROLLBACK")
            return None
        changed = run(db, steps, count)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return changed


def insert_new(
    db: sqlite3.Connection, sql: str, params: Sequence[tuple[Any, ...]], key: str, at: int,
    *, returning: bool = _RETURNING,
) -> set[Any]:
    """Run an ``INSERT … ON CONFLICT DO NOTHING`` for every parameter tuple; the values of
    column ``key`` (parameter ``at`` of each tuple) that went in. Runs on aiosqlite's
    thread, inside a transaction. With ``returning`` (the library has RETURNING) in
    multi-row statements, else row by row."""
    if returning and " VALUES (" in sql:
        went: set[Any] = set()
        for stmt, flat in multirow(sql, params, suffix=f" RETURNING {key}"):
            went.update(r[0] for r in db.execute(stmt, flat).fetchall())
        return went
    return {p[at] for p in params if db.execute(sql, p).rowcount == 1}
