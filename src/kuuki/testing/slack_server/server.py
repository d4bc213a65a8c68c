"""A local Slack for tests: Web API and Socket Mode on 127.0.0.1, port 0.

The real slack-bolt / slack_sdk clients run against it unchanged, pointed only through their
documented seams: ``AsyncWebClient(base_url=server.api_url)``, and the Socket Mode URL that
``apps.connections.open`` returns (this server's own websocket).

Everything is recorded in full: every Web API call (`calls`), every envelope ack (`acks`),
every ``response_url`` post (`responses`). Socket Mode behaves like Slack's where it matters
for an adapter: ``hello`` on connect; ``events_api`` and ``slash_commands`` envelopes; an
envelope stays pending until acked, and pending events are redelivered (``retry_attempt``
counting up) on the next connection, and, with `redeliver_after` set, also after that many
seconds without an ack (at most `max_attempts` deliveries, as Slack retries an event a
few times and then gives up); `disconnect` sends Slack's ``disconnect`` message
(``refresh_requested`` / ``link_disabled``) and `drop` closes the socket outright, and the
client must come back through ``apps.connections.open``. The bot's own posts and
reactions come back as events, as on Slack. Waiting never sleeps: `wait_for` wakes on
every change.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

Payload = dict[str, Any]

_REACTION_NAME = re.compile(r"^[a-z0-9_+'\-]+$")
_MASS = re.compile(r"<!(channel|here|everyone)(\|[^>]*)?>")
_BARE_MASS = re.compile(r"@(channel|here|everyone)\b")
MAX_TEXT = 40_000


@dataclass(slots=True)
class ApiCall:
    """One Web API request as received."""

    method: str
    http_method: str
    token: str | None
    args: Payload
    headers: dict[str, str]


@dataclass(slots=True)
class Envelope:
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
class _Conn:
    ws: web.WebSocketResponse
    number: int
    draining: bool = False


@dataclass(slots=True)
class Workspace:
    users: dict[str, Payload] = field(default_factory=dict)
    channels: dict[str, Payload] = field(default_factory=dict)
    messages: dict[str, list[Payload]] = field(default_factory=dict)  # channel → in time order


class SlackServer:
    """See module doc. `start` it, give clients `api_url`, `close` it."""

    def __init__(
        self, *, bot_name: str = "kuuki", team_id: str = "T0KUUKI01", app_id: str = "A0KUUKI01"
    ) -> None:
        self.team_id = team_id
        self.app_id = app_id
        self.bot_user_id = "U0BOT00001"
        self.bot_id = "B0BOT00001"
        self.ws = Workspace()
        self.calls: list[ApiCall] = []
        self.acks: list[Payload] = []
        self.responses: list[Payload] = []
        self.connections_opened = 0
        self.bot_reactions: list[Payload] = []  # reactions.add calls that took, in order
        self._open = asyncio.Event()
        self._open.set()
        self._refused: set[str] = set()
        self._ids = itertools.count(1)
        self._last_ts = 0.0
        self._pending: OrderedDict[str, Envelope] = OrderedDict()
        self._conns: list[_Conn] = []
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.redeliver_after: float | None = None  # seconds; None: only on reconnect
        self.given_up: list[Envelope] = []  # envelopes Slack stopped retrying
        self.max_attempts = 4  # the first delivery and Slack's three retries
        self._retries: set[asyncio.Task[None]] = set()
        self.add_user(bot_name, uid=self.bot_user_id, is_bot=True)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link/", self._socket)
        app.router.add_post("/respond/{envelope}", self._respond)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        self._open.set()
        for task in list(self._retries):
            task.cancel()
        await asyncio.gather(*self._retries, return_exceptions=True)
        for conn in list(self._conns):
            await conn.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # -- the workspace ----------------------------------------------------------------------

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
        self, name: str, *, private: bool = False, im_user: str | None = None, member: bool = True
    ) -> str:
        cid = self._new_id("D" if im_user else ("G" if private else "C"))
        raw: Payload = {"id": cid, "created": int(time.time()), "is_archived": False}
        if im_user:
            raw.update({"is_im": True, "user": im_user, "is_private": True})
        else:
            raw.update(
                {"name": name, "is_channel": True, "is_private": private, "is_member": member}
            )
        self.ws.channels[cid] = raw
        self.ws.messages[cid] = []
        return cid

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

    def event_envelope(self, event: Payload) -> Envelope:
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
        return Envelope(self._new_id("env-"), "events_api", payload, False)

    def slash_envelope(self, user: str, channel: str, text: str, command: str) -> Envelope:
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
        return Envelope(env_id, "slash_commands", payload, True)

    async def emit(self, event: Payload) -> Envelope:
        env = self.event_envelope(event)
        await self.deliver(env)
        return env

    # -- socket mode ------------------------------------------------------------------------

    async def deliver(self, env: Envelope) -> None:
        """Queue an envelope; it goes out now if a client is connected, else on connect."""
        self._pending[env.id] = env
        conn = self._active()
        if conn is not None:
            await self._send(conn, env)
        self._notify()

    async def deliver_raw(self, frame: Payload | str) -> None:
        """Send any frame as is (malformed-payload tests); nothing waits for its ack."""
        conn = self._active()
        if conn is None:
            raise RuntimeError("no Socket Mode client connected")
        await conn.ws.send_str(frame if isinstance(frame, str) else json.dumps(frame))

    @property
    def pending(self) -> list[Envelope]:
        return list(self._pending.values())

    @property
    def connected(self) -> bool:
        return self._active() is not None

    def _active(self) -> _Conn | None:
        live = [c for c in self._conns if not c.draining and not c.ws.closed]
        return live[-1] if live else None

    async def _send(self, conn: _Conn, env: Envelope) -> None:
        env.attempts += 1
        # A send that fails leaves the envelope pending: redelivered on the next connection.
        with contextlib.suppress(ConnectionError, RuntimeError):
            await conn.ws.send_str(json.dumps(env.frame()))
        if self.redeliver_after is not None and env.type == "events_api":
            task = asyncio.get_running_loop().create_task(self._retry_later(env))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

    async def _retry_later(self, env: Envelope) -> None:
        assert self.redeliver_after is not None
        attempts = env.attempts
        await asyncio.sleep(self.redeliver_after)
        if env.id not in self._pending or env.attempts != attempts:
            return  # acked, or already sent again (a reconnect)
        if env.attempts >= self.max_attempts:
            self._pending.pop(env.id, None)  # Slack gives up on it
            self.given_up.append(env)
            self._notify()
            return
        conn = self._active()
        if conn is not None:
            await self._send(conn, env)

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Slack's ``disconnect`` message: the client must open a new connection."""
        conn = self._active()
        if conn is None:
            return
        conn.draining = True
        frame = {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake-applink"}}
        await conn.ws.send_str(json.dumps(frame))
        self._notify()

    async def drop(self) -> None:
        """Close the live socket from the server side, without a word."""
        conn = self._active()
        if conn is not None:
            conn.draining = True
            await conn.ws.close()
            self._notify()

    def refuse_token(self, token: str) -> None:
        """Answer ``invalid_auth`` to this token from now on (a revoked install)."""
        self._refused.add(token)

    def hold_connections(self) -> None:
        """Make ``apps.connections.open`` wait (the client stays away) until released."""
        self._open.clear()

    def release_connections(self) -> None:
        self._open.set()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections_opened += 1
        conn = _Conn(ws, self.connections_opened)
        for old in self._conns:
            old.draining = True
        self._conns.append(conn)
        hello = {
            "type": "hello",
            "num_connections": 1,
            "debug_info": {"host": "fake-applink", "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }
        await ws.send_str(json.dumps(hello))
        for env in list(self._pending.values()):
            if env.type == "slash_commands" and env.attempts > 0:
                # Slack does not retry a slash command: the user sees a dispatch failure.
                self._pending.pop(env.id, None)
                continue
            await self._send(conn, env)
        self._notify()
        try:
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    self._on_frame(msg.data)
        finally:
            self._conns.remove(conn)
            self._notify()
        return ws

    def _on_frame(self, data: str) -> None:
        try:
            frame = json.loads(data)
        except ValueError:
            return
        if isinstance(frame, dict) and isinstance(frame.get("envelope_id"), str):
            self.acks.append(frame)
            env = self._pending.pop(frame["envelope_id"], None)
            if env is not None:
                env.ack = frame
            self._notify()

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.responses.append({"envelope_id": request.match_info["envelope"], **body})
        self._notify()
        return web.Response(text="ok")

    # -- waiting ------------------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        """Return once `predicate()` holds; TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    async def wait_acked(self, timeout: float = 10) -> None:
        """Every envelope delivered so far has been acked by the client."""
        await self.wait_for(lambda: not self._pending, timeout)

    # -- Web API ------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: Payload = dict(request.query)
        raw = await request.text()
        if raw:
            if request.content_type == "application/json":
                body = json.loads(raw)
                if isinstance(body, dict):
                    args.update(body)
            else:
                args.update(dict(parse_qsl(raw, keep_blank_values=True)))
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or args.pop("token", None)
        self.calls.append(ApiCall(method, request.method, token, args, dict(request.headers)))
        self._notify()
        return web.json_response(await self._method(method, token, args))

    async def _method(self, method: str, token: str | None, args: Payload) -> Payload:
        if method == "apps.connections.open":
            if not token or not token.startswith("xapp-"):
                return _error("not_allowed_token_type")
            await self._open.wait()  # held: the client waits here, as for a slow Slack
            url = f"ws://127.0.0.1:{self.port}/link/?ticket={self._new_id('t')}"
            return {"ok": True, "url": url}
        if not token or not token.startswith("xoxb-") or token in self._refused:
            return _error("invalid_auth")
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return _error("unknown_method")
        result: Payload = await handler(args)
        return result

    async def _m_auth_test(self, args: Payload) -> Payload:
        bot = self.ws.users[self.bot_user_id]
        return {
            "ok": True,
            "url": "https://kuuki-test.slack.com/",
            "team": "kuuki-test",
            "user": bot["name"],
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    async def _m_users_info(self, args: Payload) -> Payload:
        user = self.ws.users.get(str(args.get("user")))
        return {"ok": True, "user": user} if user else _error("user_not_found")

    async def _m_conversations_info(self, args: Payload) -> Payload:
        ch = self.ws.channels.get(str(args.get("channel")))
        return {"ok": True, "channel": ch} if ch else _error("channel_not_found")

    async def _m_users_conversations(self, args: Payload) -> Payload:
        types = set(str(args.get("types") or "public_channel").split(","))
        rows = [c for c in self.ws.channels.values() if _channel_type(c) in types]
        rows = [c for c in rows if c.get("is_im") or c.get("is_member")]
        return _page(rows, args, "channels")

    _m_conversations_list = _m_users_conversations

    async def _m_conversations_history(self, args: Payload) -> Payload:
        """Top-level messages between ``oldest`` and ``latest`` (exclusive unless
        ``inclusive``), newest first, ``limit`` a page, older pages by ``cursor``."""
        channel = str(args.get("channel"))
        if channel not in self.ws.channels:
            return _error("channel_not_found")
        top = [
            m
            for m in self.ws.messages[channel]
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]
        return _window(top, args)

    async def _m_conversations_replies(self, args: Payload) -> Payload:
        """A thread: its root first, then its replies in time order (``oldest`` etc. as
        for history, which Slack applies to the replies; the root always comes first)."""
        channel, ts = str(args.get("channel")), str(args.get("ts"))
        if channel not in self.ws.channels:
            return _error("channel_not_found")
        root = self.find_message(channel, ts)
        if root is None:
            return _error("thread_not_found")
        replies = [
            m for m in self.ws.messages[channel] if m.get("thread_ts") == ts and m is not root
        ]
        page = _window(replies, args)
        page["messages"] = [_shown(root, args), *reversed(page["messages"])]
        return page

    async def _m_chat_postMessage(self, args: Payload) -> Payload:
        channel = str(args.get("channel"))
        text = args.get("text")
        if channel not in self.ws.channels:
            return _error("channel_not_found")
        if not isinstance(text, str) or not text:
            return _error("no_text")
        if len(text) > MAX_TEXT:
            return _error("msg_too_long")
        thread = args.get("thread_ts")
        msg = self.user_message(
            self.bot_user_id, channel, text, thread_ts=thread, bot_id=self.bot_id
        )
        msg["link_names"] = args.get("link_names")
        if isinstance(args.get("metadata"), dict):
            msg["metadata"] = args["metadata"]
        await self.emit(self.message_event(channel, _public(msg)))
        return {"ok": True, "channel": channel, "ts": msg["ts"], "message": _public(msg)}

    async def _m_chat_update(self, args: Payload) -> Payload:
        channel, ts = str(args.get("channel")), str(args.get("ts"))
        msg = self.find_message(channel, ts)
        if msg is None:
            return _error("message_not_found")
        before = dict(msg)
        msg["text"] = str(args.get("text") or "")
        msg["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
        await self.emit(self.changed_event(channel, before, msg))
        return {"ok": True, "channel": channel, "ts": ts, "text": msg["text"]}

    async def _m_reactions_add(self, args: Payload) -> Payload:
        channel, ts = str(args.get("channel")), str(args.get("timestamp"))
        name = str(args.get("name") or "")
        msg = self.find_message(channel, ts)
        if msg is None:
            return _error("message_not_found")
        if not _REACTION_NAME.match(name):
            return _error("invalid_name")
        reactions: list[Payload] = msg.setdefault("reactions", [])
        entry = next((r for r in reactions if r["name"] == name), None)
        if entry is not None and self.bot_user_id in entry["users"]:
            return _error("already_reacted")
        if entry is None:
            entry = {"name": name, "users": [], "count": 0}
            reactions.append(entry)
        entry["users"].append(self.bot_user_id)
        entry["count"] += 1
        self.bot_reactions.append({"channel": channel, "ts": ts, "name": name})
        await self.emit(self.reaction_event(self.bot_user_id, channel, ts, name))
        return {"ok": True}

    # -- event shapes ---------------------------------------------------------------------------

    def changed_event(self, channel: str, before: Payload, after: Payload) -> Payload:
        ts = self.next_ts()
        return {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "channel": channel,
            "message": {**_public(after), "type": "message"},
            "previous_message": {**_public(before), "type": "message"},
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
            "previous_message": _public(before),
            "ts": ts,
            "event_ts": ts,
        }

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


def _error(code: str) -> Payload:
    return {"ok": False, "error": code}


def _public(msg: Payload) -> Payload:
    """A stored message as Slack shows it (without this server's bookkeeping)."""
    return {k: v for k, v in msg.items() if k != "link_names"}


def _shown(msg: Payload, args: Payload) -> Payload:
    """As history shows it: metadata only when asked for (``include_all_metadata``)."""
    out = _public(msg)
    if str(args.get("include_all_metadata")).lower() not in ("true", "1"):
        out.pop("metadata", None)
    return out


def _window(rows: list[Payload], args: Payload) -> Payload:
    """Slack's paging over messages in time order: ``oldest``/``latest`` bounds, newest
    first, ``limit`` per page, ``cursor`` for the next (older) page."""
    inclusive = str(args.get("inclusive")).lower() in ("true", "1")
    lo = float(args["oldest"]) if args.get("oldest") else None
    hi = float(args["latest"]) if args.get("latest") else None

    def within(m: Payload) -> bool:
        t = float(m["ts"])
        if lo is not None and (t < lo or (t == lo and not inclusive)):
            return False
        return hi is None or t < hi or (t == hi and inclusive)

    newest_first = [m for m in reversed(rows) if within(m)]
    start = int(args.get("cursor") or 0)
    limit = int(args.get("limit") or 100)
    page = newest_first[start : start + limit]
    more = start + limit < len(newest_first)
    return {
        "ok": True,
        "messages": [_shown(m, args) for m in page],
        "has_more": more,
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }


def _channel_type(ch: Payload) -> str:
    if ch.get("is_im"):
        return "im"
    return "private_channel" if ch.get("is_private") else "public_channel"


def _page(rows: list[Payload], args: Payload, key: str) -> Payload:
    start = int(args.get("cursor") or 0)
    limit = int(args.get("limit") or 100)
    chunk = rows[start : start + limit]
    nxt = str(start + limit) if start + limit < len(rows) else ""
    return {"ok": True, key: chunk, "response_metadata": {"next_cursor": nxt}}


def mass_mention_possible(text: str, *, link_names: Any) -> bool:
    """Could Slack turn this posted text into a @channel/@here/@everyone ping?"""
    if _MASS.search(text):
        return True
    return bool(link_names) and link_names not in ("0", "false") and bool(_BARE_MASS.search(text))
