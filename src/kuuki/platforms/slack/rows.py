"""Reading Slack's Web API for history, and one row of it mapped.

``users.conversations`` (`member_channels`), ``conversations.history`` (`history`, paged,
newest first as Slack gives it) and ``conversations.replies`` (`replies`); `from_history`
maps a row as the live path maps the event it once was, through the same `Mapper`, so a
message read back reads as it did live. What to read when is kuuki.platforms.slack.backfill.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import ChatEvent
from kuuki.platforms.slack.mapping import TOMBSTONE, MalformedPayload, Mapper

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


async def history(
    client: AsyncWebClient,
    channel_id: str,
    *,
    limit: int,
    oldest: str | None,
    latest: str | None = None,
) -> list[dict[str, Any]]:
    """Up to ``limit`` rows of ``conversations.history`` after ``oldest`` (and before
    ``latest``), newest first; a failure is logged and ends the reading."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while len(rows) < limit:
        kwargs: dict[str, Any] = {
            "channel": channel_id, "limit": min(200, limit - len(rows)),
            "include_all_metadata": True,
        }
        if oldest is not None:
            kwargs["oldest"] = oldest
        if latest is not None:
            kwargs["latest"] = latest
        if cursor:
            kwargs["cursor"] = cursor
        try:
            resp = await client.conversations_history(**kwargs)
        except SlackApiError as exc:
            log.warning("no history for %s: %s", channel_id, exc.response.get("error"))
            break
        rows += [r for r in resp.get("messages") or [] if isinstance(r, dict)]
        cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
        if not resp.get("has_more") or not cursor:
            break
    return rows[:limit]


async def replies(
    client: AsyncWebClient, channel_id: str, root: str, after: str | None
) -> list[dict[str, Any]]:
    """A thread's rows from ``conversations.replies`` said after ``after``: the root only
    when it is too, or when it is a tombstone (the root was deleted: read back, it deletes
    the stored root); a failure is logged and reads as none."""
    kwargs: dict[str, Any] = {
        "channel": channel_id, "ts": root, "limit": 200, "include_all_metadata": True,
    }
    if after is not None:
        kwargs["oldest"] = after
    try:
        resp = await client.conversations_replies(**kwargs)
    except SlackApiError as exc:
        log.warning("no replies for %s in %s: %s", root, channel_id,
                    exc.response.get("error"))
        return []
    return [
        r for r in resp.get("messages") or []
        if isinstance(r, dict)
        and (after is None or ts_key(r.get("ts")) > ts_key(after) or r.get("subtype") == TOMBSTONE)
    ]


async def from_history(
    mapper: Mapper, channel_id: str, raw: Mapping[str, Any]
) -> ChatEvent | None:
    """One row of ``conversations.history``/``replies`` mapped as the live path maps its
    event (rows carry no channel, and may carry no type); the bot's own posts included.
    None: nothing to hand in (ignored, or a row that cannot be mapped: logged)."""
    row = {**raw, "channel": channel_id}
    row.setdefault("type", "message")
    try:
        return await mapper.event(row, include_own=True)
    except MalformedPayload as exc:
        log.warning("skipped a slack %s payload from history: %s", exc.kind, exc.reason)
        return None


def ts_key(ts: Any) -> float:
    """A ``ts`` to sort by (0.0 for anything that is not one)."""
    try:
        return float(ts)
    except (TypeError, ValueError):
        return 0.0
