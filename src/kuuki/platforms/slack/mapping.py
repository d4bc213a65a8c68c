"""Slack Events API payloads → kuuki ChatEvents.

Message ids are ``<channel>:<ts>``: Slack's ``ts`` is unique only within a channel, and
the store, edits, deletes and reactions must never mix two channels' messages up
(`message_id`, `ts_of`). Event ids are built from the payload alone, so a redelivery of
the same event (a retry, or a replay after a reconnect) gets the same id and the engine
handles it once:

    posted    slack:<channel>:<ts>                     (``message`` and ``app_mention`` alike)
    edited    slack:<channel>:<ts>:edit:<edited.ts>
    deleted   slack:<channel>:<ts>:delete                (a root's tombstone alike)
    reaction  slack:<channel>:<ts>:react:<user>:<name>:<event_ts>

What a message says, its attachments and files included, is kuuki.platforms.slack.content
(shares and forwards marked as someone else's words, app posts as plain lines, web page
previews skipped). An edit is an edit of what the bot reads: a ``message_changed`` that
changes neither the text nor the attachments the bot reads (a web page's preview added, a
thread's reply count) maps to None; one that adds the unfurl of a linked Slack message is
an edit, the linked words read as shared. Deleting a thread root that has replies leaves a
tombstone: Slack sends a ``message_changed`` whose message has ``subtype: tombstone``, and
``conversations.history`` shows the tombstone where the root was; both map to the root's
deletion, never to a message by Slackbot.

A payload that cannot be mapped raises `MalformedPayload` naming its kind; the adapter logs
it and moves on. Payloads that are fine but of no interest (joins, topic changes, the bot's
own messages) map to None.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kuuki.domain import ChatEvent, EventKind, Message, User
from kuuki.platforms.slack.content import MAX_TEXT as MAX_TEXT  # re-exported: the limit
from kuuki.platforms.slack.content import message_content, readable
from kuuki.platforms.slack.emoji import from_slack_name
from kuuki.platforms.slack.names import Directory

log = logging.getLogger("kuuki.slack")

POSTED_SUBTYPES = frozenset({"bot_message", "thread_broadcast", "me_message", "file_share"})
# What stays of a deleted thread root that has replies ("This message was deleted."):
# Slack sends it as a message_changed, and history shows it in the root's place.
TOMBSTONE = "tombstone"


def message_id(channel_id: str, ts: str) -> str:
    """kuuki's id for the Slack message ``ts`` of ``channel_id``."""
    return f"{channel_id}:{ts}"


def ts_of(message_id: str) -> str:
    """Slack's ``ts`` of a kuuki message id (an unscoped ts is returned as it is)."""
    return message_id.rpartition(":")[2]


class MalformedPayload(ValueError):
    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


def slack_time(ts: Any, kind: str = "message") -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise MalformedPayload(kind, f"bad timestamp {ts!r}") from exc


