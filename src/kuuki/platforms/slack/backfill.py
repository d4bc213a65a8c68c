"""Start-up backfill: the recent history of every conversation the bot is in, fed to the
engine as past POSTED events so it does not start blind.

The engine cannot yet be told that an event is history, so every backfilled message id is
registered with the outbox first, which then drops any action about it: recorded, never
answered. Event ids are the live ones (``slack:<channel>:<ts>``), so a message that also
arrives live (a redelivery after restart) is handled once.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from ...domain import EventKind
from ...engine import Engine
from .mapping import MalformedPayload, Mapper
from .outbox import SlackOutbox

log = logging.getLogger("kuuki.slack")

TYPES_WITH_DMS = "public_channel,private_channel,im"
TYPES = "public_channel,private_channel"


async def member_channels(
    client: AsyncWebClient, mapper: Mapper, *, max_channels: int = 200
) -> list[str]:
    """Ids of the conversations the bot is a member of (``users.conversations``)."""
    types = TYPES_WITH_DMS
    found: list[str] = []
    cursor: str | None = None
    while len(found) < max_channels:
        kwargs: dict[str, Any] = {"types": types, "exclude_archived": True, "limit": 200}
        if cursor:
            kwargs["cursor"] = cursor
        try:
            resp = await client.users_conversations(**kwargs)
        except SlackApiError as exc:
            if exc.response.get("error") == "missing_scope" and types == TYPES_WITH_DMS:
                types, cursor, found = TYPES, None, []  # no im:read: channels only
                continue
            raise
        for raw in resp.get("channels") or []:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                mapper.directory.remember_channel(raw)
                found.append(raw["id"])
        cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            break
    return found[:max_channels]


async def backfill(
    client: AsyncWebClient,
    mapper: Mapper,
    engine: Engine,
    outbox: SlackOutbox,
    *,
    per_channel: int = 50,
) -> int:
    """Feed recent history to the engine; returns how many messages were queued."""
    if per_channel <= 0:
        return 0
    try:
        channels = await member_channels(client, mapper)
    except SlackApiError as exc:
        log.warning("backfill skipped: users.conversations failed: %s", exc.response.get("error"))
        return 0
    queued = 0
    for channel_id in channels:
        try:
            resp = await client.conversations_history(channel=channel_id, limit=per_channel)
        except SlackApiError as exc:
            log.warning("no history for %s: %s", channel_id, exc.response.get("error"))
            continue
        rows = [r for r in resp.get("messages") or [] if isinstance(r, dict)]
        for raw in sorted(rows, key=lambda r: _ts_key(r.get("ts"))):
            queued += await _feed(mapper, engine, outbox, {**raw, "channel": channel_id})
    log.info("backfilled %d messages from %d conversations", queued, len(channels))
    return queued


async def _feed(mapper: Mapper, engine: Engine, outbox: SlackOutbox, raw: dict[str, Any]) -> int:
    raw.setdefault("type", "message")
    try:
        event = await mapper.event(raw, include_own=True)
    except MalformedPayload as exc:
        log.warning("skipped backfilled slack %s payload: %s", exc.kind, exc.reason)
        return 0
    if event is None or event.kind is not EventKind.POSTED or event.message is None:
        return 0
    # The engine records backfilled events without judging them; the outbox suppression
    # stays as a second guard for actions a timer might still raise about old messages.
    outbox.suppress([f"{event.channel.id}:{event.message.id}"])
    return 1 if await engine.handle(dataclasses.replace(event, backfill=True)) else 0


def _ts_key(ts: Any) -> float:
    try:
        return float(ts)
    except (TypeError, ValueError):
        return 0.0
