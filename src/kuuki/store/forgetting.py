"""Erasure a person, and keeping them forgotten.

`forget_user` erases, in one transaction, everything the store holds of one person: their
messages, the bot's messages that answered them (a reply to one of theirs, or in a thread
they started: an answer often quotes the question), the decisions about those messages
(their traces quote the text), reactions by them or on those messages, inbox payloads of
their events, their name and id in the traces of the decisions made while they were
around, their user row, the name of a direct-message channel they spoke in (it is
named after them), their profile, every fact they are a source of, and every
summary that may contain their words: each memory document sourced from them, each channel
and thread summary of a channel they spoke in, and the workspace summaries of the
workspaces where they spoke in a public channel. Shared summaries and facts are dropped,
not rewritten: no model is trusted to take someone's words out of a text; the summarizer
starts the channel's summary over from the next messages (docs/decisions.md).

It also leaves a tombstone (`forgotten_users`): while it is there, every write path of the
store refuses what is theirs — messages by them (and the bot's answers to those), decisions
about those, memories and facts with them among the sources, their reactions and user row.
That is what makes forgetting hold against a running bot in another process: whatever it
still has in memory cannot be written back, and it purges its memory when it next reads
the tombstones (`kuuki.memory.service`). `unforget_user` lifts the tombstone.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from kuuki.store.database import Database, Queued
from kuuki.store.engine import in_chunks, insert_stmt
from kuuki.store.schema import (
    ChannelRow,
    DecisionRow,
    FactRow,
    ForgottenUserRow,
    MemoryRow,
    MessageRow,
    ProactiveLedgerRow,
    ProcessedEventRow,
    ReactionRow,
    UserRow,
)
from kuuki.store.types import clean_text, to_utc

# Ids of messages refused because their author is forgotten, so that the bot's answer to
# one, written a moment later in another batch, is refused too. Bounded: an answer follows
# its question within seconds.
_UNKEPT_MAX = 10_000


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting one person removed, by kind."""

    messages: int = 0
    bot_answers: int = 0
    decisions: int = 0
    memories: int = 0
    facts: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.bot_answers + self.decisions + self.memories + self.facts


async def _hold(conn: AsyncConnection) -> None:
    """Make the tombstones read by a writing transaction hold until it commits.

    SQLite transactions begin IMMEDIATE (kuuki.store.engine): one writer at a time already.
    On PostgreSQL a SHARE lock on the table waits for a forget under way to commit (its
    tombstone insert holds ROW EXCLUSIVE) and makes a forget wait for this transaction, so
    the forget's deletes see what it wrote. Writers do not block each other (SHARE does not
    conflict with SHARE)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text("LOCK TABLE forgotten_users IN SHARE MODE"))


async def tombstones(conn: AsyncConnection) -> set[str]:
    """The ids of everyone forgotten (a small table; read inside the writing transaction)."""
    await _hold(conn)
    return {str(u) for u in (await conn.scalars(select(ForgottenUserRow.user_id))).all()}


def _sources(value: Any) -> list[str]:
    return [str(s) for s in value] if isinstance(value, list) else []


def _names(payload: Any, uid: str) -> bool:
    """True when an inbox payload (kuuki.store.records.event_payload) is an event of uid's."""
    if not isinstance(payload, dict):
        return False
    msg = payload.get("message")
    users = [payload.get("user"), msg.get("user") if isinstance(msg, dict) else None]
    return any(isinstance(u, dict) and u.get("id") == uid for u in users)


FORGOTTEN_NAME = "(someone forgotten)"


def _name_pattern(names: set[str]) -> re.Pattern[str] | None:
    # Whole words only, and no one-letter names: "Al" must not eat "Also".
    usable = sorted((n for n in names if len(n.strip()) >= 2), key=len, reverse=True)
    if not usable:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in usable) + r")(?!\w)")


def _unname(value: Any, pattern: re.Pattern[str]) -> Any:
    """``value`` (text or a JSON document) with every name in ``pattern`` replaced."""
    if isinstance(value, str):
        return pattern.sub(FORGOTTEN_NAME, value)
    if isinstance(value, list):
        return [_unname(v, pattern) for v in value]
    if isinstance(value, dict):
        return {k: _unname(v, pattern) for k, v in value.items()}
    return value


def _without_notes_from(content: Any, channels: set[str]) -> dict[str, Any] | None:
    """Another person's profile without its "last conversation" notes from ``channels``
    (written by reflection on talks that may quote the forgotten person); None when it
    has none (kuuki.memory.profiles.UserProfile.to_json)."""
    notes = content.get("lastConversationSummary") if isinstance(content, dict) else None
    if not isinstance(notes, dict) or not channels & set(notes):
        return None
    kept = {c: e for c, e in notes.items() if c not in channels}
    return {**content, "lastConversationSummary": kept}


