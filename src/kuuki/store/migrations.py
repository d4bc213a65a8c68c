"""Ordered, named schema migrations.

Each migration is a plain function taking a synchronous SQLAlchemy ``Connection`` and
registered with :func:`migration`; its name encodes its order (``m001_initial`` is version
1). :func:`migrate` applies, in version order, those not yet listed in
``schema_migrations``, each in its own transaction together with the row recording it, so
a crash leaves the database at a clean version boundary.

Migrations are frozen history: they define the tables they create inline with SQLAlchemy
Core instead of reusing the models in ``schema.py``, because the models describe the
latest schema and would make old migrations create tables that later ones then alter.
Everything is dialect-neutral Core DDL, so the same migrations run on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    UniqueConstraint,
    false,
    insert,
    select,
    text,
    true,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.errors import StoreError
from kuuki.store.schema import Base, SchemaMigrationRow
from kuuki.store.types import SafeJSON, SafeString, SafeText, UTCDateTime
from kuuki.text.secrets import redact

MigrationFn = Callable[[Connection], None]

_NAME = re.compile(r"^m(\d{3,})_(\w+)$")

# An arbitrary constant: PostgreSQL advisory lock key that serialises concurrent migrators.
_PG_LOCK_KEY = 0x6B75_756B


@dataclass(frozen=True, slots=True)
class Migration:
    """One registered migration."""

    version: int
    name: str
    fn: MigrationFn


MIGRATIONS: list[Migration] = []


def migration(fn: MigrationFn) -> MigrationFn:
    """Register ``fn`` (named ``mNNN_description``) as migration NNN."""
    match = _NAME.match(fn.__name__)
    if match is None:
        raise ValueError(f"migration {fn.__name__!r} must be named mNNN_description")
    version = int(match.group(1))
    if any(m.version == version for m in MIGRATIONS):
        raise ValueError(f"duplicate migration version {version}")
    MIGRATIONS.append(Migration(version, match.group(2), fn))
    MIGRATIONS.sort(key=lambda m: m.version)
    return fn


async def applied_versions(engine: AsyncEngine) -> list[int]:
    """Versions already recorded, ascending (creating the bookkeeping table if needed)."""
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # several processes starting on a new database (kuuki.scale) must not race to
            # create the table: the same lock as the migrations themselves
            await conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})"))
        await conn.run_sync(_ensure_migrations_table)
        rows = await conn.execute(select(SchemaMigrationRow.version))
        return sorted(r[0] for r in rows)


async def migrate(
    engine: AsyncEngine,
    *,
    migrations: Sequence[Migration] | None = None,
    upto: int | None = None,
) -> list[str]:
    """Apply pending migrations (up to version ``upto``); return the names applied.

    Running it again once everything is applied does nothing.
    """
    todo = sorted(MIGRATIONS if migrations is None else migrations, key=lambda m: m.version)
    done: list[str] = []
    await applied_versions(engine)  # make sure schema_migrations exists
    for mig in todo:
        if upto is not None and mig.version > upto:
            break
        try:
            async with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    await conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})"))
                # Re-check inside the transaction: another process may have just applied it.
                already = await conn.scalar(
                    select(SchemaMigrationRow.version).where(
                        SchemaMigrationRow.version == mig.version
                    )
                )
                if already is not None:
                    continue
                await conn.run_sync(mig.fn)
                await conn.execute(
                    insert(SchemaMigrationRow).values(
                        version=mig.version, name=mig.name, applied_at=datetime.now(UTC)
                    )
                )
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(
                f"migration m{mig.version:03d}_{mig.name} failed: "
                f"{type(exc).__name__}: {redact(str(exc))}"
            ) from exc
        done.append(f"m{mig.version:03d}_{mig.name}")
    return done


def _ensure_migrations_table(conn: Connection) -> None:
    Base.metadata.tables["schema_migrations"].create(conn, checkfirst=True)


# --- the migrations ------------------------------------------------------------------------


@migration
def m001_initial(conn: Connection) -> None:
    md = MetaData()
    _m001_chat(md)
    _m001_decisions(md)
    _m001_memory(md)
    md.create_all(conn)


def _m001_chat(md: MetaData) -> None:
    Table(
        "channels",
        md,
        Column("id", SafeString, primary_key=True),
        Column("name", SafeText, nullable=False),
        Column("visibility", SafeString, nullable=False),
        Column("workspace", SafeString, nullable=False),
        Column("platform", SafeString, nullable=False),
    )
    Table(
        "users",
        md,
        Column("id", SafeString, primary_key=True),
        Column("name", SafeText, nullable=False),
        Column("is_bot", Boolean, nullable=False, server_default=false()),
        Column("first_seen", UTCDateTime, nullable=False),
        Column("last_seen", UTCDateTime, nullable=False),
    )
    Table(
        "messages",
        md,
        Column("id", SafeString, primary_key=True),
        Column("channel_id", SafeString, ForeignKey("channels.id"), nullable=False),
        Column("user_id", SafeString, ForeignKey("users.id"), nullable=False),
        Column("text", SafeText, nullable=False),
        Column("ts", UTCDateTime, nullable=False),
        Column("reply_to", SafeString),
        Column("thread", SafeString),
        Column("mentions", SafeJSON, nullable=False),
        Column("conversation_id", SafeString),
        Column("edited", Boolean, nullable=False, server_default=false()),
        Column("deleted", Boolean, nullable=False, server_default=false()),
        Column("reflected", Boolean, nullable=False, server_default=false()),
    )
    Table(
        "reactions",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("message_id", SafeString, nullable=False),
        Column("user_id", SafeString, nullable=False),
        Column("emoji", SafeString, nullable=False),
        Column("ts", UTCDateTime, nullable=False),
        UniqueConstraint("message_id", "user_id", "emoji", name="uq_reactions"),
    )


def _m001_decisions(md: MetaData) -> None:
    Table(
        "decisions",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("message_id", SafeString, nullable=False),
        Column("channel_id", SafeString, nullable=False),
        Column("action", SafeString, nullable=False),
        Column("action_text", SafeText),
        Column("emoji", SafeString),
        Column("thread", SafeString),
        Column("reply_to", SafeString),
        Column("stage", SafeString, nullable=False),
        Column("score", Float, nullable=False),
        Column("reason", SafeText, nullable=False),
        Column("decided_at", UTCDateTime, nullable=False),
        Column("llm_calls", Integer, nullable=False, server_default="0"),
        Column("trace", SafeJSON, nullable=False),
    )
    Table(
        "processed_events",
        md,
        Column("event_id", SafeString, primary_key=True),
        Column("seen_at", UTCDateTime, nullable=False),
    )


def _m001_memory(md: MetaData) -> None:
    """What the bot remembers: memories, facts, and the ledger of facts brought up."""
    Table(
        "memories",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("scope", SafeString, nullable=False),
        Column("scope_id", SafeString, nullable=False),
        Column("kind", SafeString, nullable=False),
        Column("content", SafeJSON, nullable=False),
        Column("visibility", SafeString, nullable=False),
        Column("source_channel_id", SafeString),
        Column("source_user_ids", SafeJSON),
        Column("workspace", SafeString, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        UniqueConstraint("scope", "scope_id", "kind", name="uq_memories"),
    )
    Table(
        "facts",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("content", SafeText, nullable=False),
        Column("source_channel_id", SafeString),
        Column("source_user_ids", SafeJSON, nullable=False),
        Column("keywords", SafeJSON, nullable=False),
        Column("embedding", LargeBinary),
        Column("confidence", Float, nullable=False),
        Column("shareable", Boolean, nullable=False, server_default=true()),
        Column("visibility", SafeString, nullable=False),
        Column("workspace", SafeString, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("last_used_at", UTCDateTime),
    )
    Table(
        "proactive_ledger",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("fact_id", Integer, ForeignKey("facts.id", ondelete="CASCADE"), nullable=False),
        Column("channel_id", SafeString, nullable=False),
        Column("at", UTCDateTime, nullable=False),
    )


@migration
def m002_indexes(conn: Connection) -> None:
    # The hot read paths: a channel's recent history, the reflection backlog, decision
    # lookups for the debug/explain commands, event pruning, fact retrieval per workspace.
    md = MetaData()
    md.reflect(
        conn, only=["messages", "decisions", "processed_events", "facts", "proactive_ledger"]
    )
    t = md.tables
    indexes = [
        Index("ix_messages_channel_ts", t["messages"].c.channel_id, t["messages"].c.ts),
        Index(
            "ix_messages_channel_reflected_ts",
            t["messages"].c.channel_id,
            t["messages"].c.reflected,
            t["messages"].c.ts,
        ),
        Index("ix_messages_conversation", t["messages"].c.conversation_id),
        Index("ix_decisions_message", t["decisions"].c.message_id),
        Index(
            "ix_decisions_channel_decided",
            t["decisions"].c.channel_id,
            t["decisions"].c.decided_at,
        ),
        Index("ix_decisions_decided", t["decisions"].c.decided_at),
        Index("ix_processed_events_seen", t["processed_events"].c.seen_at),
        Index("ix_facts_workspace", t["facts"].c.workspace),
        Index(
            "ix_proactive_ledger_channel_at",
            t["proactive_ledger"].c.channel_id,
            t["proactive_ledger"].c.at,
        ),
    ]
    for index in indexes:
        index.create(conn)


@migration
def m003_message_seq(conn: Connection) -> None:
    # Messages sharing a timestamp must read back in arrival order.
    conn.execute(text("ALTER TABLE messages ADD COLUMN seq BIGINT NOT NULL DEFAULT 0"))


def _add_column(conn: Connection, table: str, column: Column[Any]) -> None:
    """ALTER TABLE … ADD COLUMN, with the column's type and server default compiled for
    the connection's dialect (Core has no construct for it)."""
    ddl = f"{column.type.compile(dialect=conn.dialect)}"
    if column.server_default is not None:
        default = column.server_default.arg  # type: ignore[attr-defined]
        sql = default if isinstance(default, str) else str(
            default.compile(dialect=conn.dialect)
        )
        ddl += f" DEFAULT {sql}"
    if not column.nullable:
        ddl += " NOT NULL"
    conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column.name} {ddl}"))


