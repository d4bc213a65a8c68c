"""Slack ids to names, and Slack markup to readable text.

Users are looked up once with ``users.info`` and channels with ``conversations.info``; the
answers are cached for the life of the adapter (bounded), failed user look-ups included,
so an unknown id costs one call, not one per mention; user groups are read once with
``usergroups.list``. `Directory.render` turns ``<@U…>``, ``<#C…|name>``, ``<!here>``,
``<!subteam^S…>`` (the group's handle), ``<!date^…|fallback>`` (the fallback, else the
time in UTC) and ``<https://…|label>`` into what a person would read, so no prompt ever
sees a raw Slack id; one message looks up at most `LOOKUPS_PER_MESSAGE` users
(the rest read "@someone"), so a message naming hundreds of strangers cannot hold its
acknowledgement past Slack's three seconds. The bot's own ``<@U…>`` becomes
``@<persona name>`` and is reported as a platform mention.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kuuki.domain import Channel, User, Visibility

log = logging.getLogger("kuuki.slack")

_MARKUP = re.compile(r"<([^<>]*)>")
_CACHE_SIZE = 10_000
LOOKUPS_PER_MESSAGE = 10
UNKNOWN_PERSON = "someone"


@dataclass(frozen=True, slots=True)
class UserInfo:
    user: User
    is_admin: bool = False


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    mentions: tuple[str, ...]


class Lookups:
    """How many users one message may still look up: its text and its attachments share
    `LOOKUPS_PER_MESSAGE`."""

    def __init__(self, left: int = LOOKUPS_PER_MESSAGE) -> None:
        self.left = left

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True


K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = size

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)


class Directory:
    """Cached users and channels of one workspace, and the renderer that needs them."""

    def __init__(
        self, client: AsyncWebClient, *, team_id: str, bot_user_id: str, bot_name: str
    ) -> None:
        self.client = client
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_name = bot_name
        self._users: _Lru[str, UserInfo] = _Lru()
        self._channels: _Lru[str, Channel] = _Lru()
        self._groups: dict[str, str] | None = None  # user group id → handle, read once
        self._groups_lock = asyncio.Lock()

    # -- users ----------------------------------------------------------------------------

    async def user_info(
        self, user_id: str, *, hint: str | None = None, fresh: bool = False
    ) -> UserInfo:
        """A user's name and role; `fresh` skips the cache (permission checks must not
        trust an admin flag that may have been revoked since)."""
        if user_id == self.bot_user_id:
            return UserInfo(User(user_id, self.bot_name, is_bot=True))
        cached = None if fresh else self._users.get(user_id)
        if cached is not None:
            return cached
        try:
            resp = await self.client.users_info(user=user_id)
        except SlackApiError as exc:
            log.warning("users.info %s failed: %s", user_id, exc.response.get("error"))
            # Remembered too: a deleted or foreign user stays unknown, and asking again for
            # every mention of them is what made one message cost hundreds of calls.
            missing = UserInfo(User(user_id, hint or UNKNOWN_PERSON))
            if not fresh:
                self._users.put(user_id, missing)
            return missing
        info = user_from_payload(resp.get("user") or {}, fallback=hint or user_id)
        self._users.put(user_id, info)
        return info

    def cached_user(self, user_id: str) -> User | None:
        """A user already known (or known to be unknown), without asking Slack."""
        if user_id == self.bot_user_id:
            return User(user_id, self.bot_name, is_bot=True)
        found = self._users.get(user_id)
        return None if found is None else found.user

    async def user(self, user_id: str, *, is_bot: bool = False, hint: str | None = None) -> User:
        found = (await self.user_info(user_id, hint=hint)).user
        if is_bot and not found.is_bot:
            return User(found.id, found.name, is_bot=True)
        return found

    # -- channels ---------------------------------------------------------------------------

    async def channel(self, channel_id: str) -> Channel:
        cached = self._channels.get(channel_id)
        if cached is not None:
            return cached
        try:
            resp = await self.client.conversations_info(channel=channel_id)
        except SlackApiError as exc:
            # Not cached: the next event retries, and the id still works as a name.
            log.warning("conversations.info %s failed: %s", channel_id, exc.response.get("error"))
            # Unknown is treated as private (the cautious side); D… ids are always DMs.
            visibility = Visibility.DM if channel_id.startswith("D") else Visibility.PRIVATE
            return Channel(
                channel_id, channel_id, visibility, workspace=self.team_id, platform="slack"
            )
        ch = await self._channel_from(resp.get("channel") or {}, channel_id)
        self._channels.put(channel_id, ch)
        return ch

    async def _channel_from(self, raw: dict[str, Any], channel_id: str) -> Channel:
        if raw.get("is_im"):
            peer = str(raw.get("user") or "")
            name = "dm:" + ((await self.user_info(peer)).user.name if peer else channel_id)
            visibility = Visibility.DM
        else:
            name = str(raw.get("name") or channel_id)
            private = bool(raw.get("is_private") or raw.get("is_group") or raw.get("is_mpim"))
            visibility = Visibility.PRIVATE if private else Visibility.PUBLIC
        return Channel(channel_id, name, visibility, workspace=self.team_id, platform="slack")

    def remember_channel(self, raw: dict[str, Any]) -> None:
        """Seed the cache from a ``users.conversations`` row (DM rows need a lookup)."""
        cid = raw.get("id")
        if isinstance(cid, str) and not raw.get("is_im"):
            private = bool(raw.get("is_private") or raw.get("is_group") or raw.get("is_mpim"))
            self._channels.put(
                cid,
                Channel(
                    cid,
                    str(raw.get("name") or cid),
                    Visibility.PRIVATE if private else Visibility.PUBLIC,
                    workspace=self.team_id,
                    platform="slack",
                ),
            )

    # -- text ---------------------------------------------------------------------------------

    async def render(self, text: str, *, lookups: Lookups | None = None) -> Rendered:
        """Slack markup → readable text, plus the user ids the text mentions. One
        message's parts share its `lookups` (a new allowance when none is given)."""
        mentions: list[str] = []
        out: list[str] = []
        pos = 0
        lookups = lookups if lookups is not None else Lookups()
        for m in _MARKUP.finditer(text):
            out.append(unescape(text[pos : m.start()]))
            out.append(await self._token(m.group(1), mentions, lookups))
            pos = m.end()
        out.append(unescape(text[pos:]))
        return Rendered("".join(out), tuple(dict.fromkeys(mentions)))

    async def name_of(self, user_id: str, *, hint: str | None, lookups: Lookups) -> str | None:
        """A user's name: known (the bot, the cache) without asking Slack, looked up while
        `lookups` allows, else `hint` (None when there is none)."""
        if user_id == self.bot_user_id:
            return self.bot_name
        known = self.cached_user(user_id)
        if known is not None:
            return known.name
        if not lookups.take():
            return hint
        return (await self.user(user_id, hint=hint)).name

    async def _token(self, inner: str, mentions: list[str], lookups: Lookups) -> str:
        target, _, label = inner.partition("|")
        label = unescape(label)
        if target.startswith("@"):
            uid = target[1:]
            mentions.append(uid)
            name = await self.name_of(uid, hint=label or None, lookups=lookups)
            return "@" + (name or UNKNOWN_PERSON)
        if target.startswith("#"):
            if label:
                return "#" + label
            return "#" + (await self.channel(target[1:])).name
        if target.startswith("!"):
            return await self._special(target[1:], label)
        url = unescape(target)
        return f"{label} ({url})" if label and label != url else url


    async def _special(self, body: str, label: str) -> str:
        """``<!…>``: a date (its fallback, else the time in UTC), a user group (its label,
        else its handle), ``@here``/``@channel``/``@everyone``. None of them is a mention
        of a person, so none is reported as one (a user group never addresses the bot)."""
        word, _, rest = body.partition("^")
        if word == "date":
            return label or _utc_date(rest.partition("^")[0])
        if word == "subteam":
            handle = label or await self.group_handle(rest.partition("^")[0]) or "group"
            return handle if handle.startswith("@") else "@" + handle
        return label if label.startswith("@") else "@" + (label or word)

    async def group_handle(self, group_id: str) -> str | None:
        """A user group's handle, from ``usergroups.list`` asked once per adapter (None:
        not among them, or the list could not be read)."""
        if self._groups is None:
            async with self._groups_lock:
                if self._groups is None:
                    self._groups = await self._load_groups()
        return self._groups.get(group_id)

    async def _load_groups(self) -> dict[str, str]:
        try:
            resp = await self.client.usergroups_list()
        except SlackApiError as exc:  # once: the empty answer is kept
            log.warning("usergroups.list failed (%s); user groups read as @group",
                        exc.response.get("error"))
            return {}
        groups: dict[str, str] = {}
        for raw in resp.get("usergroups") or []:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                handle = raw.get("handle") or raw.get("name")
                if isinstance(handle, str) and handle:
                    groups[raw["id"]] = handle
        return groups


def _utc_date(ts: str) -> str:
    """A ``<!date^…>`` timestamp with no fallback, as a person reads it (UTC)."""
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (ValueError, OverflowError, OSError):
        return "a date"


def user_from_payload(raw: dict[str, Any], *, fallback: str) -> UserInfo:
    profile = raw.get("profile") or {}
    name = (
        profile.get("display_name")
        or profile.get("real_name")
        or raw.get("real_name")
        or raw.get("name")
        or fallback
    )
    uid = str(raw.get("id") or fallback)
    is_bot = bool(raw.get("is_bot")) or uid == "USLACKBOT"
    admin = bool(raw.get("is_admin") or raw.get("is_owner") or raw.get("is_primary_owner"))
    return UserInfo(User(uid, str(name), is_bot=is_bot), is_admin=admin)


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def escape(text: str) -> str:
    """What Slack asks of outgoing text: ``&``, ``<`` and ``>`` escaped, so no markup of
    ours (``<!channel>``, ``<@U…>``) can be read as a control sequence."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
