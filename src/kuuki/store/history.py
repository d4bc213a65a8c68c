"""What catching up after a restart asks the store.

After a crash or an outage the platform adapters read what the channels said while the bot
was away, starting from the last message stored that the bot did not write itself
(`last_message`, `active_threads`); the
engine then answers the addressed messages among them that have no decision yet
(`decided`) and that the bot did not answer before the crash (`answered`: a message of the
bot's replying to it, or a reaction of the bot's on it, both of which the catch-up reads
back from the platform). The channels known and the events a crash left in the inbox
are asked here too, of the roster and the inbox: an adapter catching up is handed this
part alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from kuuki.domain import Channel, ChatEvent, Message
from kuuki.store.database import Database, Queued
from kuuki.store.engine import in_chunks
from kuuki.store.inbox import EventInbox
from kuuki.store.records import row_to_message
from kuuki.store.roster import Roster
from kuuki.store.schema import DecisionRow, MessageRow, ReactionRow, UserRow
from kuuki.store.types import to_utc

_SELECT = select(
    MessageRow,
    UserRow.name.label("user_name"),
    UserRow.is_bot.label("user_is_bot"),
).join_from(MessageRow, UserRow, MessageRow.user_id == UserRow.id)


class StoredHistory:
    """What catching up asks (module doc)."""

    def __init__(self, db: Database, queued: Queued, roster: Roster, inbox: EventInbox) -> None:
        self._db = db
        self._queued = queued
        self._roster = roster
        self._inbox = inbox

    async def channels(self) -> list[Channel]:
        """Every channel the store knows (the roster's)."""
        return await self._roster.channels()

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        """What the inbox holds taken in and not handled (the inbox's)."""
        return await self._inbox.pending_events(platform=platform, channel_id=channel_id)

    async def last_message(
        self, channel_id: str, *, not_by: Collection[str] = ()
    ) -> Message | None:
        """The latest message stored for a channel (deleted ones included), or None;
        with ``not_by``, the latest by anyone else.

        Catching up passes the bot's own ids: only what the intake took in is stored
        gap-free (kuuki.platforms.retry), while the bot's own messages are recorded when
        sent, and an answer to a message taken in before an outage can be sent after
        later messages the store refused. Reading back after that answer skipped them.
        """
        await self._queued.settle()
        q = _SELECT.where(MessageRow.channel_id == channel_id)
        if not_by:
            q = q.where(MessageRow.user_id.not_in(list(not_by)))
        q = q.order_by(MessageRow.ts.desc(), MessageRow.seq.desc()).limit(1)
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(q)).first()
        return None if row is None else row_to_message(row._mapping)

    async def active_threads(
        self, channel_id: str, since: datetime, *, limit: int = 20
    ) -> list[tuple[str, datetime]]:
        """Threads worth reading back: (root id, latest stored message in the thread) for
        the threads with a message since ``since``, then the latest top-level messages
        (a thread may have started under one while the bot was away), most recent first,
        at most ``limit`` in all."""
        await self._queued.settle()
        latest = func.max(MessageRow.ts)
        threads = (
            select(MessageRow.thread, latest)
            .where(
                MessageRow.channel_id == channel_id,
                MessageRow.thread.is_not(None),
                MessageRow.ts >= to_utc(since),
            )
            .group_by(MessageRow.thread)
            .order_by(latest.desc())
            .limit(limit)
        )
        tops = (
            select(MessageRow.id, MessageRow.ts)
            .where(
                MessageRow.channel_id == channel_id,
                MessageRow.thread.is_(None),
                MessageRow.ts >= to_utc(since),
            )
            .order_by(MessageRow.ts.desc())
            .limit(limit)
        )
        async with self._db.engine.connect() as conn:
            found = {str(r[0]): to_utc(r[1]) for r in (await conn.execute(threads)).all()}
            for r in (await conn.execute(tops)).all():
                found.setdefault(str(r[0]), to_utc(r[1]))
        ordered = sorted(found.items(), key=lambda kv: kv[1], reverse=True)
        return ordered[:limit]

    async def decided(self, message_ids: Sequence[str]) -> set[str]:
        """Those of ``message_ids`` with at least one decision stored."""
        await self._queued.settle()
        found: set[str] = set()
        async with self._db.engine.connect() as conn:
            for chunk in in_chunks(message_ids):
                q = select(DecisionRow.message_id).where(DecisionRow.message_id.in_(chunk))
                found.update(str(r) for r in (await conn.scalars(q)).all())
        return found

    async def answered(self, message_ids: Sequence[str], bot_ids: Iterable[str]) -> set[str]:
        """Those of ``message_ids`` the bot answered: one of its messages replies to it,
        or it reacted to it (``bot_ids``: the bot's user ids on every platform)."""
        await self._queued.settle()
        bots = sorted(set(bot_ids))
        found: set[str] = set()
        async with self._db.engine.connect() as conn:
            for chunk in in_chunks(message_ids):
                replies = select(MessageRow.reply_to).where(
                    MessageRow.reply_to.in_(chunk), MessageRow.user_id.in_(bots)
                )
                reacts = select(ReactionRow.message_id).where(
                    ReactionRow.message_id.in_(chunk), ReactionRow.user_id.in_(bots)
                )
                found.update(str(r) for r in (await conn.scalars(replies)).all())
                found.update(str(r) for r in (await conn.scalars(reacts)).all())
        return found

    async def open_rechecks(self, channel_id: str, since: datetime) -> list[tuple[str, datetime]]:
        """Re-checks still scheduled in ``channel_id`` by decisions made since ``since``:
        (message id, when it is due), for each message whose latest decision asked to be
        judged again (``trace.features.recheck_s``). A scale-out worker taking a channel
        over rebuilds them: they lived in the memory of the worker that died."""
        await self._queued.settle()
        q = (
            select(DecisionRow.message_id, DecisionRow.decided_at, DecisionRow.trace)
            .where(DecisionRow.channel_id == channel_id, DecisionRow.decided_at >= to_utc(since))
            .order_by(DecisionRow.decided_at, DecisionRow.id)
        )
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        latest: dict[str, tuple[datetime, Any]] = {}
        for message_id, decided_at, trace in rows:
            latest[str(message_id)] = (to_utc(decided_at), trace)
        due: list[tuple[str, datetime]] = []
        for message_id, (decided_at, trace) in latest.items():
            features = trace.get("features") if isinstance(trace, dict) else None
            after = features.get("recheck_s") if isinstance(features, dict) else None
            if isinstance(after, int | float) and after > 0:
                due.append((message_id, decided_at + timedelta(seconds=float(after))))
        return due

    async def messages_by_ids(self, message_ids: Sequence[str]) -> list[Message]:
        """The stored messages among ``message_ids`` (any order)."""
        await self._queued.settle()
        out: list[Message] = []
        async with self._db.engine.connect() as conn:
            for chunk in in_chunks(message_ids):
                rows: Any = await conn.execute(_SELECT.where(MessageRow.id.in_(chunk)))
                out.extend(row_to_message(r._mapping) for r in rows)
        return out