class Erasure:
    """Erasure a person and the tombstones every write path of the store consults
    (the module doc); the other parts ask `refused` and `keep_remembered`."""

    def __init__(self, db: Database, queued: Queued) -> None:
        self._db = db
        self._queued = queued
        self._unkept: OrderedDict[str, None] = OrderedDict()

    async def forgotten_users(self) -> dict[str, datetime]:
        """Everyone forgotten, with when."""
        async with self._db.engine.connect() as conn:
            rows = await conn.execute(
                select(ForgottenUserRow.user_id, ForgottenUserRow.forgotten_at)
            )
            return {str(r[0]): to_utc(r[1]) for r in rows}

    async def unforget_user(self, user_id: str) -> bool:
        """Lift the tombstone: the bot may learn about ``user_id`` again from now on (what
        was erased stays erased). False if they were not forgotten."""
        async with self._db.engine.begin() as conn:
            result = await conn.execute(
                delete(ForgottenUserRow).where(ForgottenUserRow.user_id == clean_text(user_id))
            )
            return result.rowcount > 0

    async def forget_user(self, user_id: str, *, at: datetime | None = None) -> Forgotten:
        """Erase ``user_id`` and leave a tombstone (see the module docstring)."""
        await self._queued.settle()
        uid = clean_text(user_id)
        async with self._db.engine.begin() as conn:
            stmt = insert_stmt(conn.dialect.name, ForgottenUserRow).values(
                user_id=uid, forgotten_at=to_utc(at or datetime.now(UTC))
            )
            await conn.execute(stmt.on_conflict_do_update(
                index_elements=["user_id"], set_={"forgotten_at": stmt.excluded.forgotten_at}
            ))
            own = (await conn.execute(
                select(MessageRow.id, MessageRow.channel_id).where(MessageRow.user_id == uid)
            )).all()
            mine = [str(r[0]) for r in own]
            channels = {str(r[1]) for r in own}
            answers = await self._bot_answers(conn, mine)
            gone = mine + answers
            decisions = await self._erase_messages(conn, uid, gone)
            user = (await conn.execute(
                select(UserRow.name, UserRow.first_seen).where(UserRow.id == uid)
            )).first()
            if user is not None:
                await self._unname_decisions(conn, {uid, str(user[0])}, channels, user[1])
            await self._scrub_inbox(conn, uid)
            await conn.execute(delete(UserRow).where(UserRow.id == uid))
            memories = await self._drop_memories(conn, uid, channels)
            facts = await self._drop_facts(conn, uid)
        return Forgotten(len(mine), len(answers), decisions, memories, facts)

    @staticmethod
    async def _bot_answers(conn: AsyncConnection, mine: Sequence[str]) -> list[str]:
        found: list[str] = []
        for chunk in in_chunks(mine):
            q = (
                select(MessageRow.id)
                .join(UserRow, MessageRow.user_id == UserRow.id)
                .where(
                    UserRow.is_bot.is_(True),
                    or_(MessageRow.reply_to.in_(chunk), MessageRow.thread.in_(chunk)),
                )
            )
            found += [str(r) for r in (await conn.scalars(q)).all()]
        return list(dict.fromkeys(found))

    @staticmethod
    async def _erase_messages(conn: AsyncConnection, uid: str, gone: Sequence[str]) -> int:
        await conn.execute(delete(ReactionRow).where(ReactionRow.user_id == uid))
        decisions = 0
        for chunk in in_chunks(gone):
            await conn.execute(delete(ReactionRow).where(ReactionRow.message_id.in_(chunk)))
            result = await conn.execute(
                delete(DecisionRow).where(DecisionRow.message_id.in_(chunk))
            )
            decisions += result.rowcount
            await conn.execute(delete(MessageRow).where(MessageRow.id.in_(chunk)))
        return int(decisions)

    @staticmethod
    async def _unname_decisions(
        conn: AsyncConnection, names: set[str], channels: set[str], since: datetime
    ) -> None:
        # Decisions about other people's messages name the people around in their trace
        # ("asked of Alice", "3 replies to Alice in 10 min").
        pattern = _name_pattern(names)
        if pattern is None or not channels:
            return
        for chunk in in_chunks(channels):
            rows = (await conn.execute(
                select(DecisionRow.id, DecisionRow.reason, DecisionRow.trace).where(
                    DecisionRow.channel_id.in_(chunk), DecisionRow.decided_at >= to_utc(since)
                )
            )).all()
            for row_id, reason, trace in rows:
                new_reason, new_trace = _unname(reason, pattern), _unname(trace, pattern)
                if new_reason != reason or new_trace != trace:
                    await conn.execute(
                        update(DecisionRow).where(DecisionRow.id == row_id)
                        .values(reason=new_reason, trace=new_trace)
                    )

    @staticmethod
    async def _scrub_inbox(conn: AsyncConnection, uid: str) -> None:
        # Payloads are kept only until handled; one of theirs still waiting is not handled
        # again (it would only be refused) and its text goes now.
        rows = await conn.execute(
            select(ProcessedEventRow.event_id, ProcessedEventRow.payload).where(
                ProcessedEventRow.payload.is_not(None)
            )
        )
        theirs = [str(r[0]) for r in rows if _names(r[1], uid)]
        for chunk in in_chunks(theirs):
            await conn.execute(
                update(ProcessedEventRow)
                .where(ProcessedEventRow.event_id.in_(chunk))
                .values(handled=True, payload=None)
            )

    @staticmethod
    async def _drop_memories(conn: AsyncConnection, uid: str, channels: set[str]) -> int:
        known = {
            str(r[0]): (str(r[1]), str(r[2]))
            for r in await conn.execute(
                select(ChannelRow.id, ChannelRow.visibility, ChannelRow.workspace)
            )
        }
        workspaces = {known[c][1] for c in channels if c in known and known[c][0] == "public"}
        # A direct message channel is named after the person (Slack: "dm:<name>").
        dms = [c for c in channels if c in known and known[c][0] == "dm"]
        if dms:
            await conn.execute(
                update(ChannelRow).where(ChannelRow.id.in_(dms)).values(name=ChannelRow.id)
            )
        rows = await conn.execute(
            select(MemoryRow.id, MemoryRow.scope, MemoryRow.scope_id, MemoryRow.source_channel_id,
                   MemoryRow.source_user_ids, MemoryRow.workspace, MemoryRow.content)
        )
        drop: list[int] = []
        for row_id, scope, scope_id, channel, sources, workspace, content in rows:
            if (
                (scope == "user" and scope_id == uid)
                or uid in _sources(sources)
                or (scope in ("channel", "thread") and channel in channels)
                or (scope == "workspace" and workspace in workspaces)
            ):
                drop.append(int(row_id))
            elif scope == "user" and (kept := _without_notes_from(content, channels)):
                await conn.execute(
                    update(MemoryRow).where(MemoryRow.id == row_id).values(content=kept)
                )
        for chunk in in_chunks(drop):
            await conn.execute(delete(MemoryRow).where(MemoryRow.id.in_(chunk)))
        return len(drop)

    @staticmethod
    async def _drop_facts(conn: AsyncConnection, uid: str) -> int:
        # A shared fact ("Alice and Bob went hiking") is dropped too: it quotes them.
        # Every row is looked at: a text prefilter on the JSON would depend on how each
        # dialect escapes it, and forgetting is rare while facts are capped per channel.
        rows = await conn.execute(select(FactRow.id, FactRow.source_user_ids))
        drop = [int(r[0]) for r in rows if uid in _sources(r[1])]
        for chunk in in_chunks(drop):
            await conn.execute(
                delete(ProactiveLedgerRow).where(ProactiveLedgerRow.fact_id.in_(chunk))
            )
            await conn.execute(delete(FactRow).where(FactRow.id.in_(chunk)))
        return len(drop)

    # --- what the write paths ask -----------------------------------------------------------

    @property
    def anyone_unkept(self) -> bool:
        """True once a message was refused for a forgotten author in this process (the
        bot's answer to it must be refused too, so batches take the careful path)."""
        return bool(self._unkept)

    def _remember_unkept(self, message_id: str) -> None:
        self._unkept[message_id] = None
        if len(self._unkept) > _UNKEPT_MAX:
            self._unkept.popitem(last=False)

    async def keep_remembered(
        self, conn: AsyncConnection, messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``messages`` and ``decisions`` without what belongs to a forgotten person: their
        messages, the bot's answers to those, and decisions about either."""
        return self.filter_remembered(await tombstones(conn), messages, decisions)

    def filter_remembered(
        self, gone: set[str], messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """:meth:`keep_remembered` with the forgotten ids ``gone`` already read."""
        if not gone and not self._unkept:
            return messages, decisions
        kept: list[dict[str, Any]] = []
        for r in messages:
            answer = r["user_is_bot"] and (r["reply_to"] in self._unkept
                                           or r["thread"] in self._unkept)
            if r["user_id"] in gone or answer:
                self._remember_unkept(r["id"])
            else:
                kept.append(r)
        return kept, [d for d in decisions if d["message_id"] not in self._unkept]

    @staticmethod
    async def refused(conn: AsyncConnection, user_ids: Iterable[str]) -> bool:
        """True when any of ``user_ids`` is forgotten (a write of theirs is refused)."""
        ids = list(dict.fromkeys(user_ids))
        if not ids:
            return False
        await _hold(conn)
        q = select(ForgottenUserRow.user_id).where(ForgottenUserRow.user_id.in_(ids)).limit(1)
        return (await conn.scalar(q)) is not None
