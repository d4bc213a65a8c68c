"""The :class:`Store`: kuuki's persistent state behind one async API.

All methods take and return domain values (``kuuki.domain``); rows never leak out. Writes
that are not on the ingest hot path commit immediately; the hot path goes through
:attr:`Store.writer` (see ``writer.py``).

Concerns with their own state live in mixins: the inbox of events (``events.py``), what
catching up after a restart asks (``history.py``) and memories/facts (``memories.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, case, func, insert, select, update
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from kuuki.domain import Channel, Decision, Message, User, Visibility
from kuuki.errors import StoreError
from kuuki.store import fastwrite, migrations
from kuuki.store.engine import create_engine, in_chunks, insert_ignore, insert_stmt
from kuuki.store.events import EventStoreMixin
from kuuki.store.forgetting import ForgetMixin
from kuuki.store.history import HistoryMixin
from kuuki.store.hot import HotConnection
from kuuki.store.memories import MemoryStoreMixin
from kuuki.store.records import (
    DECISION_KEYS,
    MESSAGE_COLUMNS,
    decision_row,
    message_row,
    row_to_channel,
    row_to_decision,
    row_to_message,
)
from kuuki.store.schema import (
    ChannelRow,
    DecisionRow,
    ForgottenUserRow,
    MessageRow,
    ProcessedEventRow,
    ReactionRow,
    UserRow,
)
from kuuki.store.types import to_utc
from kuuki.store.urls import display_url, normalise_url
from kuuki.store.writer import BatchedWriter

_DECISION_COLUMNS = tuple(k for k in DECISION_KEYS if k != "id")


def _by_id(u: dict[str, Any]) -> str:
    return str(u["id"])


_MESSAGE_SELECT = select(
    *(MessageRow.__table__.c[c] for c in MESSAGE_COLUMNS),
    UserRow.name.label("user_name"),
    UserRow.is_bot.label("user_is_bot"),
).join_from(MessageRow, UserRow, MessageRow.user_id == UserRow.id)


class Store(EventStoreMixin, HistoryMixin, ForgetMixin, MemoryStoreMixin):
    """Persistent chat state on SQLite or PostgreSQL. Create with :meth:`Store.open`."""

    def __init__(
        self,
        engine: AsyncEngine,
        url: URL,
        *,
        event_cache_size: int = 10_000,
        batch_size: int = 500,
        batch_delay: float = 0.05,
    ) -> None:
        self._engine = engine
        self.url = url
        self.url_for_display = display_url(url)
        self._writer: BatchedWriter | None = None
        self._seq = 0
        self._known_channels: set[str] = set()
        self._channel_info: dict[str, Channel] = {}  # as last written by upsert_channel
        self._arrival = 0
        self._events: dict[str, None] = {}  # insertion-ordered: oldest first
        self._events_complete = True
        self._event_cache_size = event_cache_size
        self._batch = (batch_size, batch_delay)
        self._plan: dict[str, fastwrite.Prepared] | None = None
        self._unkept: OrderedDict[str, None] = OrderedDict()  # see ForgetMixin
        self._closed = False
        # the intake's and the writer's SQLite connection (hot.py), opened by `open`
        self._hot: HotConnection | None = None

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        *,
        event_cache_size: int = 10_000,
        batch_size: int = 500,
        batch_delay: float = 0.05,
    ) -> Store:
        """Open (creating if needed) and migrate the database at ``url``.

        ``None`` means the default SQLite file; see :mod:`kuuki.store.urls` for the rest.
        ``batch_size`` and ``batch_delay`` (seconds) configure :attr:`writer`.
        """
        parsed = normalise_url(url)
        engine = create_engine(parsed)
        store = cls(
            engine,
            parsed,
            event_cache_size=event_cache_size,
            batch_size=batch_size,
            batch_delay=batch_delay,
        )
        try:
            await store.migrate()
            await store._load_event_cache()
            await store._load_seq()
            await store._load_arrival()
            if store.dialect == "sqlite":
                store._hot = await HotConnection.open(engine, parsed)
        except BaseException as exc:
            await engine.dispose()
            if isinstance(exc, StoreError) or not isinstance(exc, Exception):
                raise
            raise StoreError(
                f"cannot open database {store.url_for_display}: {store._scrub(exc)}"
            ) from exc
        return store

    async def _load_seq(self) -> None:
        async with self._engine.connect() as conn:
            self._seq = int(await conn.scalar(select(func.max(MessageRow.seq))) or 0)

    def next_seq(self) -> int:
        """The next arrival number for a message (single writer process, as for events)."""
        self._seq += 1
        return self._seq

    async def migrate(self) -> list[str]:
        """Apply pending migrations; return the names of those applied."""
        return await migrations.migrate(self._engine)

    async def close(self) -> None:
        """Flush the writer and release every connection. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer is not None:
                await self._writer.close()
        finally:
            try:
                if self._hot is not None:
                    await self._hot.close()
            finally:
                await self._engine.dispose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    @property
    def writer(self) -> BatchedWriter:
        """The store's write-behind batcher, created on first use; flushed on close."""
        if self._writer is None:
            if self._closed:
                raise StoreError("store is closed")
            self._writer = BatchedWriter(self, max_items=self._batch[0], max_delay=self._batch[1])
        return self._writer

    def _scrub(self, exc: BaseException) -> str:
        text = f"{type(exc).__name__}: {exc}"
        if self.url.password:
            text = text.replace(str(self.url.password), "***")
        return text

    # --- channels and users -----------------------------------------------------------------

    async def upsert_channel(self, ch: Channel) -> None:
        async with self._engine.begin() as conn:
            await self._upsert_channels(conn, [ch])
        self._known_channels.add(ch.id)
        self._channel_info[ch.id] = ch

    async def channels(self) -> list[Channel]:
        async with self._engine.connect() as conn:
            rows = await conn.execute(select(ChannelRow).order_by(ChannelRow.id))
            return [row_to_channel(r._mapping) for r in rows]

    async def get_channel(self, channel_id: str) -> Channel | None:
        async with self._engine.connect() as conn:
            row = (
                await conn.execute(select(ChannelRow).where(ChannelRow.id == channel_id))
            ).first()
        return None if row is None else row_to_channel(row._mapping)

    async def upsert_user(self, u: User, seen_at: datetime) -> None:
        async with self._engine.begin() as conn:
            if await self._refused(conn, [u.id]):
                return
            await self._upsert_users(
                conn, [{"id": u.id, "name": u.name, "is_bot": u.is_bot, "seen": to_utc(seen_at)}]
            )

    async def get_user(self, user_id: str) -> User | None:
        async with self._engine.connect() as conn:
            row = (await conn.execute(select(UserRow).where(UserRow.id == user_id))).first()
        return None if row is None else User(row.id, row.name, bool(row.is_bot))

    async def user_seen(self, user_id: str) -> tuple[datetime, datetime] | None:
        """(first seen, last seen) for ``user_id``."""
        async with self._engine.connect() as conn:
            row = (
                await conn.execute(
                    select(UserRow.first_seen, UserRow.last_seen).where(UserRow.id == user_id)
                )
            ).first()
        return None if row is None else (row[0], row[1])

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
        if self.dialect == "sqlite":
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

    async def _flush_pending(self) -> None:
        if self._writer is not None and len(self._writer):
            await self._writer.flush()

    async def edit_message(self, message_id: str, text: str) -> bool:
        """Replace a message's text and mark it edited; False if unknown or deleted."""
        await self._flush_pending()
        async with self._engine.begin() as conn:
            result = await conn.execute(
                update(MessageRow)
                .where(MessageRow.id == message_id, MessageRow.deleted.is_(False))
                .values(text=text, edited=True)
            )
            return result.rowcount > 0

    async def delete_message(self, message_id: str) -> bool:
        """Mark a message deleted and blank its text; False if unknown."""
        await self._flush_pending()
        async with self._engine.begin() as conn:
            result = await conn.execute(
                update(MessageRow).where(MessageRow.id == message_id).values(text="", deleted=True)
            )
            return result.rowcount > 0

    async def get_message(self, message_id: str) -> Message | None:
        """The message with this id (deleted ones included, with blank text), or None."""
        if self._writer is not None:
            pending = self._writer.pending_message_row(message_id)
            if pending is not None:
                return row_to_message(pending)
        async with self._engine.connect() as conn:
            row = (await conn.execute(_MESSAGE_SELECT.where(MessageRow.id == message_id))).first()
        return None if row is None else row_to_message(row._mapping)

    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: datetime | None = None
    ) -> list[Message]:
        """The last ``limit`` undeleted messages of a channel (from ``since``), oldest first."""
        q = _MESSAGE_SELECT.where(
            MessageRow.channel_id == channel_id, MessageRow.deleted.is_(False)
        )
        if since is not None:
            q = q.where(MessageRow.ts >= to_utc(since))
        q = q.order_by(MessageRow.ts.desc(), MessageRow.seq.desc()).limit(limit)
        if self._hot is not None:  # on the message path: one hop (hot.py)
            rows = await self._hot.read(lambda c: [r._mapping for r in c.execute(q)])
        else:
            async with self._engine.connect() as conn:
                rows = [r._mapping for r in await conn.execute(q)]
        found: dict[str, Mapping[Any, Any]] = {r["id"]: r for r in rows}
        if self._writer is not None:
            lo = None if since is None else to_utc(since)
            for r in self._writer.pending_channel_rows(channel_id):
                # A pending duplicate of a stored id will be ignored on flush: keep the stored.
                if not r["deleted"] and (lo is None or r["ts"] >= lo) and r["id"] not in found:
                    found[r["id"]] = r
        ordered = sorted(found.values(), key=lambda r: (to_utc(r["ts"]), r["seq"]))
        return [row_to_message(r) for r in ordered[-limit:]] if limit > 0 else []

    async def set_conversation(self, message_ids: Sequence[str], conversation_id: str) -> None:
        await self._flush_pending()
        async with self._engine.begin() as conn:
            for chunk in in_chunks(message_ids):
                await conn.execute(
                    update(MessageRow)
                    .where(MessageRow.id.in_(chunk))
                    .values(conversation_id=conversation_id)
                )

    async def mark_reflected(self, message_ids: Sequence[str]) -> None:
        """Record that the memory layer has reflected on these messages (never again)."""
        await self._flush_pending()
        async with self._engine.begin() as conn:
            for chunk in in_chunks(message_ids):
                await conn.execute(
                    update(MessageRow).where(MessageRow.id.in_(chunk)).values(reflected=True)
                )

    async def unreflected_messages(self, channel_id: str, limit: int = 200) -> list[Message]:
        """The oldest ``limit`` undeleted, not yet reflected messages, oldest first."""
        await self._flush_pending()
        q = (
            _MESSAGE_SELECT.where(
                MessageRow.channel_id == channel_id,
                MessageRow.reflected.is_(False),
                MessageRow.deleted.is_(False),
            )
            .order_by(MessageRow.ts, MessageRow.seq)
            .limit(limit)
        )
        async with self._engine.connect() as conn:
            return [row_to_message(r._mapping) for r in await conn.execute(q)]

    # --- reactions --------------------------------------------------------------------------

    async def add_reaction(self, message_id: str, user_id: str, emoji: str, at: datetime) -> None:
        """Record a reaction; repeating the same (message, user, emoji) is a no-op."""
        async with self._engine.begin() as conn:
            if await self._refused(conn, [user_id]):
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
        async with self._engine.connect() as conn:
            return [(r[0], r[1], r[2]) for r in await conn.execute(q)]

    # --- decisions --------------------------------------------------------------------------

    async def save_decision(self, d: Decision) -> None:
        await self.save_decisions([d])

    async def save_decisions(self, ds: Sequence[Decision]) -> None:
        if not ds:
            return
        async with self._engine.begin() as conn:
            await conn.execute(insert(DecisionRow), [decision_row(d) for d in ds])

    async def decision_for(self, message_id: str) -> dict[str, Any] | None:
        """The latest decision about a message, as a dict with its ``trace`` dict."""
        await self._flush_pending()
        q = (
            select(DecisionRow)
            .where(DecisionRow.message_id == message_id)
            .order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc())
            .limit(1)
        )
        return await self._one_decision(q)

    async def decisions_for(self, message_id: str) -> list[dict[str, Any]]:
        """Every decision about a message, oldest first (a later re-check adds one)."""
        await self._flush_pending()
        q = (
            select(DecisionRow)
            .where(DecisionRow.message_id == message_id)
            .order_by(DecisionRow.decided_at, DecisionRow.id)
        )
        async with self._engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [row_to_decision(r._mapping) for r in rows]

    async def latest_decision(self, channel_id: str | None = None) -> dict[str, Any] | None:
        await self._flush_pending()
        q = select(DecisionRow)
        if channel_id is not None:
            q = q.where(DecisionRow.channel_id == channel_id)
        q = q.order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc()).limit(1)
        return await self._one_decision(q)

    async def _one_decision(self, q: Any) -> dict[str, Any] | None:
        async with self._engine.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else row_to_decision(row._mapping)


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
