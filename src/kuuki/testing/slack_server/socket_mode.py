"""Socket Mode of the local Slack, behaving like Slack's where it matters for an adapter.

``hello`` on connect; ``events_api`` and ``slash_commands`` envelopes; an envelope stays
pending until acked, and pending events are redelivered (``retry_attempt`` counting up) on
the next connection, and, with `redeliver_after` set, also after that many seconds without
an ack (at most `max_attempts` deliveries, as Slack retries an event a few times and then
gives up); `disconnect` sends Slack's ``disconnect`` message (``refresh_requested`` /
``link_disabled``) and `drop` closes the socket outright, and the client must come back
through ``apps.connections.open``. Every envelope ack (`acks`) and every ``response_url``
post (`responses`) is recorded in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import OrderedDict
from dataclasses import dataclass

from aiohttp import WSMsgType, web

from kuuki.testing.slack_server.state import Payload, SlackState, SocketEnvelope


@dataclass(slots=True)
class _Conn:
    ws: web.WebSocketResponse
    number: int
    draining: bool = False


class SlackSocketMode(SlackState):
    """The workspace of `SlackState`, delivered over Socket Mode (see module doc)."""

    def __init__(
        self, *, bot_name: str = "kuuki", team_id: str = "T0KUUKI01", app_id: str = "A0KUUKI01"
    ) -> None:
        super().__init__(bot_name=bot_name, team_id=team_id, app_id=app_id)
        self.acks: list[Payload] = []
        self.responses: list[Payload] = []
        self.connections_opened = 0
        self._open = asyncio.Event()
        self._open.set()
        self._pending: OrderedDict[str, SocketEnvelope] = OrderedDict()
        self._conns: list[_Conn] = []
        self.redeliver_after: float | None = None  # seconds; None: only on reconnect
        self.given_up: list[SocketEnvelope] = []  # envelopes Slack stopped retrying
        self.max_attempts = 4  # the first delivery and Slack's three retries
        self._retries: set[asyncio.Task[None]] = set()

    async def emit(self, event: Payload) -> SocketEnvelope:
        env = self.event_envelope(event)
        await self.deliver(env)
        return env

    # -- socket mode ------------------------------------------------------------------------

    async def deliver(self, env: SocketEnvelope) -> None:
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
    def pending(self) -> list[SocketEnvelope]:
        return list(self._pending.values())

    @property
    def connected(self) -> bool:
        return self._active() is not None

    def _active(self) -> _Conn | None:
        live = [c for c in self._conns if not c.draining and not c.ws.closed]
        return live[-1] if live else None

    async def _send(self, conn: _Conn, env: SocketEnvelope) -> None:
        env.attempts += 1
        # A send that fails leaves the envelope pending: redelivered on the next connection.
        with contextlib.suppress(ConnectionError, RuntimeError):
            await conn.ws.send_str(json.dumps(env.frame()))
        if self.redeliver_after is not None and env.type == "events_api":
            task = asyncio.get_running_loop().create_task(self._retry_later(env))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

    async def _retry_later(self, env: SocketEnvelope) -> None:
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

    async def wait_acked(self, timeout: float = 10) -> None:
        """Every envelope delivered so far has been acked by the client."""
        await self.wait_for(lambda: not self._pending, timeout)

