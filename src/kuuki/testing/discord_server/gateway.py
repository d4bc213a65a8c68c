"""The local Discord's gateway: sessions, the event log, and what people do there.

Sharding: an IDENTIFY whose ``shard`` is ``[i, n]`` with n > 1 opens the session of shard
i; guilds (`add_guild`) and every dispatch about a guild go to the shard Discord would
use, ``(guild_id >> 22) % n`` (DMs to shard 0), so several clients (or processes) each
running some shards see only their guilds. Sharded sessions are not resumable here.

The gateway keeps one session with a numbered event log: dispatches made while the client
is away stay in the log and a RESUME replays everything after the client's sequence number
(`resume_overlap` re-sends some already delivered events too, the way a flaky network can).
Frames are sent as text, which discord.py reads uncompressed whatever `compress=` it asked
for in the URL (≥2.4 asks for zlib-stream or zstd-stream and only inflates binary frames).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from kuuki.testing.discord_server.state import (
    MEMBER_PERMISSIONS,
    DiscordState,
    Payload,
    now_iso,
)


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


class DiscordGateway(DiscordState):
    """The state of `DiscordState`, served over a gateway websocket (see module doc)."""

    def __init__(
        self, *, token: str = "test-token", bot_name: str = "Kuu", guild_name: str = "kuuki-test"
    ) -> None:
        super().__init__(token=token, bot_name=bot_name, guild_name=guild_name)
        self.shard_count = 1  # as the clients' sharded IDENTIFYs said
        self.shard_links: dict[int, ShardLink] = {}
        self.received: list[Payload] = []  # gateway frames from the client
        self.resume_overlap = 0
        self.message_content_allowed = True  # False: IDENTIFY asking for it gets 4014
        self.gateway_queries: list[dict[str, str]] = []
        self.identifies = 0
        self.resumes = 0
        self.heartbeats = 0
        self.session: Session | None = None
        self._ws: web.WebSocketResponse | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._gate = asyncio.Event()
        self._gate.set()
        self._send_lock = asyncio.Lock()
        self.port = 0

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

    async def open_channel(self, name: str, *, private: bool = False) -> Payload:
        """A text channel created while the client is connected (CHANNEL_CREATE)."""
        ch = self.text_channel(name, private=private)
        await self.dispatch("CHANNEL_CREATE", ch)
        return ch

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
        ping: bool = False,
    ) -> Payload:
        msg = self.message_payload(
            channel_id, self.user(user, bot=bot), content, reference=reply_to,
            mid=self.snowflake(ago_s=ago_s) if ago_s else None, ping=ping,
        )
        return await self.deliver(msg)

    async def deliver(self, msg: Payload) -> Payload:
        """A message of any shape (`shapes`) posted: kept for history, and dispatched."""
        self.messages[msg["id"]] = msg
        await self.dispatch("MESSAGE_CREATE", msg)
        return msg

    async def edit(self, message_id: str, content: str) -> Payload:
        msg = self.messages[message_id] | {"content": content, "edited_timestamp": now_iso()}
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

    async def create_thread(
        self, channel_id: str, root_id: str, name: str, *, announce: bool = True
    ) -> Payload:
        """A public thread started from message `root_id` (the thread takes its id); one
        not announced stays unknown to the client's cache (`DiscordState.unseen`)."""
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
                "archive_timestamp": now_iso(),
                "locked": False,
            },
        }
        self.channels[root_id] = thread
        if not announce:
            self.unseen.add(root_id)
            return thread
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

