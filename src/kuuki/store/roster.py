"""The channels and people the store knows: their rows, written by the other parts too.

A channel is written when an event of it is taken in (the inbox, ``inbox.py``) or by an
adapter that announces it (`upsert_channel`); a message of a channel never announced
leaves a placeholder row (the message writes, ``messages.py``). People are written with
their messages, newest sighting wins the name. What was last written of each channel is
kept here, so that a channel is written again only when it changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncConnection

from kuuki.domain import Channel, User, Visibility
from kuuki.store.database import Database
from kuuki.store.engine import insert_ignore, insert_stmt
from kuuki.store.forgetting import Erasure
from kuuki.store.records import channel_row, row_to_channel
from kuuki.store.schema import ChannelRow, UserRow
from kuuki.store.types import to_utc


class Roster:
    """Channels and users: reads, and the writes the other parts share."""

    def __init__(self, db: Database, forgetting: Erasure) -> None:
        self._db = db
        self._forgetting = forgetting
        self._known: set[str] = set()  # channels with a row (real or placeholder)
        self._written: dict[str, Channel] = {}  # as last written from a Channel

    # --- channels -----------------------------------------------------------------------------

    async def upsert_channel(self, ch: Channel) -> None:
        async with self._db.engine.begin() as conn:
            await self.write_channels(conn, [ch])
        self.noted({ch.id: ch})

    async def channels(self) -> list[Channel]:
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(select(ChannelRow).order_by(ChannelRow.id))
            return [row_to_channel(r._mapping) for r in rows]

    async def get_channel(self, channel_id: str) -> Channel | None:
        async with self._db.engine.connect() as conn:
            row = (
                await conn.execute(select(ChannelRow).where(ChannelRow.id == channel_id))
            ).first()
        return None if row is None else row_to_channel(row._mapping)

    def changed(self, channels: Iterable[Channel]) -> dict[str, Channel]:
        """Those of ``channels`` that differ from what was last written of them."""
        return {c.id: c for c in channels if self._written.get(c.id) != c}

    def noted(self, written: dict[str, Channel]) -> None:
        """``written`` was committed."""
        self._written.update(written)
        self._known.update(written)

    def unknown(self, channel_ids: Iterable[str]) -> set[str]:
        """Those of ``channel_ids`` with no row written by this process yet."""
        return set(channel_ids) - self._known

    def known(self, channel_ids: Iterable[str]) -> None:
        self._known.update(channel_ids)

    @staticmethod
    async def write_channels(conn: AsyncConnection, channels: Sequence[Channel]) -> None:
        for ch in channels:
            row = channel_row(ch)
            stmt = insert_stmt(conn.dialect.name, ChannelRow).values(**row)
            stmt = stmt.on_conflict_do_update(
                index_elements=["id"], set_={k: stmt.excluded[k] for k in row if k != "id"}
            )
            await conn.execute(stmt)

    @staticmethod
    async def placeholders(conn: AsyncConnection, channel_ids: set[str]) -> None:
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
                for c in sorted(channel_ids)
            ],
        )

    # --- people -------------------------------------------------------------------------------

    async def upsert_user(self, u: User, seen_at: datetime) -> None:
        async with self._db.engine.begin() as conn:
            if await self._forgetting.refused(conn, [u.id]):
                return
            await self.write_users(
                conn, [{"id": u.id, "name": u.name, "is_bot": u.is_bot, "seen": to_utc(seen_at)}]
            )

    async def get_user(self, user_id: str) -> User | None:
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(select(UserRow).where(UserRow.id == user_id))).first()
        return None if row is None else User(row.id, row.name, bool(row.is_bot))

    async def user_seen(self, user_id: str) -> tuple[datetime, datetime] | None:
        """(first seen, last seen) for ``user_id``."""
        async with self._db.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(UserRow.first_seen, UserRow.last_seen).where(UserRow.id == user_id)
                )
            ).first()
        return None if row is None else (row[0], row[1])

    @staticmethod
    async def write_users(conn: AsyncConnection, users: list[dict[str, Any]]) -> None:
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
        await conn.execute(user_upsert(conn.dialect.name), rows)


def user_upsert(dialect: str) -> Any:
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
