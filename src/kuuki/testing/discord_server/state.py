"""The world of the local Discord: guilds, channels, users and messages, and the payloads
Discord sends for them. No I/O here: the gateway (`gateway.py`) and the REST API
(`server.py`) serve this state; `wait_for` wakes on every change they make to it.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Payload = dict[str, Any]

DISCORD_EPOCH_MS = 1_420_070_400_000
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_CHANNELS = 1 << 4
MEMBER_PERMISSIONS = VIEW_CHANNEL | SEND_MESSAGES | (1 << 6) | (1 << 16)  # + reactions, history
_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class DiscordState:
    """One guild (more with `add_guild`), its channels, users and messages."""

    def __init__(
        self, *, token: str = "test-token", bot_name: str = "Kuu", guild_name: str = "kuuki-test"
    ) -> None:
        self.token = token
        self._ids = itertools.count(1)
        self.guild_id = self.snowflake()
        self.guild_ids = [self.guild_id]
        self.app_id = self.snowflake()
        self.bot_user = self._user_payload(self.snowflake(), bot_name, bot=True)
        self.bot_role_id = self.snowflake()
        self.users: dict[str, Payload] = {}  # by name
        self.channels: dict[str, Payload] = {}  # by id (text channels, threads, DMs)
        self.messages: dict[str, Payload] = {}  # by id, current state
        self.commands: list[Payload] = []
        # threads the bot is never told about (no THREAD_CREATE, not in GUILD_CREATE), so
        # discord.py has no object for them: their messages come with a partial channel
        self.unseen: set[str] = set()
        self._changed = asyncio.Condition()

    def snowflake(self, *, ago_s: float = 0.0) -> str:
        """A new id; ``ago_s`` dates it in the past (Discord reads a message's time from
        its id), for messages said while the bot was away."""
        ms = int((time.time() - ago_s) * 1000) - DISCORD_EPOCH_MS
        return str((ms << 22) | (next(self._ids) & 0x3FFFFF))

    def add_guild(self, *, shard: int = 0, shard_count: int = 1) -> str:
        """A new guild whose id falls on `shard` of `shard_count` (Discord's rule)."""
        for ms in range(shard_count):
            gid = self.snowflake(ago_s=(ms + 1) / 1000)
            if (int(gid) >> 22) % shard_count == shard:
                self.guild_ids.append(gid)
                return gid
        raise AssertionError("unreachable: consecutive milliseconds cover every shard")

    def _user_payload(self, uid: str, name: str, *, bot: bool = False) -> Payload:
        return {
            "id": uid,
            "username": name,
            "discriminator": "0",
            "global_name": name,
            "avatar": None,
            "bot": bot,
        }

    def user(self, name: str, *, bot: bool = False) -> Payload:
        if name not in self.users:
            self.users[name] = self._user_payload(self.snowflake(), name, bot=bot)
        return self.users[name]

    def _member(self, user: Payload) -> Payload:
        roles = [self.bot_role_id] if user["id"] == self.bot_user["id"] else []
        return {"roles": roles, "joined_at": now_iso(), "deaf": False, "mute": False, "flags": 0}

    def text_channel(
        self, name: str, *, private: bool = False, guild_id: str | None = None
    ) -> Payload:
        """The guild text channel called `name` (created on first use), in the first guild
        unless `guild_id` says which."""
        guild = guild_id or self.guild_id
        for ch in self.channels.values():
            if ch.get("name") == name and ch["type"] == 0 and ch["guild_id"] == guild:
                return ch
        overwrites: list[Payload] = []
        if private:
            overwrites = [
                {"id": guild, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)},
                {"id": self.bot_role_id, "type": 0, "allow": str(VIEW_CHANNEL), "deny": "0"},
            ]
        ch = {
            "id": self.snowflake(),
            "type": 0,
            "guild_id": guild,
            "name": name,
            "position": len(self.channels),
            "permission_overwrites": overwrites,
            "topic": None,
            "nsfw": False,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "parent_id": None,
        }
        self.channels[ch["id"]] = ch
        return ch

    def dm_channel(self, user_name: str) -> Payload:
        user = self.user(user_name)
        for ch in self.channels.values():
            if ch["type"] == 1 and ch["recipients"][0]["id"] == user["id"]:
                return ch
        ch = {"id": self.snowflake(), "type": 1, "recipients": [user], "last_message_id": None}
        self.channels[ch["id"]] = ch
        return ch

    def guild_payload(self, guild_id: str | None = None) -> Payload:
        guild = guild_id or self.guild_id
        everyone = {
            "id": guild,
            "name": "@everyone",
            "permissions": str(MEMBER_PERMISSIONS),
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        bot_role = everyone | {
            "id": self.bot_role_id,
            "name": self.bot_user["username"],
            "position": 1,
            "managed": True,
            "tags": {"bot_id": self.bot_user["id"]},
        }
        mine = [c for c in self.channels.values() if c.get("guild_id") == guild]
        guild_channels = [c for c in mine if c["type"] == 0]
        threads = [c for c in mine if c["type"] in (11, 12) and c["id"] not in self.unseen]
        return {
            "id": guild,
            "name": "kuuki-test",
            "icon": None,
            "owner_id": next(iter(self.users.values()), self.bot_user)["id"],
            "roles": [everyone, bot_role],
            "channels": guild_channels,
            "threads": threads,
            "members": [self._member(self.bot_user) | {"user": self.bot_user}],
            "member_count": len(self.users) + 1,
            "large": False,
            "unavailable": False,
            "joined_at": now_iso(),
            "features": [],
            "emojis": [],
            "stickers": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_id": None,
            "afk_channel_id": None,
            "afk_timeout": 300,
            "nsfw_level": 0,
        }

    def message_payload(
        self,
        channel_id: str,
        author: Payload,
        content: str,
        *,
        reference: str | None = None,
        mid: str | None = None,
        flags: int = 0,
        ping: bool = False,
    ) -> Payload:
        """A message as Discord sends it; a reply with ``ping`` (the client's default
        "@ON") lists the replied message's author in ``mentions``, as Discord does."""
        ch = self.channels[channel_id]
        named = set(_MENTION.findall(content))
        replied = self.messages.get(reference or "", {}).get("author")
        if ping and replied is not None:
            named.add(replied["id"])
        mentioned = [u for u in [*self.users.values(), self.bot_user] if u["id"] in named]
        msg: Payload = {
            "id": mid or self.snowflake(),
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": mentioned,
            "mention_roles": _ROLE_MENTION.findall(content),
            "attachments": [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": 19 if reference else 0,
            "flags": flags,
        }
        if ch["type"] != 1:
            msg["guild_id"] = ch.get("guild_id", self.guild_id)
            msg["member"] = self._member(author)
        if reference is not None:
            msg["message_reference"] = {
                "type": 0,
                "message_id": reference,
                "channel_id": channel_id,
                "guild_id": msg.get("guild_id"),
                "fail_if_not_exists": False,
            }
            ref = self.messages.get(reference)
            msg["referenced_message"] = (
                {k: v for k, v in ref.items() if k != "referenced_message"} if ref else None
            )
        return msg

    # -- waiting ------------------------------------------------------------------------------

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)
