"""Facts the bot learned, and the ledger of those it brought up on its own.

Facts are merged when learned again (`update_fact`), capped per channel and forgotten
when decayed (`delete_facts`); the proactive ledger records which fact was volunteered
where and when. A fact with a forgotten person among its sources is never written, and a
forgotten person is never added to a fact's sources (``forgetting.py``). Visibility
defaults to PRIVATE, as for memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, func, insert, select, update

from kuuki.domain import Visibility
from kuuki.store.database import Database
from kuuki.store.engine import in_chunks, insert_stmt
from kuuki.store.forgetting import Erasure, tombstones
from kuuki.store.records import FactRecord, embedding_bytes, row_to_fact
from kuuki.store.schema import FactRow, ProactiveLedgerRow
from kuuki.store.types import to_utc


class Facts:
    """Facts and the proactive ledger (module doc)."""

    def __init__(self, db: Database, forgetting: Erasure) -> None:
        self._db = db
        self._forgetting = forgetting

    async def add_fact(
        self,
        content: str,
        *,
        source_channel_id: str | None,
        source_user_ids: Sequence[str],
        keywords: Sequence[str] = (),
        embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
        confidence: float = 1.0,
        shareable: bool = True,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        at: datetime | None = None,
    ) -> int:
        """Store a fact and return its id; 0 (nothing stored) when one of its sources is a
        forgotten person (kuuki.store.forgetting)."""
        values = {
            "content": content,
            "source_channel_id": source_channel_id,
            "source_user_ids": list(source_user_ids),
            "keywords": list(keywords),
            "embedding": embedding_bytes(embedding),
            "confidence": float(confidence),
            "shareable": shareable,
            "visibility": str(visibility),
            "workspace": workspace,
            "created_at": to_utc(at or datetime.now(UTC)),
            "last_used_at": None,
        }
        async with self._db.engine.begin() as conn:
            if await self._forgetting.refused(conn, source_user_ids):
                return 0
            stmt = insert_stmt(conn.dialect.name, FactRow).values(**values)
            fact_id = await conn.scalar(stmt.returning(FactRow.id))
        assert fact_id is not None
        return int(fact_id)

    async def facts(
        self, *, workspace: str | None = None, shareable_only: bool = False
    ) -> list[FactRecord]:
        q = select(FactRow)
        if workspace is not None:
            q = q.where(FactRow.workspace == workspace)
        if shareable_only:
            q = q.where(FactRow.shareable.is_(True))
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(q.order_by(FactRow.id))
            return [row_to_fact(r._mapping) for r in rows]

    async def touch_fact(self, fact_id: int, at: datetime) -> None:
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(FactRow).where(FactRow.id == fact_id).values(last_used_at=to_utc(at))
            )

    async def record_proactive(self, fact_id: int, channel_id: str, at: datetime) -> None:
        """Note that ``fact_id`` was volunteered in ``channel_id``."""
        async with self._db.engine.begin() as conn:
            await conn.execute(
                insert(ProactiveLedgerRow).values(
                    fact_id=fact_id, channel_id=channel_id, at=to_utc(at)
                )
            )

    async def proactive_count(
        self, channel_id: str, since: datetime, *, fact_id: int | None = None
    ) -> int:
        """How many proactive uses in ``channel_id`` since ``since`` (optionally of one fact)."""
        q = select(func.count()).where(
            ProactiveLedgerRow.channel_id == channel_id, ProactiveLedgerRow.at >= to_utc(since)
        )
        if fact_id is not None:
            q = q.where(ProactiveLedgerRow.fact_id == fact_id)
        async with self._db.engine.connect() as conn:
            return int(await conn.scalar(q) or 0)

    async def update_fact(
        self,
        fact_id: int,
        *,
        source_user_ids: Sequence[str],
        keywords: Sequence[str],
        confidence: float,
        created_at: datetime,
    ) -> None:
        """Rewrite the mergeable fields of a fact (a near-duplicate was learned again). A
        forgotten person is never added to its sources (kuuki.store.forgetting)."""
        async with self._db.engine.begin() as conn:
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

    async def delete_facts(self, fact_ids: Sequence[int]) -> int:
        """Delete facts (and their ledger rows); return how many facts were deleted."""
        removed = 0
        async with self._db.engine.begin() as conn:
            for chunk in in_chunks(int(x) for x in fact_ids):
                # SQLite may run without foreign-key enforcement: do the cascade by hand.
                await conn.execute(
                    delete(ProactiveLedgerRow).where(ProactiveLedgerRow.fact_id.in_(chunk))
                )
                result = await conn.execute(delete(FactRow).where(FactRow.id.in_(chunk)))
                removed += result.rowcount
        return removed

    async def proactive_fact_ids(self, channel_id: str) -> set[int]:
        """Every fact ever volunteered in ``channel_id``."""
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(select(ProactiveLedgerRow.fact_id).where(
                ProactiveLedgerRow.channel_id == channel_id))
            return {int(r[0]) for r in rows}

    async def proactive_ledger(
        self, channel_id: str, *, limit: int = 50
    ) -> list[tuple[int, datetime]]:
        """The facts volunteered in ``channel_id`` and when, newest first (the memory panel)."""
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(
                select(ProactiveLedgerRow.fact_id, ProactiveLedgerRow.at)
                .where(ProactiveLedgerRow.channel_id == channel_id)
                .order_by(ProactiveLedgerRow.at.desc())
                .limit(limit)
            )
            return [(int(r[0]), to_utc(r[1])) for r in rows]
