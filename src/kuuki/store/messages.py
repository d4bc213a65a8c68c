"""The message path's rows: messages, reactions and decisions, and the writer's batches.

`Messages` writes one message at a time, or a batch of the writer (``writer.py``:
messages, decisions, inbox ids and handled marks in one transaction), and reads them back
with what the writer still holds (read-your-writes). Every write leaves out what belongs
to a forgotten person (``forgetting.py``). On SQLite a batch goes to the connection's
thread in one hop as plain tuples (``fastwrite.py``), and the reads on the message path
(a channel's recent messages) run on that connection too (``hot.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from kuuki.domain import Decision, Message
from kuuki.store import fastwrite
from kuuki.store.database import Database, Queued
from kuuki.store.engine import in_chunks, insert_ignore
from kuuki.store.forgetting import Erasure
from kuuki.store.records import (
    DECISION_KEYS,
    MESSAGE_COLUMNS,
    decision_row,
    message_row,
    row_to_message,
)
from kuuki.store.roster import Roster, user_upsert
from kuuki.store.schema import (
    DecisionRow,
    ForgottenUserRow,
    MessageRow,
    ProcessedEventRow,
    ReactionRow,
    UserRow,
)
from kuuki.store.types import to_utc

_DECISION_COLUMNS = tuple(k for k in DECISION_KEYS if k != "id")

MESSAGE_SELECT = select(
    *(MessageRow.__table__.c[c] for c in MESSAGE_COLUMNS),
    UserRow.name.label("user_name"),
    UserRow.is_bot.label("user_is_bot"),
).join_from(MessageRow, UserRow, MessageRow.user_id == UserRow.id)


# A channel's last messages, read each time a channel is opened (after every eviction):
# built once, with its values bound at each read, so the statement's cache key is not
# worked out again for every read.
_RECENT_ALL = MESSAGE_SELECT.where(
    MessageRow.channel_id == bindparam("channel_id"), MessageRow.deleted.is_(False)
)
_RECENT = {
    since: (_RECENT_ALL.where(MessageRow.ts >= bindparam("since")) if since else _RECENT_ALL)
    .order_by(MessageRow.ts.desc(), MessageRow.seq.desc())
    .limit(bindparam("limit"))
    for since in (False, True)
}


def _by_id(u: dict[str, Any]) -> str:
    return str(u["id"])


class Messages:
    """Messages, reactions and decisions as the message path writes and reads them."""

    def __init__(
        self, db: Database, queued: Queued, roster: Roster, forgetting: Erasure
    ) -> None:
        self._db = db
        self._queued = queued
        self._roster = roster
        self._forgetting = forgetting
        self._seq = 0
        self._plan: dict[str, fastwrite.Prepared] | None = None

    async def load(self) -> None:
        """Read where the arrival numbers of messages go on from."""
        async with self._db.engine.connect() as conn:
            self._seq = int(await conn.scalar(select(func.max(MessageRow.seq))) or 0)

    def next_seq(self) -> int:
        """The next arrival number for a message (single writer process, as for events)."""
        self._seq += 1
        return self._seq

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
        async with self._db.engine.begin() as conn:
            rows, _ = await self._forgetting.keep_remembered(conn, rows, [])
            return await self._write_messages(conn, rows)

    async def _write_messages(self, conn: AsyncConnection, rows: list[dict[str, Any]]) -> int:
        if not rows:
            return 0
        channels = self._roster.unknown(r["channel_id"] for r in rows)
        if channels:
            await self._roster.placeholders(conn, channels)
        users = _authors(rows, seen="seen", first="first")
        await self._roster.write_users(conn, sorted(users, key=_by_id))
        stmt = insert_ignore(conn.dialect.name, MessageRow, ["id"]).returning(MessageRow.id)
        result = await conn.execute(stmt, [{k: r[k] for k in MESSAGE_COLUMNS} for r in rows])
        inserted = len(result.all())
        self._roster.known(channels)
        return inserted

    async def write_batch(
        self,
        messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
        events: dict[str, datetime],
        handled: Sequence[str] = (),
    ) -> int:
        """One transaction for a writer batch; returns the number of new messages.
        The writer's one way to the database (its `Target`)."""
        inserted = 0
        if self._db.dialect == "sqlite":
            return await self._write_batch_sqlite(messages, decisions, events, handled)
        async with self._db.engine.begin() as conn:
            messages, decisions = await self._forgetting.keep_remembered(
                conn, messages, decisions)
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
            users = user_upsert("sqlite")
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
        """:meth:`write_batch` on SQLite: the same rows, as plain tuples, in one hop to the
        connection's thread (see ``fastwrite.py``)."""
        channels = self._roster.unknown(r["channel_id"] for r in messages)
        if channels:  # before the batch, in a transaction of their own: they may repeat
            async with self._db.engine.begin() as conn:
                await self._roster.placeholders(conn, channels)
            self._roster.known(channels)
        plan = self._sqlite_plan(self._db.engine.dialect)
        hot = self._db.hot
        if not self._forgetting.anyone_unkept and hot is not None:
            steps = _sqlite_steps(plan, messages, decisions, events, handled)
            inserted = await hot.run(fastwrite.write_batch, _SQLITE_TOMBSTONES, steps, 1)
            if inserted is not None:
                return int(inserted)
        # someone is forgotten: leave out what is theirs, in one transaction (forgetting.py)
        async with self._db.engine.begin() as conn:
            messages, decisions = await self._forgetting.keep_remembered(
                conn, messages, decisions)
            steps = _sqlite_steps(plan, messages, decisions, events, handled)
            driver = await fastwrite.driver(conn)
            return int(await driver._execute(fastwrite.run, driver._conn, steps, 1))

    async def edit_message(self, message_id: str, text: str) -> bool:
        """Replace a message's text and mark it edited; False if unknown or deleted."""
        await self._queued.settle()
        async with self._db.engine.begin() as conn:
            result = await conn.execute(
                update(MessageRow)
                .where(MessageRow.id == message_id, MessageRow.deleted.is_(False))
                .values(text=text, edited=True)
            )
            return result.rowcount > 0

    async def delete_message(self, message_id: str) -> bool:
        """Mark a message deleted and blank its text; False if unknown."""
        await self._queued.settle()
        async with self._db.engine.begin() as conn:
            result = await conn.execute(
                update(MessageRow).where(MessageRow.id == message_id).values(text="", deleted=True)
            )
            return result.rowcount > 0

    async def get_message(self, message_id: str) -> Message | None:
        """The message with this id (deleted ones included, with blank text), or None."""
        pending = self._queued.message(message_id)
        if pending is not None:
            return row_to_message(pending)
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(MESSAGE_SELECT.where(MessageRow.id == message_id))).first()
        return None if row is None else row_to_message(row._mapping)

    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: datetime | None = None
    ) -> list[Message]:
        """The last ``limit`` undeleted messages of a channel (from ``since``), oldest first."""
        q = _RECENT[since is not None]
        params: dict[str, Any] = {"channel_id": channel_id, "limit": max(limit, 0)}
        if since is not None:
            params["since"] = to_utc(since)
        hot = self._db.hot
        if hot is not None:  # on the message path: one hop (hot.py)
            rows = await hot.read(lambda c: [r._mapping for r in c.execute(q, params)])
        else:
            async with self._db.engine.connect() as conn:
                rows = [r._mapping for r in await conn.execute(q, params)]
        found: dict[str, Mapping[Any, Any]] = {r["id"]: r for r in rows}
        lo = None if since is None else to_utc(since)
        for r in self._queued.channel_rows(channel_id):
            # A pending duplicate of a stored id will be ignored on flush: keep the stored.
            if not r["deleted"] and (lo is None or r["ts"] >= lo) and r["id"] not in found:
                found[r["id"]] = r
        ordered = sorted(found.values(), key=lambda r: (to_utc(r["ts"]), r["seq"]))
        return [row_to_message(r) for r in ordered[-limit:]] if limit > 0 else []

    async def set_conversation(self, message_ids: Sequence[str], conversation_id: str) -> None:
        await self._queued.settle()
        async with self._db.engine.begin() as conn:
            for chunk in in_chunks(message_ids):
                await conn.execute(
                    update(MessageRow)
                    .where(MessageRow.id.in_(chunk))
                    .values(conversation_id=conversation_id)
                )

    async def mark_reflected(self, message_ids: Sequence[str]) -> None:
        """Record that the memory layer has reflected on these messages (never again)."""
        await self._queued.settle()
        async with self._db.engine.begin() as conn:
            for chunk in in_chunks(message_ids):
                await conn.execute(
                    update(MessageRow).where(MessageRow.id.in_(chunk)).values(reflected=True)
                )

    async def unreflected_messages(self, channel_id: str, limit: int = 200) -> list[Message]:
        """The oldest ``limit`` undeleted, not yet reflected messages, oldest first."""
        await self._queued.settle()
        q = (
            MESSAGE_SELECT.where(
                MessageRow.channel_id == channel_id,
                MessageRow.reflected.is_(False),
                MessageRow.deleted.is_(False),
            )
            .order_by(MessageRow.ts, MessageRow.seq)
            .limit(limit)
        )
        async with self._db.engine.connect() as conn:
            return [row_to_message(r._mapping) for r in await conn.execute(q)]

    # --- reactions --------------------------------------------------------------------------

    async def add_reaction(self, message_id: str, user_id: str, emoji: str, at: datetime) -> None:
        """Record a reaction; repeating the same (message, user, emoji) is a no-op."""
        async with self._db.engine.begin() as conn:
            if await self._forgetting.refused(conn, [user_id]):
                return
            await conn.execute(
                insert_ignore(conn.dialect.name, ReactionRow, ["message_id", "user_id", "emoji"]),
                {"message_id": message_id, "user_id": user_id, "emoji": emoji, "ts": to_utc(at)},
            )

    async def reactions(self, message_id: str) -> list[tuple[str, str, datetime]]:
        """(user_id, emoji, at) for each reaction on a message, oldest first."""
        q = (
            select(ReactionRow.user_id, ReactionRow.emoji, ReactionRow.ts)
            .where(ReactionRow.message_id == message_id)
            .order_by(ReactionRow.ts, ReactionRow.id)
        )
        async with self._db.engine.connect() as conn:
            return [(r[0], r[1], r[2]) for r in await conn.execute(q)]

    # --- decisions ---------------------------------------------------------------------------

    async def save_decision(self, d: Decision) -> None:
        await self.save_decisions([d])

    async def save_decisions(self, ds: Sequence[Decision]) -> None:
        if not ds:
            return
        async with self._db.engine.begin() as conn:
            await conn.execute(insert(DecisionRow), [decision_row(d) for d in ds])


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
