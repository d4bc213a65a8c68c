"""Memories, facts and the proactive ledger (forgetting a person: ``forgetting.py``).

Split out of ``store.py`` to keep one concept per module; :class:`MemoryStoreMixin` is mixed
into :class:`~kuuki.store.store.Store` and relies only on its engine.

Visibility defaults to PRIVATE everywhere here: a memory whose caller forgot to say where
it may be used must fail closed rather than leak into other channels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from kuuki.domain import Visibility
from kuuki.store.engine import insert_stmt
from kuuki.store.records import (
    FactRecord,
    MemoryRecord,
    embedding_bytes,
    row_to_fact,
    row_to_memory,
)
from kuuki.store.schema import MEMORY_SCOPES, FactRow, MemoryRow, ProactiveLedgerRow
from kuuki.store.types import to_utc


def _check_scope(scope: str) -> None:
    if scope not in MEMORY_SCOPES:
        raise ValueError(f"memory scope {scope!r} is not one of {', '.join(MEMORY_SCOPES)}")


class MemoryStoreMixin:
    """Memory, fact and ledger operations of :class:`~kuuki.store.store.Store`."""

    _engine: AsyncEngine

    async def _flush_pending(self) -> None:  # overridden by Store
        return None

    @staticmethod
    async def _refused(conn: AsyncConnection, user_ids: Iterable[str]) -> bool:
        raise NotImplementedError  # kuuki.store.forgetting.ForgetMixin

    # --- memories ---------------------------------------------------------------------------

    async def set_memory(
        self,
        scope: str,
        scope_id: str,
        kind: str,
        content: Any,
        *,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        source_channel_id: str | None = None,
        source_user_ids: Sequence[str] = (),
        at: datetime | None = None,
    ) -> bool:
        """Create or replace the memory document for (scope, scope_id, kind); False, and
        nothing written, when it is about or from a forgotten person
        (kuuki.store.forgetting)."""
        _check_scope(scope)
        values = {
            "scope": scope,
            "scope_id": scope_id,
            "kind": kind,
            "content": content,
            "visibility": str(visibility),
            "source_channel_id": source_channel_id,
            "source_user_ids": list(source_user_ids),
            "workspace": workspace,
            "updated_at": to_utc(at or datetime.now(UTC)),
        }
        async with self._engine.begin() as conn:
            about = [scope_id] if scope == "user" else []
            if await self._refused(conn, [*about, *source_user_ids]):
                return False
            stmt = insert_stmt(conn.dialect.name, MemoryRow).values(**values)
            keys = ("scope", "scope_id", "kind")
            stmt = stmt.on_conflict_do_update(
                index_elements=list(keys),
                set_={k: stmt.excluded[k] for k in values if k not in keys},
            )
            await conn.execute(stmt)
        return True

    async def get_memory(self, scope: str, scope_id: str, kind: str) -> MemoryRecord | None:
        _check_scope(scope)
        async with self._engine.connect() as conn:
            row = (
                await conn.execute(
                    select(MemoryRow).where(
                        MemoryRow.scope == scope,
                        MemoryRow.scope_id == scope_id,
                        MemoryRow.kind == kind,
                    )
                )
            ).first()
        return None if row is None else row_to_memory(row._mapping)

    async def memories(
        self, scope: str, scope_id: str | None = None, *, kind: str | None = None
    ) -> list[MemoryRecord]:
        """Memories in ``scope`` (optionally one scope id and/or kind), oldest update first."""
        _check_scope(scope)
        q = select(MemoryRow).where(MemoryRow.scope == scope)
        if scope_id is not None:
            q = q.where(MemoryRow.scope_id == scope_id)
        if kind is not None:
            q = q.where(MemoryRow.kind == kind)
        async with self._engine.connect() as conn:
            rows = await conn.execute(q.order_by(MemoryRow.updated_at, MemoryRow.id))
            return [row_to_memory(r._mapping) for r in rows]

    async def delete_memory(self, scope: str, scope_id: str, kind: str) -> bool:
        _check_scope(scope)
        async with self._engine.begin() as conn:
            result = await conn.execute(
                delete(MemoryRow).where(
                    MemoryRow.scope == scope,
                    MemoryRow.scope_id == scope_id,
                    MemoryRow.kind == kind,
                )
            )
            return result.rowcount > 0

    # --- facts ------------------------------------------------------------------------------

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
        async with self._engine.begin() as conn:
            if await self._refused(conn, source_user_ids):
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
        async with self._engine.connect() as conn:
            rows = await conn.execute(q.order_by(FactRow.id))
            return [row_to_fact(r._mapping) for r in rows]

    async def touch_fact(self, fact_id: int, at: datetime) -> None:
        async with self._engine.begin() as conn:
            await conn.execute(
                update(FactRow).where(FactRow.id == fact_id).values(last_used_at=to_utc(at))
            )

    async def record_proactive(self, fact_id: int, channel_id: str, at: datetime) -> None:
        """Note that ``fact_id`` was volunteered in ``channel_id``."""
        async with self._engine.begin() as conn:
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
        async with self._engine.connect() as conn:
            return int(await conn.scalar(q) or 0)
