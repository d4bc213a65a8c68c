"""Channel policies as `/kuuki mode` changed them: one row per channel (a thread's
changes are its channel's), the values changed as JSON, who changed them and when. Read
once at start-up and laid over kuuki.toml (kuuki.settings.policy.PolicyBook); checked by
`kuuki doctor`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from kuuki.store.database import Database
from kuuki.store.engine import insert_stmt
from kuuki.store.schema import ChannelPolicyRow
from kuuki.store.types import to_utc


@dataclass(frozen=True, slots=True)
class StoredPolicy:
    channel_id: str
    values: Mapping[str, Any]
    changed_by: str
    changed_at: datetime


class Policies:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> list[StoredPolicy]:
        async with self._db.engine.connect() as conn:
            query = select(ChannelPolicyRow).order_by(ChannelPolicyRow.channel_id)
            rows = await conn.execute(query)
            return [
                StoredPolicy(r.channel_id, dict(r.policy_values or {}), r.changed_by,
                             to_utc(r.changed_at))
                for r in rows
            ]

    async def save(
        self, channel_id: str, values: Mapping[str, Any], changed_by: str, at: datetime
    ) -> None:
        """Keep ``values`` as the channel's changes (replacing earlier ones); none: remove."""
        async with self._db.engine.begin() as conn:
            if not values:
                await conn.execute(
                    delete(ChannelPolicyRow).where(ChannelPolicyRow.channel_id == channel_id))
                return
            row = {"channel_id": channel_id, "policy_values": dict(values),
                   "changed_by": changed_by, "changed_at": at}
            stmt = insert_stmt(conn.dialect.name, ChannelPolicyRow).values(**row)
            await conn.execute(stmt.on_conflict_do_update(
                index_elements=["channel_id"],
                set_={k: v for k, v in row.items() if k != "channel_id"}))