@migration
def m004_inbox(conn: Connection) -> None:
    # processed_events becomes the inbox: the event itself is kept until it is handled,
    # so an event acknowledged to the platform survives a crash.
    for column in (
        Column("channel_id", SafeString, nullable=True),
        Column("payload", SafeJSON, nullable=True),
        Column("handled", Boolean, nullable=False, server_default=true()),
        Column("arrival", BigInteger, nullable=False, server_default="0"),
    ):
        _add_column(conn, "processed_events", column)
    md = MetaData()
    md.reflect(conn, only=["processed_events"])
    t = md.tables["processed_events"]
    Index("ix_processed_events_pending", t.c.handled, t.c.arrival).create(conn)


@migration
def m005_slack_scoped_ids(conn: Connection) -> None:
    # A Slack ts is unique only within its channel: the same ts in two channels was stored
    # once, and an edit or delete in one reached the other. Slack message ids become
    # "<channel>:<ts>" everywhere they are stored. Reactions carry no channel:
    # they take the channel of the stored message they name.
    slack = "(SELECT id FROM channels WHERE platform = 'slack')"
    unscoped = "NOT LIKE '%:%'"
    conn.execute(text(
        "UPDATE reactions SET message_id = (SELECT m.channel_id FROM messages m "
        f"WHERE m.id = reactions.message_id AND m.channel_id IN {slack}) || ':' || message_id "
        f"WHERE message_id {unscoped} AND message_id IN "
        f"(SELECT id FROM messages WHERE channel_id IN {slack})"
    ))
    for column in ("id", "reply_to", "thread", "conversation_id"):
        conn.execute(text(
            f"UPDATE messages SET {column} = channel_id || ':' || {column} "
            f"WHERE channel_id IN {slack} AND {column} IS NOT NULL AND {column} {unscoped}"
        ))
    for column in ("message_id", "reply_to", "thread"):
        conn.execute(text(
            f"UPDATE decisions SET {column} = channel_id || ':' || {column} "
            f"WHERE channel_id IN {slack} AND {column} IS NOT NULL AND {column} {unscoped}"
        ))


@migration
def m006_forgotten_users(conn: Connection) -> None:
    # "Forget me" must survive a running bot's next flush: a tombstone per person that
    # every write path consults.
    md = MetaData()
    Table(
        "forgotten_users",
        md,
        Column("user_id", SafeString, primary_key=True),
        Column("forgotten_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration
def m007_channel_policies(conn: Connection) -> None:
    # `/kuuki mode`'s changes to a channel's policy must outlive the process.
    md = MetaData()
    Table(
        "channel_policies",
        md,
        Column("channel_id", SafeString, primary_key=True),
        Column("policy_values", SafeJSON, nullable=False),
        Column("changed_by", SafeString, nullable=False),
        Column("changed_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)
