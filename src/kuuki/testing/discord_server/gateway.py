"""A local Discord for tests: REST API and gateway on 127.0.0.1, port 0.

discord.py runs against it unchanged, pointed here through its documented seams only:
``discord.http.Route.BASE`` for REST and the URL that ``GET /gateway/bot`` returns for the
gateway (the client is an AutoShardedClient, which asks for it). Every REST request and
every gateway frame the client sends is recorded in full.

Sharding: an IDENTIFY whose ``shard`` is ``[i, n]`` with n > 1 opens the session of shard
i; guilds (`add_guild`) and every dispatch about a guild go to the shard Discord would
use, ``(guild_id >> 22) % n`` (DMs to shard 0), so several clients (or processes) each
running some shards see only their guilds. Sharded sessions are not resumable here.

The gateway keeps one session with a numbered event log: dispatches made while the client
is away stay in the log and a RESUME replays everything after the client's sequence number
(`resume_overlap` re-sends some already delivered events too, the way a flaky network can).
Frames are sent as text, which discord.py reads uncompressed whatever `compress=` it asked
for in the URL (≥2.4 asks for zlib-stream or zstd-stream and only inflates binary frames).

`DiscordDriver` (the conformance driver) is at the end of the module.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.platforms.discord import DiscordOutbox, KuukiClient, run_discord
from kuuki.settings import Settings
from kuuki.testing.conformance import SentMessage
from kuuki.testing.llm import ScriptedLLM

Payload = dict[str, Any]

API = "/api/v10"
DISCORD_EPOCH_MS = 1_420_070_400_000
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_CHANNELS = 1 << 4
MEMBER_PERMISSIONS = VIEW_CHANNEL | SEND_MESSAGES | (1 << 6) | (1 << 16)  # + reactions, history
EPHEMERAL = 1 << 6
_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str  # relative to the API base, e.g. "/channels/1/messages"
    query: dict[str, str]
    headers: dict[str, str]
    body: Any  # parsed JSON, text, or None


@dataclass(slots=True)
class Session:
    id: str
    log: list[Payload] = field(default_factory=list)  # dispatch frames, in seq order
    seq: int = 0


@dataclass(slots=True)
class ShardLink:
    """The session and connection of one shard (sharded IDENTIFYs only)."""

    session: Session
    ws: web.WebSocketResponse | None


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _json_response(data: Any, status: int = 200) -> web.Response:
    # discord.py decodes JSON only for a content-type of exactly "application/json".
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


class DiscordServer:
    """One guild, its channels, users and messages, served over REST and a gateway."""

    def __init__(
        self, *, token: str = "test-token", bot_name: str = "Kuu", guild_name: str = "kuuki-test"
    ) -> None:
        self.token = token
        self._ids = itertools.count(1)
        self.guild_id = self.snowflake()
        self.guild_ids = [self.guild_id]
        self.shard_count = 1  # as the clients' sharded IDENTIFYs said
        self.shard_links: dict[int, ShardLink] = {}
        self.app_id = self.snowflake()
        self.bot_user = self._user_payload(self.snowflake(), bot_name, bot=True)
        self.bot_role_id = self.snowflake()
        self.users: dict[str, Payload] = {}  # by name
        self.channels: dict[str, Payload] = {}  # by id (text channels, threads, DMs)
        self.messages: dict[str, Payload] = {}  # by id, current state
        self.requests: list[RecordedRequest] = []
        self.history_reads: list[tuple[str, dict[str, str]]] = []  # channel id, query
        self.received: list[Payload] = []  # gateway frames from the client
        self.bot_messages: list[Payload] = []  # messages the bot created through REST
        self.bot_reactions: list[tuple[str, str, str]] = []  # channel id, message id, emoji
        self.commands: list[Payload] = []
        self.interaction_responses: dict[str, Payload] = {}
        self.resume_overlap = 0
        self.message_content_allowed = True  # False: IDENTIFY asking for it gets 4014
        self.gateway_queries: list[dict[str, str]] = []
        self.typing: list[str] = []  # channel ids, one per typing POST
        self.hold_typing: asyncio.Event | None = None  # set by a test to pause the bot
        self.identifies = 0
        self.resumes = 0
        self.heartbeats = 0
        self.session: Session | None = None
        self._ws: web.WebSocketResponse | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._gate = asyncio.Event()
        self._gate.set()
        self._send_lock = asyncio.Lock()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

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

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def connected(self) -> bool:
        return self._ws is not None or any(
            link.ws is not None for link in self.shard_links.values()
        )

    def shard_of(self, guild_id: str | None) -> int:
        return 0 if guild_id is None else (int(guild_id) >> 22) % self.shard_count

    # -- the world --------------------------------------------------------------------------

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
        return {"roles": roles, "joined_at": _now_iso(), "deaf": False, "mute": False, "flags": 0}

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

    async def open_channel(self, name: str, *, private: bool = False) -> Payload:
        """A text channel created while the client is connected (CHANNEL_CREATE)."""
        ch = self.text_channel(name, private=private)
        await self.dispatch("CHANNEL_CREATE", ch)
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
        threads = [c for c in mine if c["type"] in (11, 12)]
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
            "joined_at": _now_iso(),
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
    ) -> Payload:
        ch = self.channels[channel_id]
        mentioned = [
            u
            for u in [*self.users.values(), self.bot_user]
            if u["id"] in set(_MENTION.findall(content))
        ]
        msg: Payload = {
            "id": mid or self.snowflake(),
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": _now_iso(),
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

    # -- things people do (each is a gateway dispatch) ---------------------------------------

    async def post(
        self,
        user: str,
        channel_id: str,
        content: str,
        *,
        reply_to: str | None = None,
        bot: bool = False,
        ago_s: float = 0.0,
    ) -> Payload:
        msg = self.message_payload(
            channel_id, self.user(user, bot=bot), content, reference=reply_to,
            mid=self.snowflake(ago_s=ago_s) if ago_s else None,
        )
        self.messages[msg["id"]] = msg
        await self.dispatch("MESSAGE_CREATE", msg)
        return msg

    async def edit(self, message_id: str, content: str) -> Payload:
        msg = self.messages[message_id] | {"content": content, "edited_timestamp": _now_iso()}
        self.messages[message_id] = msg
        await self.dispatch("MESSAGE_UPDATE", msg)
        return msg

    async def delete(self, message_id: str, channel_id: str) -> None:
        self.messages.pop(message_id, None)
        data = {"id": message_id, "channel_id": channel_id}
        if self.channels[channel_id]["type"] != 1:
            data["guild_id"] = self.guild_id
        await self.dispatch("MESSAGE_DELETE", data)

    async def react(self, user: Payload, message_id: str, channel_id: str, emoji: str) -> None:
        data: Payload = {
            "user_id": user["id"],
            "channel_id": channel_id,
            "message_id": message_id,
            "emoji": {"id": None, "name": emoji},
            "burst": False,
            "type": 0,
        }
        if self.channels[channel_id]["type"] != 1:
            data["guild_id"] = self.guild_id
            data["member"] = self._member(user) | {"user": user}
        if (author := self.messages.get(message_id, {}).get("author")) is not None:
            data["message_author_id"] = author["id"]
        await self.dispatch("MESSAGE_REACTION_ADD", data)

    async def create_thread(self, channel_id: str, root_id: str, name: str) -> Payload:
        """A public thread started from message `root_id` (the thread takes its id)."""
        thread = {
            "id": root_id,
            "type": 11,
            "guild_id": self.guild_id,
            "parent_id": channel_id,
            "owner_id": self.messages[root_id]["author"]["id"],
            "name": name,
            "last_message_id": None,
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": _now_iso(),
                "locked": False,
            },
        }
        self.channels[root_id] = thread
        await self.dispatch("THREAD_CREATE", thread | {"newly_created": True})
        return thread

    async def interact(
        self, user: str, channel_id: str, name: str, options: list[Payload], *, permissions: int
    ) -> str:
        """A slash command invocation; returns the interaction id."""
        u = self.user(user)
        iid = self.snowflake()
        command = next((c for c in self.commands if c["name"] == name), None)
        data: Payload = {
            "id": iid,
            "application_id": self.app_id,
            "type": 2,
            "token": f"itoken-{iid}",
            "version": 1,
            "data": {
                "id": command["id"] if command else self.snowflake(),
                "name": name,
                "type": 1,
                "options": options,
            },
            "channel_id": channel_id,
            "channel": self.channels[channel_id],
            "locale": "en-US",
            "entitlements": [],
            "app_permissions": str(MEMBER_PERMISSIONS),
            "attachment_size_limit": 10 * 1024 * 1024,
            "authorizing_integration_owners": {"0": self.guild_id},
            "context": 0,
        }
        if self.channels[channel_id]["type"] == 1:
            data["user"] = u
            data["context"] = 1
        else:
            data["guild_id"] = self.guild_id
            data["guild_locale"] = "en-US"
            data["member"] = self._member(u) | {"user": u, "permissions": str(permissions)}
        await self.dispatch("INTERACTION_CREATE", data)
        return iid

    # -- gateway ------------------------------------------------------------------------------

    async def dispatch(self, name: str, data: Any) -> int:
        """Append an event to the session log (its guild's shard's, when sharded) and send
        it if the client is connected."""
        async with self._send_lock:
            if not self.shard_links:
                return await self._dispatch_on(self.session, self._ws, name, data)
            guild = data.get("guild_id") if isinstance(data, dict) else None
            link = self.shard_links.get(self.shard_of(guild))
            if link is None:
                return 0
            return await self._dispatch_on(link.session, link.ws, name, data)

    async def _dispatch_on(
        self, session: Session | None, ws: web.WebSocketResponse | None, name: str, data: Any
    ) -> int:
        if session is None:
            return 0
        session.seq += 1
        frame = {"op": 0, "t": name, "s": session.seq, "d": data}
        session.log.append(frame)
        await self._send(frame, ws)
        return session.seq

    async def send_raw(self, frame: Any) -> None:
        """Send any frame as is (malformed payloads, unknown opcodes); a dict with "op": 0
        and no "s" gets the next sequence number and joins the log."""
        async with self._send_lock:
            if isinstance(frame, dict) and frame.get("op") == 0 and "s" not in frame:
                assert self.session is not None
                self.session.seq += 1
                frame = frame | {"s": self.session.seq}
                self.session.log.append(frame)
            await self._send(frame)

    async def _send(self, frame: Any, to: web.WebSocketResponse | None = None) -> None:
        ws = to if to is not None else None if self.shard_links else self._ws
        if ws is None or ws.closed:
            return
        with contextlib.suppress(ConnectionError):  # it is in the log; a RESUME replays it
            await ws.send_str(frame if isinstance(frame, str) else json.dumps(frame))

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        self.gateway_queries.append(dict(request.query))
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await self._gate.wait()  # held shut while a test keeps the client away
            if ws.closed:
                return ws
            await ws.send_json({"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": 41250}})
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                self.received.append(frame)
                await self._on_frame(ws, frame)
        finally:
            self._sockets.discard(ws)
            if self._ws is ws:
                self._ws = None
            for link in self.shard_links.values():
                if link.ws is ws:
                    link.ws = None
            await self._notify()
        return ws

    async def _on_frame(self, ws: web.WebSocketResponse, frame: Payload) -> None:
        op, d = frame.get("op"), frame.get("d") or {}
        if op == 1:
            self.heartbeats += 1
            await ws.send_json({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:
            if d.get("token") != self.token:
                await ws.close(code=4004, message=b"Authentication failed.")
                return
            if not self.message_content_allowed and int(d.get("intents", 0)) & (1 << 15):
                await ws.close(code=4014, message=b"Disallowed intent(s).")
                return
            await self._identify(ws, d)
        elif op == 6:
            await self._resume(ws, d)
        await self._notify()

    async def _identify(self, ws: web.WebSocketResponse, d: Payload) -> None:
        self.identifies += 1
        shard, count = d.get("shard") or [0, 1]
        if count > 1:
            await self._identify_shard(ws, d, shard, count)
            return
        async with self._send_lock:
            self.session = Session(uuid.uuid4().hex)
            self._ws = ws
        ready = {
            "v": 10,
            "user": self.bot_user,
            "guilds": [{"id": self.guild_id, "unavailable": True}],
            "session_id": self.session.id,
            "resume_gateway_url": self.gateway_url,
            "shard": d.get("shard", [0, 1]),
            "application": {"id": self.app_id, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
        }
        await self.dispatch("READY", ready)
        await self.dispatch("GUILD_CREATE", self.guild_payload())

    async def _identify_shard(
        self, ws: web.WebSocketResponse, d: Payload, shard: int, count: int
    ) -> None:
        async with self._send_lock:
            self.shard_count = count
            link = self.shard_links[shard] = ShardLink(Session(uuid.uuid4().hex), ws)
            guilds = [g for g in self.guild_ids if self.shard_of(g) == shard]
            ready = {
                "v": 10,
                "user": self.bot_user,
                "guilds": [{"id": g, "unavailable": True} for g in guilds],
                "session_id": link.session.id,
                "resume_gateway_url": self.gateway_url,
                "shard": [shard, count],
                "application": {"id": self.app_id, "flags": 0},
                "private_channels": [],
                "relationships": [],
                "presences": [],
            }
            await self._dispatch_on(link.session, ws, "READY", ready)
            for g in guilds:
                await self._dispatch_on(link.session, ws, "GUILD_CREATE", self.guild_payload(g))

    async def _resume(self, ws: web.WebSocketResponse, d: Payload) -> None:
        async with self._send_lock:
            session = self.session
            if session is None or d.get("session_id") != session.id or d.get("token") != self.token:
                await ws.send_json({"op": 9, "s": None, "t": None, "d": False})
                return
            self.resumes += 1
            self._ws = ws
            after = max(0, (d.get("seq") or 0) - self.resume_overlap)
            for frame in session.log:
                if frame["s"] > after:
                    await self._send(frame)
            session.seq += 1
            await self._send({"op": 0, "t": "RESUMED", "s": session.seq, "d": {}})

    async def drop_connection(self, *, hold: bool = True) -> None:
        """Close the gateway connection (code 4000, resumable). With `hold`, the next
        connection waits for `reopen()` before it says HELLO."""
        if hold:
            self._gate.clear()
        async with self._send_lock:
            ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close(code=4000, message=b"dropped by test")
        await self._notify()

    def reopen(self) -> None:
        self._gate.set()

    async def sync(self, timeout: float = 10) -> None:
        """Return once the client has parsed every dispatch sent so far: ask for a heartbeat
        (op 1) and wait for it; discord.py reads frames in order."""
        async with self._send_lock:
            live = [self._ws] if self._ws is not None else []
            live += [link.ws for link in self.shard_links.values() if link.ws is not None]
            if not live:
                return
            before = self.heartbeats
            for ws in live:
                await self._send({"op": 1, "s": None, "t": None, "d": None}, ws)
        await self.wait_for(lambda: self.heartbeats >= before + len(live)
                            or not self.connected, timeout)

    # -- waiting ------------------------------------------------------------------------------

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

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
                "flags": 0,
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
            "timestamp": _now_iso(),
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


# -- the conformance driver -------------------------------------------------------------------


class DiscordDriver:
    """`PlatformDriver` for Discord: this server, discord.py, and an engine behind
    `run_discord`. ``discord.http.Route.BASE`` is process-wide: one driver at a time."""

    name = "discord"
    text_limit = 2000

    def __init__(self, server: DiscordServer | None = None) -> None:
        self._given = server
        self.server = server or DiscordServer()
        self.llm = ScriptedLLM()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._old_base: str | None = None
        self._app: App | None = None
        self._outbox: DiscordOutbox | None = None
        self._settings: Settings | None = None
        self._store_url = ""

    @property
    def app(self) -> App:
        assert self._app is not None, "start() first"
        return self._app

    @property
    def client(self) -> KuukiClient:
        assert self._outbox is not None and self._outbox.client is not None
        return self._outbox.client

    async def start(self, settings: Settings) -> None:
        from discord.http import Route  # after kuuki.platforms.discord has imported discord

        self.server = self._given or DiscordServer(bot_name=settings.persona.name)
        await self.server.start()
        self.server.text_channel("general")
        self._old_base, Route.BASE = Route.BASE, self.server.api_base
        store_url = settings.store_url
        if not store_url:
            self._tmp = tempfile.TemporaryDirectory(prefix="kuuki-discord-")
            store_url = f"sqlite:///{self._tmp.name}/kuuki.sqlite3"
        self._settings, self._store_url = settings, store_url
        await self._start_bot()

    async def _start_bot(self) -> None:
        assert self._settings is not None
        self._outbox = DiscordOutbox()
        self._app = await build_app(
            self._settings,
            clock=RealClock(),
            outbox=self._outbox,
            llm=self.llm,
            judge_llm=self.llm,
            store_url=self._store_url,
            embedder=None,
        )
        before = self.server.identifies
        # guild_ready_timeout: discord.py waits that long for more guilds before on_ready
        self._task = asyncio.create_task(
            run_discord(self._app, self.server.token, guild_ready_timeout=0.05)
        )
        server = self.server
        await self._until(lambda: server.identifies > before and server.connected)
        caught_up = asyncio.ensure_future(self.client.caught_up.wait())
        await asyncio.wait({caught_up, self._task}, timeout=10,
                           return_when=asyncio.FIRST_COMPLETED)
        if not caught_up.done():
            caught_up.cancel()
            if self._task.done():
                self._task.result()
            raise TimeoutError("the Discord client did not catch up after connecting")
        await self.settle()

    async def restart(self, while_down: Callable[[], Any] | None = None) -> None:
        """Stop the bot (client and app; server and store stay), run ``while_down`` (what
        people say meanwhile is not delivered: a new session starts afresh), start it
        again on the same store, and wait until it has caught up."""
        assert self._task is not None and self._app is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._app.close()
        await self.server.wait_for(lambda: not self.server.connected)
        if while_down is not None:
            result = while_down()
            if asyncio.iscoroutine(result):
                await result
        await self._start_bot()

    async def _until(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        """Wait on the server, failing at once if the client task dies."""
        assert self._task is not None
        waiter = asyncio.ensure_future(self.server.wait_for(predicate, timeout))
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
            self._task.result()  # raises what ended the client
            raise RuntimeError("the Discord client stopped")
        waiter.result()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._app is not None:
            await self._app.close()
        await self.server.close()
        if self._old_base is not None:
            from discord.http import Route

            Route.BASE = self._old_base
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def channel_id(self, channel: str = "general") -> str:
        return str(self.server.text_channel(channel)["id"])

    async def say(
        self,
        user: str,
        text: str,
        *,
        channel: str = "general",
        thread: str | None = None,
        reply_to: str | None = None,
        mention_bot: bool = False,
        bot: bool = False,
    ) -> str:
        if mention_bot:
            text = f"<@{self.server.bot_user['id']}> {text}"
        msg = await self.server.post(
            user, thread or self.channel_id(channel), text, reply_to=reply_to, bot=bot
        )
        return str(msg["id"])

    async def start_thread(self, user: str, text: str, *, channel: str = "general") -> str:
        root = await self.say(user, text, channel=channel)
        await self.server.create_thread(self.channel_id(channel), root, text[:40])
        return root

    async def edit(self, message_id: str, text: str, *, channel: str = "general") -> None:
        await self.server.edit(message_id, text)

    async def delete(self, message_id: str, *, channel: str = "general") -> None:
        msg = self.server.messages.get(message_id)
        await self.server.delete(message_id, msg["channel_id"] if msg else self.channel_id(channel))

    async def react(
        self, user: str, message_id: str, emoji: str, *, channel: str = "general"
    ) -> None:
        msg = self.server.messages.get(message_id)
        cid = msg["channel_id"] if msg else self.channel_id(channel)
        await self.server.react(self.server.user(user), message_id, cid, emoji)

    async def slash(
        self,
        user: str,
        command: str,
        args: str = "",
        *,
        channel: str = "general",
        can_manage: bool = False,
    ) -> str:
        group = next(c for c in self.server.commands if c["name"] == "kuuki")
        sub = next(o for o in group["options"] if o["name"] == command)
        values = args.split()
        typed = {3: str, 4: int, 10: float}
        options = [
            {"name": o["name"], "type": o["type"], "value": typed.get(o["type"], str)(v)}
            for o, v in zip(sub.get("options", []), values, strict=False)
        ]
        permissions = MEMBER_PERMISSIONS | (MANAGE_CHANNELS if can_manage else 0)
        iid = await self.server.interact(
            user,
            self.channel_id(channel),
            "kuuki",
            [{"name": command, "type": 1, "options": options}],
            permissions=permissions,
        )
        await self._until(lambda: iid in self.server.interaction_responses)
        data = self.server.interaction_responses[iid].get("data") or {}
        return str(data.get("content", ""))

    async def send_malformed(self) -> None:
        general = self.channel_id()
        for frame in (
            {"op": 0, "t": "MESSAGE_CREATE", "d": {"id": self.server.snowflake()}},
            {"op": 0, "t": "MESSAGE_CREATE", "d": {"channel_id": general, "author": None}},
            {"op": 0, "t": "MESSAGE_UPDATE", "d": {"channel_id": general}},
            {"op": 0, "t": "MESSAGE_REACTION_ADD", "d": {"channel_id": "x", "emoji": 5}},
            {"op": 0, "t": "MESSAGE_DELETE", "d": {}},
            {"op": 0, "t": "SOMETHING_NEW_FROM_DISCORD", "d": {"x": 1}},
            {"op": 42, "s": None, "t": None, "d": None},
        ):
            await self.server.send_raw(frame)
        await self.server.post("mallory", general, "x" * 100_000)

    async def drop_connection(self) -> None:
        await self.server.drop_connection(hold=True)

    async def wait_connected(self, timeout: float = 10) -> None:
        self.server.reopen()
        await self._until(lambda: self.server.connected, timeout)
        await self.settle()

    async def wait_bot_messages(self, n: int, timeout: float = 10) -> list[SentMessage]:
        await self._until(lambda: len(self.server.bot_messages) >= n, timeout)
        return self.bot_messages

    async def wait_bot_reactions(self, n: int, timeout: float = 10) -> list[str]:
        await self._until(lambda: len(self.server.bot_reactions) >= n, timeout)
        return self.bot_reactions

    async def settle(self) -> None:
        for _ in range(100):
            before = self.server.session.seq if self.server.session else 0
            await self.server.sync()
            await self.client.idle()
            await self.app.engine.idle()
            if (self.server.session.seq if self.server.session else 0) == before:
                return
        raise TimeoutError("the bot kept producing events")

    @property
    def bot_messages(self) -> list[SentMessage]:
        return [self._sent(m) for m in self.server.bot_messages]

    @property
    def bot_reactions(self) -> list[str]:
        return [emoji for _, _, emoji in self.server.bot_reactions]

    def _sent(self, m: Payload) -> SentMessage:
        ch = self.server.channels.get(m["channel_id"], {})
        in_thread = ch.get("type") in (11, 12)
        parent = self.server.channels.get(ch.get("parent_id") or "", {})
        allowed = m.get("allowed_mentions")
        parse = (allowed or {}).get("parse", [])
        mass = allowed is None or "everyone" in parse or "roles" in parse
        return SentMessage(
            id=m["id"],
            channel=str((parent if in_thread else ch).get("name", m["channel_id"])),
            text=m["content"],
            thread=m["channel_id"] if in_thread else None,
            reply_to=(m.get("message_reference") or {}).get("message_id"),
            mass_mentions_allowed=mass or bool((allowed or {}).get("roles")),
            raw=m,
        )
