"""The :class:`Store`: kuuki's persistent state behind one async API.

All methods take and return domain values (``kuuki.domain``); rows never leak out. Writes
that are not on the ingest hot path commit immediately; the hot path goes through
:attr:`Store.writer` (see ``writer.py``).

Concerns with their own state live in mixins: the inbox of events (``events.py``), what
catching up after a restart asks (``history.py``), memories/facts (``memories.py``), and the
message path's writes, the writer's batches among them (``messages.py``, which leaves out what
forgetting (``forgetting.py``) must keep out).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Self

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.clock import Clock
from kuuki.domain import Channel, Decision, Message, User
from kuuki.errors import StoreError
from kuuki.settings.urls import display_url, ensure_directory, normalise_url
from kuuki.store import fastwrite, migrations
from kuuki.store.browse import BrowseMixin
from kuuki.store.engine import create_engine, in_chunks, insert_ignore
from kuuki.store.events import EventStoreMixin
from kuuki.store.history import HistoryMixin
from kuuki.store.hot import HotConnection
from kuuki.store.memories import MemoryStoreMixin
from kuuki.store.messages import MessageWrites
from kuuki.store.reading import open_read_only
from kuuki.store.records import (
    MESSAGE_COLUMNS,
    decision_row,
    row_to_channel,
    row_to_decision,
    row_to_message,
)
from kuuki.store.schema import (
    ChannelRow,
    DecisionRow,
    MessageRow,
    ReactionRow,
    UserRow,
)
from kuuki.store.types import to_utc
from kuuki.store.writer import BatchedWriter
from kuuki.text.secrets import remember

_MESSAGE_SELECT = select(
    *(MessageRow.__table__.c[c] for c in MESSAGE_COLUMNS),
    UserRow.name.label("user_name"),
    UserRow.is_bot.label("user_is_bot"),
).join_from(MessageRow, UserRow, MessageRow.user_id == UserRow.id)


class Store(EventStoreMixin, HistoryMixin, MessageWrites, MemoryStoreMixin, BrowseMixin):
    """Persistent chat state on SQLite or PostgreSQL. Create with :meth:`Store.open`."""

    def __init__(
        self,
        engine: AsyncEngine,
        url: URL,
        *,
        event_cache_size: int = 10_000,
        batch_size: int = 500,
        batch_delay: float = 0.05,
        clock: Clock | None = None,
        read_only: bool = False,
    ) -> None:
        self._engine = engine
        self.read_only = read_only
        self.url = url
        # The password joins the secrets every error is cleaned of (kuuki.text.secrets).
        remember(None if url.password is None else str(url.password))
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
        self._clock = clock  # the writer's (None: real time)
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
        clock: Clock | None = None,
    ) -> Self:
        """Open (creating if needed) and migrate the database at ``url``.

        ``None`` means the default SQLite file; see :mod:`kuuki.settings.urls` for the rest.
        ``batch_size`` and ``batch_delay`` (seconds, of ``clock``: real time unless a test
        gives one) configure :attr:`writer`.
        """
        parsed = normalise_url(url)
        ensure_directory(parsed)
        engine = create_engine(parsed)
        store = cls(
            engine,
            parsed,
            event_cache_size=event_cache_size,
            batch_size=batch_size,
            batch_delay=batch_delay,
            clock=clock,
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

    @classmethod
    async def open_to_read(cls, url: str | None = None) -> Self:
        """Open the store at ``url`` only to read it: nothing is created, migrated or
        changed, and one that this kuuki cannot read as it is — no file, an empty or
        foreign database, an older or newer schema — is refused with a
        :class:`StoreError` that says which (``kuuki.store.reading``)."""
        parsed, engine = await open_read_only(url)
        return cls(engine, parsed, read_only=True)

    async def _load_seq(self) -> None:
        async with self._engine.connect() as conn:
            self._seq = int(await conn.scalar(select(func.max(MessageRow.seq))) or 0)

    async def migrate(self) -> list[str]:
        """Apply pending migrations; return the names of those applied."""
        return await migrations.migrate(self._engine)

    @property
    def closed(self) -> bool:
        return self._closed

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
            if self.read_only:
                raise StoreError(f"{self.url_for_display} was opened only to read")
            self._writer = BatchedWriter(self, max_items=self._batch[0],
                                         max_delay=self._batch[1], clock=self._clock)
        return self._writer

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
