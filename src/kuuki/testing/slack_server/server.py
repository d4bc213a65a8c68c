"""A local Slack for tests: Web API and Socket Mode on 127.0.0.1, port 0.

The real slack-bolt / slack_sdk clients run against it unchanged, pointed only through their
documented seams: ``AsyncWebClient(base_url=server.api_url)``, and the Socket Mode URL that
``apps.connections.open`` returns (this server's own websocket).

Every Web API call is recorded in full (`calls`); `failing` makes a method answer an
error (a missing scope, say). The bot's own posts and reactions come back
as events, as on Slack. The server is built in layers, each using only the ones below it:
the workspace and its event shapes (`state.py`), Socket Mode (`socket_mode.py`), and here
the lifecycle and the Web API.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from kuuki.platforms.tokens import SLACK_BOT_SCOPES
from kuuki.testing.slack_server.socket_mode import SlackSocketMode
from kuuki.testing.slack_server.state import Payload, public

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


class SlackServer(SlackSocketMode):
    """See module doc. `start` it, give clients `api_url`, `close` it."""

    def __init__(
        self, *, bot_name: str = "kuuki", team_id: str = "T0KUUKI01", app_id: str = "A0KUUKI01"
    ) -> None:
        super().__init__(bot_name=bot_name, team_id=team_id, app_id=app_id)
        self.calls: list[ApiCall] = []
        self.bot_reactions: list[Payload] = []  # reactions.add calls that took, in order
        self.failing: dict[str, str] = {}  # Web API method → the error it answers
        # The bot token's granted scopes, sent as Slack sends them on every Web API answer
        # to a bot token: the ``x-oauth-scopes`` header, comma-separated. A test removes
        # some for an app installed with too few.
        self.scopes: list[str] = list(SLACK_BOT_SCOPES)
        self._refused: set[str] = set()
        self._runner: web.AppRunner | None = None

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

    def refuse_token(self, token: str) -> None:
        """Answer ``invalid_auth`` to this token from now on (a revoked install)."""
        self._refused.add(token)
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
        response = web.json_response(await self._method(method, token, args))
        if token and token.startswith("xoxb-") and token not in self._refused:
            response.headers["x-oauth-scopes"] = ",".join(self.scopes)
        return response

    async def _method(self, method: str, token: str | None, args: Payload) -> Payload:
        if method == "apps.connections.open":
            if not token or not token.startswith("xapp-"):
                return _error("not_allowed_token_type")
            await self._open.wait()  # held: the client waits here, as for a slow Slack
            url = f"ws://127.0.0.1:{self.port}/link/?ticket={self._new_id('t')}"
            return {"ok": True, "url": url}
        if not token or not token.startswith("xoxb-") or token in self._refused:
            return _error("invalid_auth")
        if method in self.failing:
            return _error(self.failing[method])
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

    async def _m_usergroups_list(self, args: Payload) -> Payload:
        return {"ok": True, "usergroups": list(self.ws.usergroups.values())}

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
        await self.emit(self.message_event(channel, public(msg)))
        return {"ok": True, "channel": channel, "ts": msg["ts"], "message": public(msg)}

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


def _error(code: str) -> Payload:
    return {"ok": False, "error": code}


def _shown(msg: Payload, args: Payload) -> Payload:
    """As history shows it: metadata only when asked for (``include_all_metadata``)."""
    out = public(msg)
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
