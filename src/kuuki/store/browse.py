"""The decisions as people read them: `kuuki why` (every decision about a message, the
latest one) and the operator dashboard (the latest decisions with the message each was
about). Read-only; the page decides what of a message's text it may show."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from kuuki.store.database import Database, Queued
from kuuki.store.records import DECISION_KEYS, row_to_decision
from kuuki.store.schema import ChannelRow, DecisionRow, MessageRow, UserRow

MAX_DECISIONS = 200

_SELECT = (
    select(
        DecisionRow,
        MessageRow.text.label("message_text"),
        MessageRow.ts.label("message_ts"),
        UserRow.name.label("message_user"),
        ChannelRow.name.label("channel_name"),
        ChannelRow.visibility.label("channel_visibility"),
    )
    .join_from(DecisionRow, MessageRow, MessageRow.id == DecisionRow.message_id, isouter=True)
    .join(UserRow, UserRow.id == MessageRow.user_id, isouter=True)
    .join(ChannelRow, ChannelRow.id == DecisionRow.channel_id, isouter=True)
)
_EXTRA = ("message_text", "message_ts", "message_user", "channel_name", "channel_visibility")


class Browse:
    """The decisions, for people (module doc)."""

    def __init__(self, db: Database, queued: Queued) -> None:
        self._db = db
        self._queued = queued

    async def recent_decisions(
        self, limit: int = 50, *, channel_id: str | None = None,
        before: datetime | None = None, message_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The newest decisions first (at most `MAX_DECISIONS`), each a decision record
        (kuuki.store.records.row_to_decision) plus its message's text, author, time and its
        channel's name and visibility (None where the store has no such row)."""
        await self._queued.settle()
        q = _SELECT
        if channel_id is not None:
            q = q.where(DecisionRow.channel_id == channel_id)
        if before is not None:
            q = q.where(DecisionRow.decided_at < before)
        if message_id is not None:
            q = q.where(DecisionRow.message_id == message_id)
        q = q.order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc())
        q = q.limit(max(1, min(limit, MAX_DECISIONS)))
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        out = []
        for r in rows:
            m = r._mapping
            record = row_to_decision({k: m[k] for k in DECISION_KEYS})
            record.update({k: m[k] for k in _EXTRA})
            out.append(record)
        return out

    async def decision_for(self, message_id: str) -> dict[str, Any] | None:
        """The latest decision about a message, as a dict with its ``trace`` dict."""
        await self._queued.settle()
        q = (
            select(DecisionRow)
            .where(DecisionRow.message_id == message_id)
            .order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc())
            .limit(1)
        )
        return await self._one_decision(q)

    async def decisions_for(self, message_id: str) -> list[dict[str, Any]]:
        """Every decision about a message, oldest first (a later re-check adds one)."""
        await self._queued.settle()
        q = (
            select(DecisionRow)
            .where(DecisionRow.message_id == message_id)
            .order_by(DecisionRow.decided_at, DecisionRow.id)
        )
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [row_to_decision(r._mapping) for r in rows]

    async def latest_decision(self, channel_id: str | None = None) -> dict[str, Any] | None:
        await self._queued.settle()
        q = select(DecisionRow)
        if channel_id is not None:
            q = q.where(DecisionRow.channel_id == channel_id)
        q = q.order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc()).limit(1)
        return await self._one_decision(q)

    async def _one_decision(self, q: Any) -> dict[str, Any] | None:
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else row_to_decision(row._mapping)
