"""The current database schema, as typed declarative models.

These classes describe the schema *after* all migrations; queries are written against them.
Migrations (see ``migrations.py``) are what actually create and change tables, so a change
here must come with a new migration — ``tests/store`` checks that a migrated database
matches these models column for column and index for index.

Foreign keys are deliberately few: messages point at their channel and author (the store
creates placeholder rows as needed), and the proactive ledger at its fact. Decisions,
reactions and replies may legitimately refer to messages the store never saw (history from
before the bot joined), so they carry plain ids.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from kuuki.store.types import SafeJSON, SafeString, SafeText, UTCDateTime

MEMORY_SCOPES = ("workspace", "channel", "thread", "user")


class Base(DeclarativeBase):
    """Declarative base for every kuuki table."""


class SchemaMigrationRow(Base):
    """One applied migration."""

    __tablename__ = "schema_migrations"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(SafeString)
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ChannelRow(Base):
    """A channel; ``visibility`` is a :class:`kuuki.domain.Visibility` value."""

    __tablename__ = "channels"

    id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    name: Mapped[str] = mapped_column(SafeText)
    visibility: Mapped[str] = mapped_column(SafeString)
    workspace: Mapped[str] = mapped_column(SafeString)
    platform: Mapped[str] = mapped_column(SafeString)


class UserRow(Base):
    """A chat participant and when the store first and last saw them."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    name: Mapped[str] = mapped_column(SafeText)
    is_bot: Mapped[bool] = mapped_column(Boolean, server_default=false())
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)


class MessageRow(Base):
    """A chat message. ``reflected`` is set once the memory layer has digested it.

    Ids are unique per store: Discord's snowflakes are; Slack's ``ts`` is unique only
    within a channel, so the Slack adapter scopes it as ``<channel>:<ts>`` (m005).
    """

    __tablename__ = "messages"

    id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    channel_id: Mapped[str] = mapped_column(SafeString, ForeignKey("channels.id"))
    user_id: Mapped[str] = mapped_column(SafeString, ForeignKey("users.id"))
    text: Mapped[str] = mapped_column(SafeText)
    ts: Mapped[datetime] = mapped_column(UTCDateTime)
    reply_to: Mapped[str | None] = mapped_column(SafeString)
    thread: Mapped[str | None] = mapped_column(SafeString)
    mentions: Mapped[list[str]] = mapped_column(SafeJSON)
    conversation_id: Mapped[str | None] = mapped_column(SafeString)
    edited: Mapped[bool] = mapped_column(Boolean, server_default=false())
    deleted: Mapped[bool] = mapped_column(Boolean, server_default=false())
    reflected: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # Arrival order: platforms and transcripts give several messages the same timestamp.
    seq: Mapped[int] = mapped_column(BigInteger, server_default="0")

    __table_args__ = (
        Index("ix_messages_channel_ts", "channel_id", "ts"),
        Index("ix_messages_channel_reflected_ts", "channel_id", "reflected", "ts"),
        Index("ix_messages_conversation", "conversation_id"),
    )


class ReactionRow(Base):
    """An emoji reaction; one row per (message, user, emoji)."""

    __tablename__ = "reactions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    message_id: Mapped[str] = mapped_column(SafeString)
    user_id: Mapped[str] = mapped_column(SafeString)
    emoji: Mapped[str] = mapped_column(SafeString)
    ts: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (UniqueConstraint("message_id", "user_id", "emoji", name="uq_reactions"),)


class DecisionRow(Base):
    """What the bot decided about one message, with the full trace as JSON."""

    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    message_id: Mapped[str] = mapped_column(SafeString)
    channel_id: Mapped[str] = mapped_column(SafeString)
    action: Mapped[str] = mapped_column(SafeString)
    action_text: Mapped[str | None] = mapped_column(SafeText)
    emoji: Mapped[str | None] = mapped_column(SafeString)
    thread: Mapped[str | None] = mapped_column(SafeString)
    reply_to: Mapped[str | None] = mapped_column(SafeString)
    stage: Mapped[str] = mapped_column(SafeString)
    score: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(SafeText)
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime)
    llm_calls: Mapped[int] = mapped_column(Integer, server_default="0")
    trace: Mapped[dict[str, Any]] = mapped_column(SafeJSON)

    __table_args__ = (
        Index("ix_decisions_message", "message_id"),
        Index("ix_decisions_channel_decided", "channel_id", "decided_at"),
        Index("ix_decisions_decided", "decided_at"),
    )


