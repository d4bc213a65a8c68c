"""The SQLite batch's statements: multi-row inserts leave exactly what ``executemany``
leaves, the intake's insert tells exactly which events went in, and the intake's and the
writer's transactions run on a connection of their own (kuuki.store.fastwrite, hot)."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import sqlite

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User
from kuuki.store import fastwrite
from kuuki.store.roster import user_upsert as _user_upsert
from kuuki.store.store import Store

_DDL = (
    "CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT, is_bot BOOLEAN, first_seen TEXT, "
    "last_seen TEXT)",
    "CREATE TABLE events (event_id TEXT PRIMARY KEY, seen_at TEXT)",
)
_EVENTS = "INSERT INTO events (event_id, seen_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING"


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    for ddl in _DDL:
        db.execute(ddl)
    return db


def _dump(db: sqlite3.Connection) -> list[list[Any]]:
    return [
        sorted(db.execute(f"SELECT * FROM {t}").fetchall()) for t in ("users", "events")
    ]


def _user_rows(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    base = datetime(2026, 1, 5, tzinfo=UTC)
    out = []
    for _ in range(n):
        first = base + timedelta(seconds=rng.randrange(10_000))
        last = first + timedelta(seconds=rng.randrange(10_000))
        out.append((
            f"u{rng.randrange(200)}", f"name{rng.randrange(50)}", rng.random() < 0.1,
            fastwrite.sqlite_datetime(first), fastwrite.sqlite_datetime(last),
        ))
    return out


def test_multi_row_inserts_leave_what_executemany_leaves() -> None:
    # The users upsert (CASE on excluded) and an insert that ignores conflicts, with ids
    # repeated inside one batch and across batches, and batches over the 256-row statement.
    upsert = str(_user_upsert("sqlite").compile(
        dialect=sqlite.dialect(), column_keys=["id", "name", "is_bot", "first_seen", "last_seen"]
    ))
    rng = random.Random(11)
    one, many = _db(), _db()
    for size in (1, 7, 499, 500, 501, 1_700):
        users = _user_rows(rng, size)
        events = [(f"e{rng.randrange(3_000)}", f"t{rng.randrange(9)}") for _ in range(size)]
        for db in (one, many):
            db.execute("BEGIN")
        for sql, rows in ((upsert, users), (_EVENTS, events)):
            one.executemany(sql, rows)
            fastwrite.run(many, [(sql, rows)], 0)
        for db in (one, many):
            db.execute("COMMIT")
        assert _dump(many) == _dump(one)
    assert len(_dump(one)[0]) == 200  # the ids did repeat


def test_multi_row_statements_stay_under_the_parameter_limit() -> None:
    rows = [(f"e{i}", "t") for i in range(40_000)]
    statements = list(fastwrite.multirow(_EVENTS, rows))
    assert sum(len(flat) for _, flat in statements) == 80_000
    assert all(len(flat) <= fastwrite._MAX_VARS for _, flat in statements)
    # few distinct texts: sqlite3 keeps a prepared statement for each
    shapes = {stmt for n in range(1, 700) for stmt, _ in fastwrite.multirow(_EVENTS, rows[:n])}
    assert len(shapes) <= 9
    assert all(stmt.endswith("ON CONFLICT (event_id) DO NOTHING") for stmt, _ in statements)
    with pytest.raises(ValueError, match="not an INSERT"):
        list(fastwrite.multirow("UPDATE events SET seen_at = ? WHERE event_id = ?", [("a", "b")]))


@pytest.mark.parametrize("returning", [True, False])
def test_the_intake_insert_names_the_new_events(returning: bool) -> None:
    # RETURNING needs SQLite 3.35; older libraries insert row by row and count.
    db = _db()
    db.execute("INSERT INTO events VALUES ('old', 't')")
    rows = [("a", "t"), ("old", "t"), ("b", "t"), ("a", "t2")] + [(f"n{i}", "t") for i in range(900)]
    new = fastwrite.admit(db, _EVENTS, rows, "event_id", 0, returning=returning)
    assert new == {"a", "b"} | {f"n{i}" for i in range(900)}
    assert not db.in_transaction
    assert db.execute("SELECT seen_at FROM events WHERE event_id = 'a'").fetchone() == ("t",)


def test_a_failing_job_rolls_its_transaction_back() -> None:
    db = _db()
    bad = [("x", "t"), ("y", "t", "one too many")]
    with pytest.raises(sqlite3.ProgrammingError):
        fastwrite.admit(db, _EVENTS, bad, "event_id", 0)
    assert not db.in_transaction
    assert db.execute("SELECT count(*) FROM events").fetchone() == (0,)


def _event(i: int, channel: str = "c1") -> ChatEvent:
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC) + timedelta(seconds=i)
    msg = Message(f"m{i}", channel, User("u1", "ann"), f"hello {i}", at)
    return ChatEvent(EventKind.POSTED, Channel(channel, channel), msg.id, at, message=msg)


async def test_a_file_store_commits_and_reads_on_its_own_connection(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.sqlite3'}"
    async with await Store.open(url) as store:
        assert await store.inbox.admit_events([_event(1), _event(2)]) == {"m1", "m2"}
        assert await store.inbox.admit_events([_event(2), _event(3)]) == {"m3"}
        # what that connection committed, the store's own connection reads
        pending = await store.inbox.pending_events(channel_id="c1")
        assert [e.event_id for e in pending] == ["m1", "m2", "m3"]
        writer = store.writer
        for e in pending:
            assert e.message is not None
            await writer.add_message(e.message)
            await writer.handled(e.event_id)
        await writer.flush()
        assert await store.inbox.pending_events(channel_id="c1") == []
        # a channel's recent messages, read on that connection: stored, then pending too
        assert [m.id for m in await store.messages.recent_messages("c1")] == ["m1", "m2", "m3"]
        later = _event(4).message
        assert later is not None
        await writer.add_message(later)
        assert [m.id for m in await store.messages.recent_messages("c1", limit=2)] == ["m3", "m4"]
        assert (await store.messages.recent_messages("c1"))[0].ts == datetime(2026, 1, 5, 10, 0, 1, tzinfo=UTC)
    # and it is closed with the store: SQLite removes the write-ahead log when the last
    # connection to the file closes, and not before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.sqlite3"]


async def test_an_in_memory_store_runs_the_jobs_on_its_one_connection() -> None:
    async with await Store.open(":memory:") as store:
        assert await store.inbox.admit_events([_event(1)]) == {"m1"}
        assert [e.event_id for e in await store.inbox.pending_events()] == ["m1"]
        event = _event(2)
        assert event.message is not None
        await store.writer.add_message(event.message)
        await store.writer.flush()
        assert [m.text for m in await store.messages.recent_messages("c1")] == ["hello 2"]
