"""The inbox: every event taken in, kept until it is handled (exactly once, across crashes).

`admit_events` is the intake's one write: the events of a group commit and their channels,
in one transaction (on SQLite, new or changed channels are upserted in one of their own
just before), before the platform hears that they arrived. An id already stored is
not new (that answer is exact: the table's primary key decides). Handling an event marks
it ``handled`` and drops its payload in the writer's batch (``writer.py``), in the same
transaction as the rows handling it wrote; `pending_events` is what a crash left between
the two, for `Engine.recover`.

The older `mark_event` (an id only, no payload) remains for callers outside the engine.
Its in-memory mirror of recent ids (up to ``event_cache_size``) answers without a query
while it holds every stored id; once it overflows, misses fall back to the database. The
mirror assumes one process writes to the database at a time — the normal deployment; a
second writer would only be caught by the table's primary key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update

from kuuki.domain import ChatEvent
from kuuki.errors import StoreError
from kuuki.store import fastwrite
from kuuki.store.database import Database, Queued
from kuuki.store.engine import in_chunks, insert_ignore
from kuuki.store.records import event_payload, payload_event
from kuuki.store.roster import Roster
from kuuki.store.schema import ProcessedEventRow
from kuuki.store.types import clean_text, to_utc

_INBOX_KEYS = ("event_id", "seen_at", "channel_id", "payload", "handled", "arrival")


class EventInbox:
    """The inbox of events (the module doc), and the ids of events seen before."""

    def __init__(
        self, db: Database, queued: Queued, roster: Roster, *, event_cache_size: int = 10_000
    ) -> None:
        self._db = db
        self._queued = queued
        self._roster = roster
        self._events: dict[str, None] = {}  # insertion-ordered: oldest first
        self._events_complete = True
        self._event_cache_size = event_cache_size
        self._arrival = 0
        self._admit_plan: fastwrite.Prepared | None = None

    async def load(self) -> None:
        """Read what the mirror of seen ids and the arrival numbers start from."""
        await self._load_event_cache()
        await self._load_arrival()

    # --- the inbox ----------------------------------------------------------------------------

    async def _load_arrival(self) -> None:
        async with self._db.engine.connect() as conn:
            self._arrival = int(await conn.scalar(select(func.max(ProcessedEventRow.arrival))) or 0)

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        """Store ``events`` and their channels; the ids that were new.

        Raises whatever the database raises (the caller then must not acknowledge them).
        """
        rows: list[dict[str, Any]] = []
        for e in events:
            self._arrival += 1
            rows.append({
                "event_id": clean_text(e.event_id),
                "seen_at": to_utc(e.at),
                "channel_id": clean_text(e.channel.id),
                "payload": event_payload(e),
                "handled": False,
                "arrival": self._arrival,
            })
        changed = self._roster.changed(e.channel for e in events)
        try:
            if self._db.dialect == "sqlite":
                if changed:  # first, in a transaction of their own: an upsert may repeat
                    async with self._db.engine.begin() as conn:
                        await self._roster.write_channels(conn, list(changed.values()))
                new = await self._admit_sqlite(rows)
            else:
                async with self._db.engine.begin() as conn:
                    if changed:
                        await self._roster.write_channels(conn, list(changed.values()))
                    stmt = insert_ignore(conn.dialect.name, ProcessedEventRow, ["event_id"])
                    result = await conn.execute(stmt.returning(ProcessedEventRow.event_id), rows)
                    new = {str(r[0]) for r in result}
        except Exception as exc:
            self._arrival -= len(rows)
            raise StoreError(f"cannot take events in: {self._db.scrub(exc)}") from exc
        self._roster.noted(changed)
        return new

    async def _admit_sqlite(self, rows: list[dict[str, Any]]) -> set[str]:
        # The same statement, as plain tuples, and the whole transaction as one job on the
        # intake's own connection (hot.py): the intake is on every event's path.
        plan = self._admit_plan
        if plan is None:
            stmt = insert_ignore("sqlite", ProcessedEventRow, ["event_id"])
            plan = self._admit_plan = fastwrite.prepare(stmt, _INBOX_KEYS,
                                                        self._db.engine.dialect)
        assert self._db.hot is not None  # opened with every SQLite store
        new: set[str] = await self._db.hot.run(
            fastwrite.admit, plan.sql, plan.rows(rows), "event_id", plan.keys.index("event_id")
        )
        return new

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        """Events taken in but not yet handled (a crash came between), in arrival order;
        only those of ``platform``'s channels, or of one channel, when given."""
        await self._queued.settle()  # handled marks waiting in the writer count
        q = (
            select(ProcessedEventRow.payload)
            .where(ProcessedEventRow.handled.is_(False), ProcessedEventRow.payload.is_not(None))
            .order_by(ProcessedEventRow.arrival)
        )
        if channel_id is not None:
            q = q.where(ProcessedEventRow.channel_id == clean_text(channel_id))
        async with self._db.engine.connect() as conn:
            payloads = list((await conn.scalars(q)).all())
        events = [payload_event(p) for p in payloads if isinstance(p, Mapping)]
        return [e for e in events if platform is None or e.channel.platform == platform]

    async def taken_in(self, event_ids: Sequence[str]) -> list[str]:
        """The ids among ``event_ids`` this store has already taken in (handled or not),
        in the order given: the engine would drop a new delivery of any of them."""
        await self._queued.settle()
        cleaned = {clean_text(e): e for e in event_ids}
        found: set[str] = set()
        async with self._db.engine.connect() as conn:
            for chunk in in_chunks(cleaned):
                q = select(ProcessedEventRow.event_id).where(ProcessedEventRow.event_id.in_(chunk))
                found.update((await conn.scalars(q)).all())
        return [original for key, original in cleaned.items() if key in found]

    async def mark_handled(self, event_ids: Sequence[str]) -> None:
        """Mark events handled now (the engine does it through the writer instead)."""
        if not event_ids:
            return
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(ProcessedEventRow)
                .where(ProcessedEventRow.event_id.in_([clean_text(e) for e in event_ids]))
                .values(handled=True, payload=None)
            )

    # --- ids only -----------------------------------------------------------------------------

    async def _load_event_cache(self) -> None:
        q = (
            select(ProcessedEventRow.event_id)
            .order_by(ProcessedEventRow.seen_at.desc())
            .limit(self._event_cache_size + 1)
        )
        async with self._db.engine.connect() as conn:
            ids = list((await conn.scalars(q)).all())
        self._events_complete = len(ids) <= self._event_cache_size
        self._events = dict.fromkeys(reversed(ids[: self._event_cache_size]))

    def remember_event(self, event_id: str) -> None:
        self._events[event_id] = None
        if len(self._events) > 2 * self._event_cache_size:
            keep = list(self._events)[-self._event_cache_size :]
            self._events = dict.fromkeys(keep)
            self._events_complete = False

    async def is_new_event(self, event_id: str) -> bool:
        if event_id in self._events:
            return False
        if self._events_complete:
            return True
        async with self._db.engine.connect() as conn:
            found = await conn.scalar(
                select(ProcessedEventRow.event_id).where(ProcessedEventRow.event_id == event_id)
            )
        return found is None

    async def mark_event(self, event_id: str, at: datetime) -> bool:
        """True if ``event_id`` is new (and now recorded as handled), False if seen before."""
        eid = clean_text(event_id)
        if eid in self._events:
            return False
        async with self._db.engine.begin() as conn:
            stmt = insert_ignore(conn.dialect.name, ProcessedEventRow, ["event_id"]).values(
                event_id=eid, seen_at=to_utc(at)
            )
            new = (await conn.execute(stmt.returning(ProcessedEventRow.event_id))).first()
        self.remember_event(eid)
        return new is not None

    async def prune_events(self, before: datetime) -> int:
        """Forget processed-event ids older than ``before``; platforms never redeliver
        those, and the table would otherwise grow forever."""
        await self._queued.settle()
        async with self._db.engine.begin() as conn:
            result = await conn.execute(
                delete(ProcessedEventRow).where(
                    ProcessedEventRow.seen_at < to_utc(before),
                    ProcessedEventRow.handled.is_(True),  # never an event still to handle
                )
            )
        await self._load_event_cache()
        return int(result.rowcount)
