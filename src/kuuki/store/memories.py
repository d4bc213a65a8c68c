"""Memory documents: a channel's summary, a person's profile, a workspace's notes.

One document per (scope, scope id, kind), replaced whole. Visibility defaults to PRIVATE:
a memory whose caller forgot to say where it may be used must fail closed rather than
leak into other channels. A document about or from a forgotten person is never written
(``forgetting.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from kuuki.domain import Visibility
from kuuki.store.database import Database
from kuuki.store.engine import insert_stmt
from kuuki.store.forgetting import Erasure, tombstones
from kuuki.store.records import MemoryDocument, MemoryRecord, row_to_memory
from kuuki.store.schema import MEMORY_SCOPES, MemoryRow
from kuuki.store.types import to_utc


def _check_scope(scope: str) -> None:
    if scope not in MEMORY_SCOPES:
        raise ValueError(f"memory scope {scope!r} is not one of {', '.join(MEMORY_SCOPES)}")


class Memories:
    """The memory documents (module doc)."""

    def __init__(self, db: Database, forgetting: Erasure) -> None:
        self._db = db
        self._forgetting = forgetting

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
        async with self._db.engine.begin() as conn:
            about = [scope_id] if scope == "user" else []
            if await self._forgetting.refused(conn, [*about, *source_user_ids]):
                return False
            await _upsert(conn, [values])
        return True

    async def set_memories(
        self,
        scope: str,
        kind: str,
        documents: Sequence[MemoryDocument],
        *,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        at: datetime | None = None,
    ) -> int:
        """`set_memory` for many documents of one scope and kind in one transaction (a
        flush of every changed profile is one commit, not one a person); a document about
        or from a forgotten person is not written. Returns how many were written."""
        _check_scope(scope)
        updated_at = to_utc(at or datetime.now(UTC))
        async with self._db.engine.begin() as conn:
            gone = await tombstones(conn)
            rows = [
                {
                    "scope": scope, "scope_id": d.scope_id, "kind": kind, "content": d.content,
                    "visibility": str(visibility), "source_channel_id": None,
                    "source_user_ids": list(d.source_user_ids), "workspace": workspace,
                    "updated_at": updated_at,
                }
                for d in documents
                if gone.isdisjoint([*([d.scope_id] if scope == "user" else []),
                                    *d.source_user_ids])
            ]
            if rows:
                await _upsert(conn, rows)
        return len(rows)

    async def get_memory(self, scope: str, scope_id: str, kind: str) -> MemoryRecord | None:
        _check_scope(scope)
        async with self._db.engine.connect() as conn:
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
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(q.order_by(MemoryRow.updated_at, MemoryRow.id))
            return [row_to_memory(r._mapping) for r in rows]

    async def delete_memory(self, scope: str, scope_id: str, kind: str) -> bool:
        _check_scope(scope)
        async with self._db.engine.begin() as conn:
            result = await conn.execute(
                delete(MemoryRow).where(
                    MemoryRow.scope == scope,
                    MemoryRow.scope_id == scope_id,
                    MemoryRow.kind == kind,
                )
            )
            return result.rowcount > 0


async def _upsert(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Create or replace memory documents by (scope, scope_id, kind): one statement for
    one document or for a whole flush."""
    stmt = insert_stmt(conn.dialect.name, MemoryRow)
    keys = ("scope", "scope_id", "kind")
    stmt = stmt.on_conflict_do_update(
        index_elements=list(keys),
        set_={k: stmt.excluded[k] for k in rows[0] if k not in keys},
    )
    await conn.execute(stmt, rows)
