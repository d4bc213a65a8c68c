"""A local Discord for tests: REST API and gateway on 127.0.0.1, port 0.

discord.py runs against it unchanged, pointed here through its documented seams only:
``discord.http.Route.BASE`` for REST and the URL that ``GET /gateway/bot`` returns for the
gateway (the client is an AutoShardedClient, which asks for it). Every REST request and
every gateway frame the client sends is recorded in full.

The server is built in layers, each using only the ones below it: the world and its
payloads (`state.py`), the gateway and what people do there (`gateway.py`), and here the
lifecycle and the REST API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kuuki.testing.discord_server.gateway import DiscordGateway
from kuuki.testing.discord_server.state import Payload, now_iso

API = "/api/v10"
EPHEMERAL = 1 << 6
# Application flags (docs: resources/application#application-object-application-flags):
# the privileged MESSAGE CONTENT intent switched on in the Developer Portal, for a verified
# app and for one in fewer than 100 servers (the "limited" bit, what a new bot has).
GATEWAY_MESSAGE_CONTENT = 1 << 18
GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str  # relative to the API base, e.g. "/channels/1/messages"
    query: dict[str, str]
    headers: dict[str, str]
    body: Any  # parsed JSON, text, or None


def _json_response(data: Any, status: int = 200) -> web.Response:
    # discord.py decodes JSON only for a content-type of exactly "application/json".
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


class DiscordServer(DiscordGateway):
    """One guild, its channels, users and messages, served over REST and a gateway."""

    def __init__(
        self, *, token: str = "test-token", bot_name: str = "Kuu", guild_name: str = "kuuki-test"
    ) -> None:
        super().__init__(token=token, bot_name=bot_name, guild_name=guild_name)
        self.requests: list[RecordedRequest] = []
        self.history_reads: list[tuple[str, dict[str, str]]] = []  # channel id, query
        self.bot_messages: list[Payload] = []  # messages the bot created through REST
        self.bot_reactions: list[tuple[str, str, str]] = []  # channel id, message id, emoji
        self.interaction_responses: dict[str, Payload] = {}
        self.typing: list[str] = []  # channel ids, one per typing POST
        self.hold_typing: asyncio.Event | None = None  # set by a test to pause the bot
        # `GET /oauth2/applications/@me` ``flags``: a test sets 0 for an application whose
        # MESSAGE CONTENT intent is off in the Developer Portal.
        self.application_flags = GATEWAY_MESSAGE_CONTENT_LIMITED
        self._runner: web.AppRunner | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", API + "/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        self._gate.set()
        for ws in list(self._sockets):
            await ws.close(code=1001)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    # -- REST -------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        body: Any = None
        if request.can_read_body:
            raw = await request.text()
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
        self.requests.append(
            RecordedRequest(request.method, path, dict(request.query), dict(request.headers), body)
        )
        try:
            # Interaction callbacks are authorised by the interaction token in the path.
            bot_auth = request.headers.get("Authorization") == f"Bot {self.token}"
            if not bot_auth and not path.startswith("/interactions/"):
                return _json_response({"message": "401: Unauthorized", "code": 0}, 401)
            history = re.fullmatch(r"/channels/(\d+)/messages", path)
            if history and request.method == "GET":
                return self._history(history.group(1), dict(request.query))
            return await self._route(request.method, path, body)
        finally:
            await self._notify()

    def _history(self, channel_id: str, query: dict[str, str]) -> web.Response:
        """A channel's messages as Discord's REST API gives them: newest first, at most
        ``limit``; ``after`` gives the oldest ones after that id, ``before`` the newest
        ones before it (ids are snowflakes, so they sort by time)."""
        if channel_id not in self.channels:
            return _json_response({"message": "Unknown Channel", "code": 10003}, 404)
        limit = max(1, min(100, int(query.get("limit") or 50)))
        mine = sorted(
            (m for m in self.messages.values() if m["channel_id"] == channel_id),
            key=lambda m: int(m["id"]),
        )
        if "after" in query:
            after = int(query["after"])
            picked = [m for m in mine if int(m["id"]) > after][:limit]
        else:
            before = int(query["before"]) if "before" in query else None
            older = [m for m in mine if before is None or int(m["id"]) < before]
            picked = older[-limit:]
        self.history_reads.append((channel_id, dict(query)))
        return _json_response([self._with_reactions(m) for m in reversed(picked)])

    def _with_reactions(self, msg: Payload) -> Payload:
        counts: dict[str, list[str]] = {}
        for cid, mid, emoji in self.bot_reactions:
            if mid == msg["id"] and cid == msg["channel_id"]:
                counts.setdefault(emoji, []).append(self.bot_user["id"])
        if not counts:
            return msg
        reactions = [
            {"emoji": {"id": None, "name": e}, "count": len(who), "me": True,
             "count_details": {"burst": 0, "normal": len(who)}, "me_burst": False,
             "burst_colors": []}
            for e, who in counts.items()
        ]
        return msg | {"reactions": reactions}

    async def _route(self, method: str, path: str, body: Any) -> web.StreamResponse:
        for pattern, verb, handler in self._routes():
            m = re.fullmatch(pattern, path)
            if m and verb == method:
                result: web.StreamResponse = await handler(body, *m.groups())
                return result
        return _json_response({"message": "404: Not Found", "code": 0}, 404)

    def _routes(self) -> list[tuple[str, str, Callable[..., Any]]]:
        return [
            (r"/users/@me", "GET", self._get_me),
            (r"/oauth2/applications/@me", "GET", self._get_application),
            (r"/gateway(?:/bot)?", "GET", self._get_gateway),
            (r"/applications/(\d+)/commands", "PUT", self._put_commands),
            (r"/applications/(\d+)/commands", "GET", self._get_commands),
            (r"/channels/(\d+)", "GET", self._get_channel),
            (r"/guilds/(\d+)", "GET", self._get_guild),
            (r"/channels/(\d+)/messages", "POST", self._create_message),
            (r"/channels/(\d+)/messages/(\d+)", "GET", self._get_message),
            (r"/channels/(\d+)/messages/(\d+)", "PATCH", self._edit_message),
            (r"/channels/(\d+)/messages/(\d+)/reactions/([^/]+)/@me", "PUT", self._add_reaction),
            (r"/channels/(\d+)/typing", "POST", self._typing),
            (r"/interactions/(\d+)/([^/]+)/callback", "POST", self._interaction_callback),
        ]

    async def _get_me(self, body: Any) -> web.Response:
        return _json_response(self.bot_user)

    async def _get_application(self, body: Any) -> web.Response:
        return _json_response(
            {
                "id": self.app_id,
                "name": self.bot_user["username"],
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": self.user("owner"),
                "verify_key": "0" * 64,
                "flags": self.application_flags,
                "team": None,
            }
        )

    async def _get_gateway(self, body: Any) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json_response({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _put_commands(self, body: Any, app_id: str) -> web.Response:
        self.commands = [
            c | {"id": self.snowflake(), "application_id": app_id, "version": self.snowflake()}
            for c in body
        ]
        return _json_response(self.commands)

    async def _get_commands(self, body: Any, app_id: str) -> web.Response:
        return _json_response(self.commands)

    async def _get_channel(self, body: Any, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _json_response({"message": "Unknown Channel", "code": 10003}, 404)
        return _json_response(self.channels[channel_id])

    async def _get_guild(self, body: Any, guild_id: str) -> web.Response:
        return _json_response(self.guild_payload(guild_id if guild_id in self.guild_ids else None))

    async def _create_message(self, body: Any, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _json_response({"message": "Unknown Channel", "code": 10003}, 404)
        if len(body.get("content") or "") > 2000:
            return _json_response({"message": "Invalid Form Body", "code": 50035}, 400)
        ref = (body.get("message_reference") or {}).get("message_id")
        msg = self.message_payload(
            channel_id,
            self.bot_user,
            body.get("content") or "",
            reference=ref and str(ref),
            flags=body.get("flags") or 0,
        )
        msg["allowed_mentions"] = body.get("allowed_mentions")  # kept for the tests to read
        self.messages[msg["id"]] = msg
        self.bot_messages.append(msg)
        await self.dispatch("MESSAGE_CREATE", msg)  # the bot sees its own message, as on Discord
        return _json_response(msg)

    async def _get_message(self, body: Any, channel_id: str, mid: str) -> web.Response:
        if mid not in self.messages:
            return _json_response({"message": "Unknown Message", "code": 10008}, 404)
        return _json_response(self.messages[mid])

    async def _edit_message(self, body: Any, channel_id: str, mid: str) -> web.Response:
        if mid not in self.messages:
            return _json_response({"message": "Unknown Message", "code": 10008}, 404)
        return _json_response(await self.edit(mid, body.get("content") or ""))

    async def _add_reaction(self, body: Any, channel_id: str, mid: str, emoji: str) -> web.Response:
        if mid not in self.messages:
            return _json_response({"message": "Unknown Message", "code": 10008}, 404)
        self.bot_reactions.append((channel_id, mid, emoji))
        await self.react(self.bot_user, mid, channel_id, emoji)
        return web.Response(status=204)

    async def _typing(self, body: Any, channel_id: str) -> web.Response:
        self.typing.append(channel_id)
        await self._notify()
        if self.hold_typing is not None:
            await self.hold_typing.wait()
        return web.Response(status=204)

    async def _interaction_callback(self, body: Any, iid: str, token: str) -> web.Response:
        if token != f"itoken-{iid}":
            return _json_response({"message": "Unknown interaction", "code": 10062}, 404)
        if iid in self.interaction_responses:
            return _json_response(
                {"message": "Interaction has already been acknowledged.", "code": 40060}, 400
            )
        self.interaction_responses[iid] = body
        data = body.get("data") or {}
        ephemeral = bool((data.get("flags") or 0) & EPHEMERAL)
        message: Payload = {
            "id": self.snowflake(),
            "type": 20,
            "content": data.get("content") or "",
            "author": self.bot_user,
            "channel_id": "0",
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "flags": data.get("flags") or 0,
        }
        return _json_response(
            {
                "interaction": {
                    "id": iid,
                    "type": 2,
                    "response_message_id": message["id"],
                    "response_message_loading": False,
                    "response_message_ephemeral": ephemeral,
                },
                "resource": {"type": body.get("type", 4), "message": message},
            }
        )


@contextlib.asynccontextmanager
async def serving(server: DiscordServer) -> AsyncIterator[DiscordServer]:
    """``server`` started, with discord.py's REST pointed at it, then closed and the
    address put back. ``discord.http.Route.BASE`` is process-wide: one at a time."""
    from discord.http import Route  # after kuuki.platforms.discord has imported discord

    await server.start()
    old, Route.BASE = Route.BASE, server.api_base
    try:
        yield server
    finally:
        await server.close()
        Route.BASE = old