class ProcessedEventRow(Base):
    """The inbox: every platform event id taken in (exactly-once across restarts).

    An event is written here, with its ``payload`` (the ChatEvent as JSON), before the
    platform is told it was received; ``handled`` turns true, and the payload is dropped,
    in the same transaction as what handling it wrote (kuuki.store.writer). After a crash
    the rows not yet handled are handled again (``Engine.recover``). ``arrival`` keeps
    their order.
    """

    __tablename__ = "processed_events"

    event_id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
    channel_id: Mapped[str | None] = mapped_column(SafeString)
    payload: Mapped[Any] = mapped_column(SafeJSON, nullable=True)
    handled: Mapped[bool] = mapped_column(Boolean, server_default=true())
    arrival: Mapped[int] = mapped_column(BigInteger, server_default="0")

    __table_args__ = (
        Index("ix_processed_events_seen", "seen_at"),
        Index("ix_processed_events_pending", "handled", "arrival"),
    )


class MemoryRow(Base):
    """A JSON memory document for one (scope, scope_id, kind)."""

    __tablename__ = "memories"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(SafeString)
    scope_id: Mapped[str] = mapped_column(SafeString)
    kind: Mapped[str] = mapped_column(SafeString)
    content: Mapped[Any] = mapped_column(SafeJSON, nullable=False)
    visibility: Mapped[str] = mapped_column(SafeString)
    source_channel_id: Mapped[str | None] = mapped_column(SafeString)
    source_user_ids: Mapped[list[str] | None] = mapped_column(SafeJSON)
    workspace: Mapped[str] = mapped_column(SafeString)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (UniqueConstraint("scope", "scope_id", "kind", name="uq_memories"),)


class FactRow(Base):
    """A remembered fact; ``embedding`` is a float32 array's raw bytes."""

    __tablename__ = "facts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content: Mapped[str] = mapped_column(SafeText)
    source_channel_id: Mapped[str | None] = mapped_column(SafeString)
    source_user_ids: Mapped[list[str]] = mapped_column(SafeJSON)
    keywords: Mapped[list[str]] = mapped_column(SafeJSON)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)
    confidence: Mapped[float] = mapped_column(Float)
    shareable: Mapped[bool] = mapped_column(Boolean, server_default=true())
    visibility: Mapped[str] = mapped_column(SafeString)
    workspace: Mapped[str] = mapped_column(SafeString)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_facts_workspace", "workspace"),)


class ProactiveLedgerRow(Base):
    """When a fact was volunteered in a channel, so it is not repeated too often."""

    __tablename__ = "proactive_ledger"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fact_id: Mapped[int] = mapped_column(Integer, ForeignKey("facts.id", ondelete="CASCADE"))
    channel_id: Mapped[str] = mapped_column(SafeString)
    at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_proactive_ledger_channel_at", "channel_id", "at"),)


class ForgottenUserRow(Base):
    """A person the bot was told to forget (kuuki.store.forgetting): while the row exists
    the store refuses to keep anything of theirs, so a running bot cannot write it back."""

    __tablename__ = "forgotten_users"

    user_id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    forgotten_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ChannelPolicyRow(Base):
    """A channel's policy as `/kuuki mode` changed it (kuuki.store.policies): the values
    changed, laid over kuuki.toml's `[channels.policy.<channel>]` at start-up."""

    __tablename__ = "channel_policies"

    channel_id: Mapped[str] = mapped_column(SafeString, primary_key=True)
    policy_values: Mapped[dict[str, Any]] = mapped_column(SafeJSON)
    changed_by: Mapped[str] = mapped_column(SafeString)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime)