def _str(raw: Mapping[str, Any], key: str, kind: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise MalformedPayload(kind, f"missing or invalid {key!r}")
    return value


def _dict(raw: Mapping[str, Any], key: str, kind: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if not isinstance(value, Mapping):
        raise MalformedPayload(kind, f"missing or invalid {key!r}")
    return value


def payload_kind(event: Mapping[str, Any]) -> str:
    kind = str(event.get("type") or "?")
    subtype = event.get("subtype")
    return f"{kind}/{subtype}" if subtype else kind


class Mapper:
    """Maps one workspace's events; needs the Directory for names and the bot's ids."""

    def __init__(self, directory: Directory, *, bot_id: str | None) -> None:
        self.directory = directory
        self.bot_id = bot_id

    @property
    def bot_user_id(self) -> str:
        return self.directory.bot_user_id

    def is_own(self, raw: Mapping[str, Any]) -> bool:
        user, bot = raw.get("user"), raw.get("bot_id")
        return user == self.bot_user_id or (bot is not None and bot == self.bot_id)

    async def event(
        self, event: Mapping[str, Any], *, include_own: bool = False
    ) -> ChatEvent | None:
        kind = payload_kind(event)
        etype = event.get("type")
        if etype in ("message", "app_mention"):
            subtype = event.get("subtype")
            if subtype is None or subtype in POSTED_SUBTYPES:
                return await self.posted(event, include_own=include_own)
            if subtype == "message_changed":
                return await self.edited(event)
            if subtype == "message_deleted":
                return await self.deleted(event)
            if subtype == TOMBSTONE:  # a history row: the thread root was deleted
                channel_id = _str(event, "channel", kind)
                ts = _str(event, "ts", kind)
                return await self._removed(channel_id, ts, slack_time(ts, kind))
            log.debug("ignored slack %s event", kind)
            return None
        if etype == "reaction_added":
            return await self.reaction(event)
        raise MalformedPayload(kind, "unknown event type")

    async def posted(self, ev: Mapping[str, Any], *, include_own: bool = False) -> ChatEvent | None:
        kind = payload_kind(ev)
        channel_id = _str(ev, "channel", kind)
        ts = _str(ev, "ts", kind)
        at = slack_time(ts, kind)
        text = ev.get("text") or ""
        if not isinstance(text, str):
            raise MalformedPayload(kind, "text is not a string")
        if len(text) > MAX_TEXT:
            raise MalformedPayload(kind, f"text of {len(text)} characters (limit {MAX_TEXT})")
        own = self.is_own(ev)
        if own and not include_own:
            return None
        user = await self._author(ev, kind, own=own)
        content = await message_content(self.directory, ev, text)
        thread_ts = ev.get("thread_ts")
        thread = (
            message_id(channel_id, thread_ts)
            if isinstance(thread_ts, str) and thread_ts != ts
            else None
        )
        reply_to = thread  # in Slack, answering in a thread is replying to its root
        if own:
            # What the bot's own post answered, as its outbox wrote it in the metadata
            # (read back when catching up after a restart: it tells what was answered).
            answered = _metadata_reply_to(ev.get("metadata"))
            if answered is not None:
                reply_to = message_id(channel_id, answered)
        msg = Message(
            message_id(channel_id, ts),
            channel_id,
            user,
            content.text,
            at,
            reply_to=reply_to,
            thread=thread,
            mentions=content.mentions,
        )
        channel = await self.directory.channel(channel_id)
        return ChatEvent(EventKind.POSTED, channel, f"slack:{channel_id}:{ts}", at, message=msg)

    async def _author(self, ev: Mapping[str, Any], kind: str, *, own: bool) -> User:
        if own:
            return await self.directory.user(self.bot_user_id)
        user_id, bot_id = ev.get("user"), ev.get("bot_id")
        if isinstance(user_id, str) and user_id:
            return await self.directory.user(user_id, is_bot=bool(bot_id))
        if isinstance(bot_id, str) and bot_id:
            name = ev.get("username") or (ev.get("bot_profile") or {}).get("name") or bot_id
            return User(bot_id, str(name), is_bot=True)
        raise MalformedPayload(kind, "no user and no bot_id")

    async def edited(self, ev: Mapping[str, Any]) -> ChatEvent | None:
        kind = payload_kind(ev)
        channel_id = _str(ev, "channel", kind)
        inner = _dict(ev, "message", kind)
        ts = _str(inner, "ts", kind)
        if inner.get("subtype") == TOMBSTONE:  # a thread root with replies was deleted
            at = slack_time(ev.get("event_ts") or ev.get("ts") or ts, kind)
            return await self._removed(channel_id, ts, at)
        text = inner.get("text") or ""
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            raise MalformedPayload(kind, "missing, invalid or oversized text")
        previous = ev.get("previous_message")
        if (
            isinstance(previous, Mapping)
            and previous.get("text") == text
            and readable(previous.get("attachments")) == readable(inner.get("attachments"))
        ):
            return None  # a web page's preview, a thread's reply count: no new words
        if self.is_own(inner):
            return None
        edited = inner.get("edited")
        edit_ts = (
            (edited.get("ts") if isinstance(edited, Mapping) else None)
            or ev.get("event_ts")
            or ev.get("ts")
        )
        at = slack_time(edit_ts, kind)
        user = await self._author(inner, kind, own=False)
        content = await message_content(self.directory, inner, text)
        channel = await self.directory.channel(channel_id)
        return ChatEvent(
            EventKind.EDITED,
            channel,
            f"slack:{channel_id}:{ts}:edit:{edit_ts}",
            at,
            target_id=message_id(channel_id, ts),
            user=user,
            text=content.text,
        )

    async def deleted(self, ev: Mapping[str, Any]) -> ChatEvent | None:
        kind = payload_kind(ev)
        channel_id = _str(ev, "channel", kind)
        target = ev.get("deleted_ts")
        if not isinstance(target, str) or not target:
            previous = ev.get("previous_message")
            target = previous.get("ts") if isinstance(previous, Mapping) else None
        if not isinstance(target, str) or not target:
            raise MalformedPayload(kind, "missing 'deleted_ts'")
        at = slack_time(ev.get("event_ts") or ev.get("ts") or target, kind)
        return await self._removed(channel_id, target, at)

    async def _removed(self, channel_id: str, ts: str, at: datetime) -> ChatEvent:
        """The message ``ts`` is gone: deleted, or replaced by its tombstone (one id for
        both, so a tombstone and the deletion of the tombstone are handled once)."""
        channel = await self.directory.channel(channel_id)
        return ChatEvent(
            EventKind.DELETED, channel, f"slack:{channel_id}:{ts}:delete", at,
            target_id=message_id(channel_id, ts),
        )

    async def reaction(self, ev: Mapping[str, Any]) -> ChatEvent | None:
        kind = payload_kind(ev)
        user_id = _str(ev, "user", kind)
        name = _str(ev, "reaction", kind)
        item = _dict(ev, "item", kind)
        if item.get("type") != "message":
            return None  # reactions on files are not part of the conversation
        channel_id = _str(item, "channel", kind)
        target = _str(item, "ts", kind)
        event_ts = ev.get("event_ts") or target
        at = slack_time(event_ts, kind)
        if user_id == self.bot_user_id:
            return None
        user = await self.directory.user(user_id)
        channel = await self.directory.channel(channel_id)
        return ChatEvent(
            EventKind.REACTION_ADDED,
            channel,
            f"slack:{channel_id}:{target}:react:{user_id}:{name}:{event_ts}",
            at,
            target_id=message_id(channel_id, target),
            user=user,
            emoji=from_slack_name(name),
        )


METADATA_TYPE = "kuuki_reply"


def reply_metadata(target_ts: str) -> dict[str, Any]:
    """Slack message metadata the outbox attaches to what the bot posts: the ``ts`` of the
    message it answers (``conversations.history`` returns it with include_all_metadata)."""
    return {"event_type": METADATA_TYPE, "event_payload": {"reply_to": target_ts}}


def _metadata_reply_to(raw: Any) -> str | None:
    if not isinstance(raw, Mapping) or raw.get("event_type") != METADATA_TYPE:
        return None
    payload = raw.get("event_payload")
    value = payload.get("reply_to") if isinstance(payload, Mapping) else None
    return value if isinstance(value, str) and value else None
