"""Translation between domain values and table rows, plus the store's own record types.

Rows are plain dicts on the way in (they feed batched ``executemany`` inserts directly) and
SQLAlchemy ``Row`` mappings on the way out. Text is cleaned here as well as in the column
types so that a value the store hands back from its write-behind buffer is identical to
the one a database read would return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kuuki.domain import Channel, ChatEvent, Decision, EventKind, Message, User, Visibility
from kuuki.store.trace_json import trace_document
from kuuki.store.types import clean_text, to_utc


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    """One document of a batch written by `Memories.set_memories` (the scope, kind and
    visibility are the batch's)."""

    scope_id: str
    content: Any
    source_user_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A stored memory document (``content`` is any JSON value)."""

    scope: str
    scope_id: str
    kind: str
    content: Any
    visibility: Visibility
    source_channel_id: str | None
    source_user_ids: tuple[str, ...]
    workspace: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class FactRecord:
    """A stored fact; ``embedding`` is a float32 vector or None."""

    id: int
    content: str
    source_channel_id: str | None
    source_user_ids: tuple[str, ...]
    keywords: tuple[str, ...]
    embedding: npt.NDArray[np.float32] | None
    confidence: float
    shareable: bool
    visibility: Visibility
    workspace: str
    created_at: datetime
    last_used_at: datetime | None


def visibility(value: str) -> Visibility:
    # An unknown value (written by a newer version, say) must never widen who sees a
    # memory, so it reads as the most restrictive option.
    try:
        return Visibility(value)
    except ValueError:
        return Visibility.DM


def channel_row(ch: Channel) -> dict[str, Any]:
    return {
        "id": clean_text(ch.id),
        "name": clean_text(ch.name),
        "visibility": str(ch.visibility),
        "workspace": clean_text(ch.workspace),
        "platform": clean_text(ch.platform),
    }


def _user_json(u: User | None) -> dict[str, Any] | None:
    return None if u is None else {"id": u.id, "name": u.name, "is_bot": u.is_bot}


def _json_user(d: Any) -> User | None:
    return None if not isinstance(d, Mapping) else User(
        str(d["id"]), str(d["name"]), bool(d.get("is_bot"))
    )


def event_payload(e: ChatEvent) -> dict[str, Any]:
    """A ChatEvent as a JSON document, for the inbox (read back by :func:`payload_event`)."""
    ch = e.channel
    m = e.message
    return {
        "kind": str(e.kind),
        "channel": {
            "id": ch.id, "name": ch.name, "visibility": str(ch.visibility),
            "workspace": ch.workspace, "platform": ch.platform, "parent_id": ch.parent_id,
        },
        "event_id": e.event_id,
        "at": to_utc(e.at).isoformat(),
        "message": None if m is None else {
            "id": m.id, "channel_id": m.channel_id, "user": _user_json(m.user), "text": m.text,
            "ts": to_utc(m.ts).isoformat(), "reply_to": m.reply_to, "thread": m.thread,
            "mentions": list(m.mentions), "edited": m.edited, "deleted": m.deleted,
        },
        "target_id": e.target_id,
        "user": _user_json(e.user),
        "text": e.text,
        "emoji": e.emoji,
        "backfill": e.backfill,
    }


def payload_event(d: Mapping[str, Any]) -> ChatEvent:
    """The ChatEvent an :func:`event_payload` document describes."""
    c = d["channel"]
    channel = Channel(
        str(c["id"]), str(c["name"]), visibility(str(c["visibility"])), str(c["workspace"]),
        str(c["platform"]), c.get("parent_id"),
    )
    raw = d.get("message")
    message = None
    if isinstance(raw, Mapping):
        author = _json_user(raw["user"])
        assert author is not None
        message = Message(
            str(raw["id"]), str(raw["channel_id"]), author, str(raw["text"]),
            datetime.fromisoformat(raw["ts"]), raw.get("reply_to"), raw.get("thread"),
            tuple(raw.get("mentions") or ()), bool(raw.get("edited")), bool(raw.get("deleted")),
        )
    return ChatEvent(
        EventKind(d["kind"]), channel, str(d["event_id"]), datetime.fromisoformat(d["at"]),
        message=message, target_id=d.get("target_id"), user=_json_user(d.get("user")),
        text=d.get("text"), emoji=d.get("emoji"), backfill=bool(d.get("backfill")),
    )


def row_to_channel(r: Mapping[Any, Any]) -> Channel:
    return Channel(
        id=r["id"],
        name=r["name"],
        visibility=visibility(r["visibility"]),
        workspace=r["workspace"],
        platform=r["platform"],
    )


def message_row(m: Message, conversation_id: str | None, seq: int = 0) -> dict[str, Any]:
    """Insert parameters for ``m``; also carries the author's name/is_bot for read-back."""
    return {
        "id": clean_text(m.id),
        "channel_id": clean_text(m.channel_id),
        "user_id": clean_text(m.user.id),
        "text": "" if m.deleted else clean_text(m.text),
        "ts": to_utc(m.ts),
        "reply_to": None if m.reply_to is None else clean_text(m.reply_to),
        "thread": None if m.thread is None else clean_text(m.thread),
        "mentions": [clean_text(x) for x in m.mentions],
        "conversation_id": None if conversation_id is None else clean_text(conversation_id),
        "edited": m.edited,
        "deleted": m.deleted,
        "reflected": False,
        "seq": seq,
        # Not message columns: used to upsert the author and to rebuild the Message.
        "user_name": clean_text(m.user.name),
        "user_is_bot": m.user.is_bot,
    }


MESSAGE_COLUMNS = (
    "id",
    "channel_id",
    "user_id",
    "text",
    "ts",
    "reply_to",
    "thread",
    "mentions",
    "conversation_id",
    "edited",
    "deleted",
    "reflected",
    "seq",
)


def row_to_message(r: Mapping[Any, Any]) -> Message:
    """Build a Message from a messages⋈users row or from a :func:`message_row` dict."""
    return Message(
        id=r["id"],
        channel_id=r["channel_id"],
        user=User(id=r["user_id"], name=r["user_name"], is_bot=bool(r["user_is_bot"])),
        text=r["text"],
        ts=to_utc(r["ts"]),
        reply_to=r["reply_to"],
        thread=r["thread"],
        mentions=tuple(r["mentions"] or ()),
        edited=bool(r["edited"]),
        deleted=bool(r["deleted"]),
    )


def decision_row(d: Decision) -> dict[str, Any]:
    return {
        "message_id": d.message_id,
        "channel_id": d.channel_id,
        "action": str(d.action.kind),
        "action_text": d.action.text,
        "emoji": d.action.emoji,
        "thread": d.action.thread,
        "reply_to": d.action.reply_to,
        "stage": str(d.stage),
        "score": float(d.score),
        "reason": d.reason,
        "decided_at": to_utc(d.decided_at),
        "llm_calls": d.llm_calls,
        "trace": trace_document(d.trace),  # encoded once; cleaned when it must be
    }


DECISION_KEYS = (
    "id",
    "message_id",
    "channel_id",
    "action",
    "action_text",
    "emoji",
    "thread",
    "reply_to",
    "stage",
    "score",
    "reason",
    "decided_at",
    "llm_calls",
    "trace",
)


def row_to_decision(r: Mapping[Any, Any]) -> dict[str, Any]:
    """A decision as a plain dict: the columns of ``decisions``, ``trace`` as a dict."""
    out = {k: r[k] for k in DECISION_KEYS}
    out["decided_at"] = to_utc(out["decided_at"])
    return out


def row_to_memory(r: Mapping[Any, Any]) -> MemoryRecord:
    return MemoryRecord(
        scope=r["scope"],
        scope_id=r["scope_id"],
        kind=r["kind"],
        content=r["content"],
        visibility=visibility(r["visibility"]),
        source_channel_id=r["source_channel_id"],
        source_user_ids=tuple(r["source_user_ids"] or ()),
        workspace=r["workspace"],
        updated_at=to_utc(r["updated_at"]),
    )


def embedding_bytes(vec: Sequence[float] | npt.NDArray[Any] | None) -> bytes | None:
    if vec is None:
        return None
    # Little-endian float32 explicitly, so a database copied between machines still reads.
    return np.asarray(vec, dtype="<f4").tobytes()


def row_to_fact(r: Mapping[Any, Any]) -> FactRecord:
    raw = r["embedding"]
    emb = None if raw is None else np.frombuffer(bytes(raw), dtype="<f4").astype(np.float32)
    last_used = r["last_used_at"]
    return FactRecord(
        id=int(r["id"]),
        content=r["content"],
        source_channel_id=r["source_channel_id"],
        source_user_ids=tuple(r["source_user_ids"] or ()),
        keywords=tuple(r["keywords"] or ()),
        embedding=emb,
        confidence=float(r["confidence"]),
        shareable=bool(r["shareable"]),
        visibility=visibility(r["visibility"]),
        workspace=r["workspace"],
        created_at=to_utc(r["created_at"]),
        last_used_at=None if last_used is None else to_utc(last_used),
    )
