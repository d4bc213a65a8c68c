"""The message path's writes: messages (one at a time, or the writer's batches with their
decisions, inbox ids and handled marks in one transaction) and their authors.

A part of :class:`~kuuki.store.store.Store`; it builds on forgetting (``forgetting.py``)
because every write leaves out what belongs to a forgotten person. On SQLite a batch goes
to the connection's thread in one hop as plain tuples (``fastwrite.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, case, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from kuuki.domain import Message, Visibility
from kuuki.store import fastwrite
from kuuki.store.engine import insert_ignore, insert_stmt
from kuuki.store.forgetting import ForgetMixin
from kuuki.store.hot import HotConnection
from kuuki.store.records import DECISION_KEYS, MESSAGE_COLUMNS, message_row
from kuuki.store.schema import (
    ChannelRow,
    DecisionRow,
    ForgottenUserRow,
    MessageRow,
    ProcessedEventRow,
    UserRow,
)

_DECISION_COLUMNS = tuple(k for k in DECISION_KEYS if k != "id")


def _by_id(u: dict[str, Any]) -> str:
    return str(u["id"])


class MessageWrites(ForgetMixin):
    """Message and batch writes of :class:`~kuuki.store.store.Store`."""

    _engine: AsyncEngine
    _hot: HotConnection | None
    _known_channels: set[str]
    _plan: dict[str, fastwrite.Prepared] | None
    _unkept: OrderedDict[str, None]
    _seq: int

    def next_seq(self) -> int:
        """The next arrival number for a message (single writer process, as for events)."""
        self._seq += 1
        return self._seq

    @staticmethod
    async def _upsert_users(conn: AsyncConnection, users: list[dict[str, Any]]) -> None:
        rows = [
            {
                "id": u["id"],
                "name": u["name"],
                "is_bot": u["is_bot"],
                "first_seen": u.get("first", u["seen"]),
                "last_seen": u["seen"],
            }
            for u in users
        ]
        await conn.execute(_user_upsert(conn.dialect.name), rows)

    # --- messages ---------------------------------------------------------------------------

    async def add_message(self, m: Message, *, conversation_id: str | None = None) -> bool:
        """Store ``m``; False (and nothing changes) if its id is already stored."""
        return await self._insert_messages([message_row(m, conversation_id, self.next_seq())]) == 1

    async def add_messages(self, items: Sequence[tuple[Message, str | None]]) -> int:
        """Store many messages in one transaction; return how many were new."""
        return await self._insert_messages(
            [message_row(m, conv, self.next_seq()) for m, conv in items]
        )

    async def _insert_messages(self, rows: list[dict[str, Any]]) -> int:
        if not rows:
            return 0
        async with self._engine.begin() as conn:
            rows, _ = await self._keep_remembered(conn, rows, [])
            return await self._write_messages(conn, rows)

    async def _write_messages(self, conn: AsyncConnection, rows: list[dict[str, Any]]) -> int:
        if not rows:
            return 0
        channels = {r["channel_id"] for r in rows} - self._known_channels
        if channels:
            await self._placeholder_channels(conn, channels)
        users = _authors(rows, seen="seen", first="first")
        await self._upsert_users(conn, sorted(users, key=lambda u: str(u["id"])))
        stmt = insert_ignore(conn.dialect.name, MessageRow, ["id"]).returning(MessageRow.id)
        result = await conn.execute(stmt, [{k: r[k] for k in MESSAGE_COLUMNS} for r in rows])
        inserted = len(result.all())
        self._known_channels |= channels
        return inserted

    @staticmethod
    async def _placeholder_channels(conn: AsyncConnection, channels: set[str]) -> None:
        # Placeholder for a channel never announced with upsert_channel. It is marked
        # DM, the most restrictive visibility, so nothing learned there is shared until
        # the adapter tells us what the channel really is.
        await conn.execute(
            insert_ignore(conn.dialect.name, ChannelRow, ["id"]),
            [
                {
                    "id": c,
                    "name": c,
                    "visibility": str(Visibility.DM),
                    "workspace": "default",
                    "platform": "unknown",
                }
                for c in sorted(channels)
            ],
        )

    async def _write_batch(
        self,
        messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
        events: dict[str, datetime],
        handled: Sequence[str] = (),
    ) -> int:
        """One transaction for a writer batch; returns the number of new messages."""
        inserted = 0
        if self._engine.dialect.name == "sqlite":
            return await self._write_batch_sqlite(messages, decisions, events, handled)
        async with self._engine.begin() as conn:
            messages, decisions = await self._keep_remembered(conn, messages, decisions)
            if messages:
                inserted = await self._write_messages(conn, messages)
            if decisions:
                await conn.execute(insert(DecisionRow), decisions)
            if events:
                await conn.execute(
                    insert_ignore(conn.dialect.name, ProcessedEventRow, ["event_id"]),
                    [{"event_id": k, "seen_at": v} for k, v in events.items()],
                )
            if handled:
                await conn.execute(
                    update(ProcessedEventRow)
                    .where(ProcessedEventRow.event_id == bindparam("eid"))
                    .values(handled=True, payload=None),
                    [{"eid": e} for e in handled],
                )
        return inserted

    def _sqlite_plan(self, dialect: Any) -> dict[str, fastwrite.Prepared]:
        if self._plan is None:
            users = _user_upsert("sqlite")
            self._plan = {
                "users": fastwrite.prepare(
                    users, ("id", "name", "is_bot", "first_seen", "last_seen"), dialect
                ),
                "messages": fastwrite.prepare(
                    insert_ignore("sqlite", MessageRow, ["id"]), MESSAGE_COLUMNS, dialect
                ),
                "decisions": fastwrite.prepare(insert(DecisionRow), _DECISION_COLUMNS, dialect),
                "events": fastwrite.prepare(
                    insert_ignore("sqlite", ProcessedEventRow, ["event_id"]),
                    ("event_id", "seen_at"),
                    dialect,
                ),
            }
        return self._plan

    async def _write_batch_sqlite(
        self,
        messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
        events: dict[str, datetime],
        handled: Sequence[str] = (),
    ) -> int:
        """:meth:`_write_batch` on SQLite: the same rows, as plain tuples, in one hop to the
        connection's thread (see ``fastwrite.py``)."""
        channels = {r["channel_id"] for r in messages} - self._known_channels
        if channels:  # before the batch, in a transaction of their own: they may repeat
            async with self._engine.begin() as conn:
                await self._placeholder_channels(conn, channels)
            self._known_channels |= channels
        plan = self._sqlite_plan(self._engine.dialect)
        if not self._unkept and self._hot is not None:
            steps = _sqlite_steps(plan, messages, decisions, events, handled)
            inserted = await self._hot.run(fastwrite.write_batch, _SQLITE_TOMBSTONES, steps, 1)
            if inserted is not None:
                return int(inserted)
        # someone is forgotten: leave out what is theirs, in one transaction (forgetting.py)
        async with self._engine.begin() as conn:
            messages, decisions = await self._keep_remembered(conn, messages, decisions)
            steps = _sqlite_steps(plan, messages, decisions, events, handled)
            driver = await fastwrite.driver(conn)
            return int(await driver._execute(fastwrite.run, driver._conn, steps, 1))


