"""The workspace of the local Slack: users, channels and messages, and the shapes of the
events and envelopes Slack sends about them. No I/O here: Socket Mode (`socket_mode.py`)
and the Web API (`server.py`) serve this state. Waiting never sleeps: `wait_for` wakes on
every change.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Payload = dict[str, Any]


@dataclass(slots=True)
class SocketEnvelope:
    id: str
    type: str  # "events_api" | "slash_commands"
    payload: Payload
    accepts_response_payload: bool
    attempts: int = 0
    ack: Payload | None = None

    def frame(self) -> Payload:
        return {
            "envelope_id": self.id,
            "type": self.type,
            "payload": self.payload,
            "accepts_response_payload": self.accepts_response_payload,
            "retry_attempt": max(self.attempts - 1, 0),
            "retry_reason": "timeout" if self.attempts > 1 else "",
        }


@dataclass(slots=True)
class Workspace:
    users: dict[str, Payload] = field(default_factory=dict)
    channels: dict[str, Payload] = field(default_factory=dict)
    usergroups: dict[str, Payload] = field(default_factory=dict)  # id → usergroups.list row
    messages: dict[str, list[Payload]] = field(default_factory=dict)  # channel → in time order


class SlackState:
    """One workspace, its users, channels and messages (see module doc)."""

    def __init__(
        self, *, bot_name: str = "kuuki", team_id: str = "T0KUUKI01", app_id: str = "A0KUUKI01"
    ) -> None:
        self.team_id = team_id
        self.app_id = app_id
        self.bot_user_id = "U0BOT00001"
        self.bot_id = "B0BOT00001"
        self.ws = Workspace()
        self.port = 0
        self._ids = itertools.count(1)
        self._last_ts = 0.0
        self._changed = asyncio.Event()
        self.add_user(bot_name, uid=self.bot_user_id, is_bot=True)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08d}"

    def add_user(
        self,
        name: str,
        *,
        uid: str | None = None,
        is_bot: bool = False,
        is_admin: bool = False,
        is_owner: bool = False,
    ) -> str:
        uid = uid or self._new_id("U")
        self.ws.users[uid] = {
            "id": uid,
            "team_id": self.team_id,
            "name": name,
            "real_name": name,
            "deleted": False,
            "is_bot": is_bot,
            "is_admin": is_admin,
            "is_owner": is_owner,
            "profile": {"display_name": name, "real_name": name},
        }
        if is_bot:
            self.ws.users[uid]["bot_id"] = self.bot_id if uid == self.bot_user_id else "B" + uid
        return uid

    def add_channel(
        self,
        name: str,
        *,
        private: bool = False,
        im_user: str | None = None,
        member: bool = True,
        mpim: bool = False,
        cid: str | None = None,
    ) -> str:
        """A conversation: a channel, a private one, a DM with `im_user` or a multi-party
        DM (`mpim`, private too); `cid` gives it a fixed id (a captured payload's)."""
        private = private or mpim
        cid = cid or self._new_id("D" if im_user else ("G" if private else "C"))
        raw: Payload = {"id": cid, "created": int(time.time()), "is_archived": False}
        if im_user:
            raw.update({"is_im": True, "user": im_user, "is_private": True})
        else:
            raw.update(
                {"name": name, "is_channel": not mpim, "is_private": private, "is_member": member}
            )
            if mpim:
                raw.update({"is_mpim": True, "is_group": False})
        self.ws.channels[cid] = raw
        self.ws.messages[cid] = []
        return cid

    def add_usergroup(self, handle: str, *, gid: str | None = None) -> str:
        """A user group (``<!subteam^S…>``), as ``usergroups.list`` shows it."""
        gid = gid or self._new_id("S")
        self.ws.usergroups[gid] = {
            "id": gid, "team_id": self.team_id, "is_usergroup": True, "is_subteam": True,
            "name": handle.replace("-", " ").title(), "handle": handle, "user_count": 0,
        }
        return gid

    def next_ts(self) -> str:
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    def find_message(self, channel: str, ts: str) -> Payload | None:
        return next((m for m in self.ws.messages.get(channel, []) if m["ts"] == ts), None)

    @property
    def bot_messages(self) -> list[Payload]:
        return [
            m for msgs in self.ws.messages.values() for m in msgs if m.get("bot_id") == self.bot_id
        ]

    # -- what people do (each becomes events, as on Slack) ---------------------------------

    def user_message(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        bot_id: str | None = None,
    ) -> Payload:
        """Store a message (not yet delivered) and return it."""
        msg: Payload = {"type": "message", "user": user, "text": text, "ts": self.next_ts()}
        if thread_ts:
            msg["thread_ts"] = thread_ts
            root = self.find_message(channel, thread_ts)
            if root is not None:
                root.setdefault("thread_ts", thread_ts)
                root["reply_count"] = int(root.get("reply_count", 0)) + 1
                root["latest_reply"] = msg["ts"]
        if bot_id:
            msg["bot_id"] = bot_id
        self.ws.messages[channel].append(msg)
        return msg

    def message_event(self, channel: str, msg: Payload, *, kind: str = "message") -> Payload:
        ch = self.ws.channels.get(channel, {})
        channel_type = "im" if ch.get("is_im") else ("group" if ch.get("is_private") else "channel")
        event: Payload = {**msg, "type": kind, "channel": channel, "event_ts": msg["ts"]}
        if kind == "message":
            event["channel_type"] = channel_type
        return event

    def event_envelope(self, event: Payload) -> SocketEnvelope:
        payload: Payload = {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": self._new_id("Ev"),
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }
        return SocketEnvelope(self._new_id("env-"), "events_api", payload, False)

    def slash_envelope(self, user: str, channel: str, text: str, command: str) -> SocketEnvelope:
        env_id = self._new_id("env-")
        ch = self.ws.channels.get(channel, {})
        payload: Payload = {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "team_domain": "kuuki-test",
            "channel_id": channel,
            "channel_name": ch.get("name", "directmessage"),
            "user_id": user,
            "user_name": self.ws.users.get(user, {}).get("name", user),
            "command": command,
            "text": text,
            "api_app_id": self.app_id,
            "is_enterprise_install": "false",
            "response_url": f"http://127.0.0.1:{self.port}/respond/{env_id}",
            "trigger_id": self._new_id("trigger-"),
        }
        return SocketEnvelope(env_id, "slash_commands", payload, True)

    # -- event shapes ---------------------------------------------------------------------------

    def changed_event(self, channel: str, before: Payload, after: Payload) -> Payload:
        ts = self.next_ts()
        return {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "channel": channel,
            "message": {**public(after), "type": "message"},
            "previous_message": {**public(before), "type": "message"},
            "ts": ts,
            "event_ts": ts,
        }

    def deleted_event(self, channel: str, before: Payload) -> Payload:
        ts = self.next_ts()
        return {
            "type": "message",
            "subtype": "message_deleted",
            "hidden": True,
            "channel": channel,
            "deleted_ts": before["ts"],
            "previous_message": public(before),
            "ts": ts,
            "event_ts": ts,
        }

    def shared(self, channel: str, msg: Payload) -> Payload:
        """The attachment Slack adds to a message that shares or forwards ``msg`` (said in
        ``channel``): ``is_share``, its author and its words, as Slack's own capture shows
        (tests/platforms/payloads/slack/share_with_message.json)."""
        author = self.ws.users.get(str(msg.get("user")), {})
        name = str(author.get("name") or msg.get("username") or "")
        ts, text = str(msg["ts"]), str(msg.get("text") or "")
        att: Payload = {
            "ts": ts, "channel_id": channel, "channel_team": self.team_id,
            "is_msg_unfurl": True, "is_share": True, "color": "D0D0D0",
            "from_url": f"https://kuuki-test.slack.com/archives/{channel}/p{ts.replace('.', '')}",
            "fallback": f"[{ts}] {name}: {text}", "text": text, "author_name": name,
            "author_subname": name, "mrkdwn_in": ["text"], "footer": "Slack Conversation",
        }
        if msg.get("user"):
            att["author_id"] = msg["user"]
        return att

    def tombstone(self, channel: str, root: Payload) -> Payload:
        """Delete a thread root that has replies, as Slack does: a tombstone keeps its place
        (history shows it, its replies stay), and the event is a ``message_changed`` whose
        message is the tombstone (tests/platforms/payloads/slack/tombstone_changed.json)."""
        before = dict(root)
        root.clear()
        root.update({
            "type": "message", "subtype": "tombstone", "text": "This message was deleted.",
            "user": "USLACKBOT", "hidden": True, "ts": before["ts"], "thread_ts": before["ts"],
            "parent_user_id": "USLACKBOT", "reply_count": before.get("reply_count", 0),
            "latest_reply": before.get("latest_reply"), "is_locked": False,
            "subscribed": False,
        })
        return self.changed_event(channel, before, root)

    def reaction_event(self, user: str, channel: str, ts: str, name: str) -> Payload:
        target = self.find_message(channel, ts) or {}
        return {
            "type": "reaction_added",
            "user": user,
            "reaction": name,
            "item_user": target.get("user"),
            "item": {"type": "message", "channel": channel, "ts": ts},
            "event_ts": self.next_ts(),
        }

    # -- waiting ------------------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        """Return once `predicate()` holds; TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()


def public(msg: Payload) -> Payload:
    """A stored message as Slack shows it (without this server's bookkeeping)."""
    return {k: v for k, v in msg.items() if k != "link_names"}
