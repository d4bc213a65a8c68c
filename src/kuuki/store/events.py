"""Processed-event bookkeeping: handle each platform delivery exactly once.

Processed-event ids are mirrored in memory (up to ``event_cache_size`` of the most recent)
so that "have we handled this delivery?" is answered without a query on the hot path.
While the mirror holds every stored id the answer is exact from memory alone; once it
overflows, misses fall back to the database. The mirror assumes one process writes to the
database at a time — the normal deployment; a second writer would only be caught by the
table's primary key.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.store.engine import insert_ignore
from kuuki.store.schema import ProcessedEventRow
from kuuki.store.types import clean_text, to_utc


class EventStoreMixin:
    """Event de-duplication part of :class:`~kuuki.store.store.Store`."""

    _engine: AsyncEngine
    _events: dict[str, None]  # insertion-ordered: oldest first
    _events_complete: bool
    _event_cache_size: int

    async def _flush_pending(self) -> None:  # overridden by Store
        return None

    async def _load_event_cache(self) -> None:
        q = (
            select(ProcessedEventRow.event_id)
            .order_by(ProcessedEventRow.seen_at.desc())
            .limit(self._event_cache_size + 1)
        )
        async with self._engine.connect() as conn:
            ids = list((await conn.scalars(q)).all())
        self._events_complete = len(ids) <= self._event_cache_size
        self._events = dict.fromkeys(reversed(ids[: self._event_cache_size]))

    def _remember_event(self, event_id: str) -> None:
        self._events[event_id] = None
        if len(self._events) > 2 * self._event_cache_size:
            keep = list(self._events)[-self._event_cache_size :]
            self._events = dict.fromkeys(keep)
            self._events_complete = False

    async def _is_new_event(self, event_id: str) -> bool:
        if event_id in self._events:
            return False
        if self._events_complete:
            return True
        async with self._engine.connect() as conn:
            found = await conn.scalar(
                select(ProcessedEventRow.event_id).where(ProcessedEventRow.event_id == event_id)
            )
        return found is None

    async def mark_event(self, event_id: str, at: datetime) -> bool:
        """True if ``event_id`` is new (and now recorded), False if already handled."""
        eid = clean_text(event_id)
        if eid in self._events:
            return False
        async with self._engine.begin() as conn:
            stmt = insert_ignore(conn.dialect.name, ProcessedEventRow, ["event_id"]).values(
                event_id=eid, seen_at=to_utc(at)
            )
            new = (await conn.execute(stmt.returning(ProcessedEventRow.event_id))).first()
        self._remember_event(eid)
        return new is not None

    async def prune_events(self, before: datetime) -> int:
        """Forget processed-event ids older than ``before``; platforms never redeliver
        those, and the table would otherwise grow forever."""
        await self._flush_pending()
        async with self._engine.begin() as conn:
            result = await conn.execute(
                delete(ProcessedEventRow).where(ProcessedEventRow.seen_at < to_utc(before))
            )
        await self._load_event_cache()
        return int(result.rowcount)
