"""Fact maintenance the memory layer needs beyond :class:`MemoryStoreMixin`.

Merging near-duplicate facts, the per-channel cap and forgetting decayed facts need to
update and delete facts by id, and proactive talk needs a channel's ledger at once. These
work on any object with the Store's public ``engine`` and need no schema change; they can
be mixed into ``Store`` later as methods of :class:`MemoryExtraMixin`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.store.engine import in_chunks
from kuuki.store.forgetting import tombstones
from kuuki.store.schema import FactRow, ProactiveLedgerRow
from kuuki.store.types import to_utc


class HasEngine(Protocol):
    @property
    def engine(self) -> AsyncEngine: ...


async def update_fact(
    store: HasEngine,
    fact_id: int,
    *,
    source_user_ids: Sequence[str],
    keywords: Sequence[str],
    confidence: float,
    created_at: datetime,
) -> None:
    """Rewrite the mergeable fields of a fact (a near-duplicate was learned again). A
    forgotten person is never added to its sources (kuuki.store.forgetting)."""
    async with store.engine.begin() as conn:
        gone = await tombstones(conn)
        await conn.execute(
            update(FactRow)
            .where(FactRow.id == fact_id)
            .values(
                source_user_ids=[u for u in source_user_ids if u not in gone],
                keywords=list(keywords),
                confidence=float(confidence),
                created_at=to_utc(created_at),
            )
        )


async def delete_facts(store: HasEngine, fact_ids: Sequence[int]) -> int:
    """Delete facts (and their ledger rows); return how many facts were deleted."""
    removed = 0
    async with store.engine.begin() as conn:
        for chunk in in_chunks(int(x) for x in fact_ids):
            # SQLite may run without foreign-key enforcement: do the cascade by hand.
            await conn.execute(
                delete(ProactiveLedgerRow).where(ProactiveLedgerRow.fact_id.in_(chunk))
            )
            result = await conn.execute(delete(FactRow).where(FactRow.id.in_(chunk)))
            removed += result.rowcount
    return removed


async def proactive_fact_ids(store: HasEngine, channel_id: str) -> set[int]:
    """Every fact ever volunteered in ``channel_id``."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            select(ProactiveLedgerRow.fact_id).where(ProactiveLedgerRow.channel_id == channel_id)
        )
        return {int(r[0]) for r in rows}


async def proactive_ledger(
    store: HasEngine, channel_id: str, *, limit: int = 50
) -> list[tuple[int, datetime]]:
    """The facts volunteered in ``channel_id`` and when, newest first (the memory panel)."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            select(ProactiveLedgerRow.fact_id, ProactiveLedgerRow.at)
            .where(ProactiveLedgerRow.channel_id == channel_id)
            .order_by(ProactiveLedgerRow.at.desc())
            .limit(limit)
        )
        return [(int(r[0]), to_utc(r[1])) for r in rows]


class MemoryExtraMixin:
    """The functions above as Store methods, for when the store engineer mixes them in."""

    @property
    def engine(self) -> AsyncEngine:  # pragma: no cover - provided by Store
        raise NotImplementedError

    async def update_fact(
        self,
        fact_id: int,
        *,
        source_user_ids: Sequence[str],
        keywords: Sequence[str],
        confidence: float,
        created_at: datetime,
    ) -> None:
        await update_fact(
            self,
            fact_id,
            source_user_ids=source_user_ids,
            keywords=keywords,
            confidence=confidence,
            created_at=created_at,
        )

    async def delete_facts(self, fact_ids: Sequence[int]) -> int:
        return await delete_facts(self, fact_ids)

    async def proactive_fact_ids(self, channel_id: str) -> set[int]:
        return await proactive_fact_ids(self, channel_id)