# Inbox events done with (ids were cleaned on the way in), 500 a statement.
_SQLITE_HANDLED = "UPDATE processed_events SET handled = 1, payload = NULL WHERE event_id IN "
_HANDLED_CHUNK = 500
# Who is forgotten, read inside the writer's transaction (forgetting.tombstones's query).
_SQLITE_TOMBSTONES = f"SELECT user_id FROM {ForgottenUserRow.__tablename__}"


def _sqlite_steps(
    plan: dict[str, fastwrite.Prepared],
    messages: list[dict[str, Any]],
    decisions: list[dict[str, Any]],
    events: dict[str, datetime],
    handled: Sequence[str],
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The statements of one writer batch on SQLite and their parameter tuples, in order
    (step 1, the messages, is the one whose changes count as inserted)."""
    users = _authors(messages, seen="last_seen", first="first_seen")
    return [
        (plan["users"].sql, plan["users"].rows(sorted(users, key=_by_id))),
        (plan["messages"].sql, plan["messages"].rows(messages)),
        (plan["decisions"].sql, plan["decisions"].rows(decisions)),
        (
            plan["events"].sql,
            plan["events"].rows([{"event_id": k, "seen_at": v} for k, v in events.items()]),
        ),
        *(
            (_SQLITE_HANDLED + "(" + ",".join("?" * len(part)) + ")", [tuple(part)])
            for part in (
                handled[i : i + _HANDLED_CHUNK] for i in range(0, len(handled), _HANDLED_CHUNK)
            )
        ),
    ]


def _authors(rows: Sequence[dict[str, Any]], *, seen: str, first: str) -> list[dict[str, Any]]:
    """One row per author of ``rows``: latest name and bot flag, first and last seen."""
    users: dict[str, dict[str, Any]] = {}
    for r in rows:
        u = users.get(r["user_id"])
        if u is None:
            users[r["user_id"]] = {
                "id": r["user_id"],
                "name": r["user_name"],
                "is_bot": r["user_is_bot"],
                seen: r["ts"],
                first: r["ts"],
            }
        else:
            if r["ts"] >= u[seen]:
                u.update({"name": r["user_name"], "is_bot": r["user_is_bot"], seen: r["ts"]})
            u[first] = min(u[first], r["ts"])
    return list(users.values())


def _user_upsert(dialect: str) -> Any:
    """Insert-or-update of users for both write paths.

    Messages may arrive out of order (history backfill): only the newest sighting may
    rename a user, and the seen-range only ever widens.
    """
    stmt = insert_stmt(dialect, UserRow)
    ex = stmt.excluded
    newer = ex.last_seen >= UserRow.last_seen
    return stmt.on_conflict_do_update(
        index_elements=["id"],
        set_={
            "name": case((newer, ex.name), else_=UserRow.name),
            "is_bot": case((newer, ex.is_bot), else_=UserRow.is_bot),
            "last_seen": case((newer, ex.last_seen), else_=UserRow.last_seen),
            "first_seen": case(
                (ex.first_seen < UserRow.first_seen, ex.first_seen),
                else_=UserRow.first_seen,
            ),
        },
    )
