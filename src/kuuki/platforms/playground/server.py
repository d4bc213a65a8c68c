"""The playground's ASGI app: the page, its WebSocket, and a few plain HTTP endpoints.

    GET  /                  the page (static files under /static, no CDN)
    WS   /ws                server → page: state, message, decision, reaction, typing,
                            clock, jump, model, conversations, memory, participants,
                            channels, playback, error; page → server: commands (see
                            `COMMANDS`)
    GET  /api/state         the same snapshot the WebSocket opens with
    GET  /api/export        the room as a transcript (.jsonl download)
    GET  /api/prompt?key=   a prompt the engine sent, by `channel-message-purpose`
    POST /api/transcript    body: a transcript; ?speed=1|10|…|instant&name=file.jsonl

Bad input gets an error naming what is wrong and changes nothing; the room goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from kuuki.app.build import FROM_SETTINGS, FromSettings, LLMChoice
from kuuki.decide.judge.base import Judge
from kuuki.embed import Embedder
from kuuki.platforms.playground.memory import MemorySnapshot
from kuuki.platforms.playground.playback import MAX_BYTES, TranscriptRejected, parse_speed
from kuuki.platforms.playground.room import RoomError, dumps
from kuuki.platforms.playground.session import Playground
from kuuki.platforms.web import SHARED, SHARED_URL
from kuuki.settings import Settings
from kuuki.text.secrets import redact

log = logging.getLogger("kuuki.playground")
STATIC = Path(__file__).parent / "static"
MAX_JUMP_S = 30 * 24 * 3600.0

Command = Callable[[Playground, dict[str, Any]], Awaitable[None]]


def _text(obj: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise RoomError(f"{obj.get('type')}: field {key!r} must be text")
    return value


async def _say(pg: Playground, obj: dict[str, Any]) -> None:
    await pg.say(
        _text(obj, "user") or "",
        _text(obj, "channel") or "",
        _text(obj, "text") or "",
        _text(obj, "reply_to", required=False) or None,
    )


async def _add_participant(pg: Playground, obj: dict[str, Any]) -> None:
    pg.room.add_participant(_text(obj, "name") or "")


async def _add_channel(pg: Playground, obj: dict[str, Any]) -> None:
    pg.room.add_channel(_text(obj, "name") or "", _text(obj, "visibility") or "public")


async def _jump(pg: Playground, obj: dict[str, Any]) -> None:
    seconds = obj.get("seconds")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or not 0 < seconds <= MAX_JUMP_S
    ):
        raise RoomError("jump: field 'seconds' must be a number from 1 second to 30 days")
    pg.begin_jump(float(seconds))


async def _memory(pg: Playground, obj: dict[str, Any]) -> None:
    channel = _text(obj, "channel") or ""
    pg.room.channel(channel)
    await pg.push_memory(channel, force=True)


async def _stop(pg: Playground, obj: dict[str, Any]) -> None:
    if pg.player is not None:
        await pg.player.stop()


COMMANDS: dict[str, Command] = {
    "say": _say,
    "add_participant": _add_participant,
    "add_channel": _add_channel,
    "jump": _jump,
    "memory": _memory,
    "stop_playback": _stop,
}


async def handle_command(pg: Playground, raw: str) -> dict[str, Any] | None:
    """Run one command from the page; an error reply for that page, or None."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {"type": "error", "error": f"not valid JSON: {exc.msg} (column {exc.colno})"}
    if not isinstance(obj, dict):
        return {"type": "error", "error": "expected a JSON object with a 'type'"}
    kind = obj.get("type")
    command = COMMANDS.get(kind) if isinstance(kind, str) else None
    if command is None:
        known = ", ".join(sorted(COMMANDS))
        return {"type": "error", "error": f"unknown message type {kind!r}; expected one of {known}"}
    try:
        await command(pg, obj)
    except RoomError as exc:
        return {"type": "error", "error": str(exc), "command": kind}
    except Exception as exc:  # the room must outlive any one command
        log.exception("playground command %s failed", kind)
        return {"type": "error", "error": f"{kind} failed: {redact(str(exc))}",
                "command": kind}
    return None


async def websocket_endpoint(ws: WebSocket) -> None:
    pg: Playground = ws.app.state.playground
    await ws.accept()
    queue = pg.hub.subscribe()
    await ws.send_text(dumps(pg.snapshot()))

    async def pump() -> None:
        while True:
            await ws.send_text(await queue.get())

    sender = asyncio.get_running_loop().create_task(pump(), name="kuuki-playground-ws")
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text")
            if raw is None:
                reply: dict[str, Any] | None = {"type": "error", "error": "send JSON as text"}
            else:
                reply = await handle_command(pg, raw)
            if reply is not None:
                queue.put_nowait(dumps(reply))
    except WebSocketDisconnect:
        pass
    finally:
        pg.hub.unsubscribe(queue)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def state(request: Request) -> Response:
    pg: Playground = request.app.state.playground
    return JSONResponse(pg.snapshot())


async def export(request: Request) -> Response:
    pg: Playground = request.app.state.playground
    body = "\n".join(pg.room.export_lines()) + "\n"
    stamp = pg.clock.now().strftime("%Y%m%d-%H%M")
    return Response(
        body,
        media_type="application/x-ndjson; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="kuuki-playground-{stamp}.jsonl"'},
    )


async def prompt(request: Request) -> Response:
    pg: Playground = request.app.state.playground
    key = request.query_params.get("key", "")
    text = pg.room.prompts.get(key)
    if text is None:
        for d in reversed(pg.decisions):
            for call, call_key in zip(d["trace"]["llm_calls"], d["prompts"], strict=False):
                if call_key == key and call.get("prompt"):
                    text = call["prompt"]
                    break
            if text is not None:
                break
    if text is None:
        return PlainTextResponse(f"no prompt kept for {key!r}", status_code=404)
    return PlainTextResponse(text)


async def upload_transcript(request: Request) -> Response:
    pg: Playground = request.app.state.playground
    name = request.query_params.get("name") or "transcript.jsonl"
    try:
        speed = parse_speed(request.query_params.get("speed", "instant"))
        body = await request.body()
        if len(body) > MAX_BYTES:
            raise TranscriptRejected([f"{name}: larger than {MAX_BYTES // 1_000_000} MB"])
        assert pg.player is not None
        transcript = pg.player.read(body.decode("utf-8", errors="replace"), name)
        count = await pg.player.start(transcript, speed)
    except (TranscriptRejected, RoomError) as exc:
        problems = exc.problems if isinstance(exc, TranscriptRejected) else [str(exc)]
        return JSONResponse({"ok": False, "error": str(exc), "problems": problems}, 400)
    note = None
    bot, ours = transcript.setup.get("bot"), pg.settings.persona.name
    if bot and bot != ours:
        note = f"the file's setup names the bot {bot}; the playground's bot stays {ours}"
    return JSONResponse({"ok": True, "events": count, "name": name, "note": note})


def create_app(
    settings: Settings,
    *,
    llm: LLMChoice = FROM_SETTINGS,
    judge: Judge | None = None,
    store_url: str | None = None,
    embedder: Embedder | FromSettings | None = FROM_SETTINGS,
    memory: MemorySnapshot | None = None,
    tick_s: float = 0.5,
    start: datetime | None = None,
    playground: Playground | None = None,
) -> Starlette:
    """The playground as an ASGI app; the engine starts with the app's lifespan.

    ``llm`` is an LLM instance (tests: ScriptedLLM), None for none, or the settings' own;
    ``store_url`` None means a fresh SQLite file in a temporary directory; ``memory``
    feeds the memory panel (default: the store's memory tables). ``playground`` passes
    one already started (``serve_playground`` starts it first to report errors early).
    """
    pg = playground or Playground(
        settings,
        llm=llm,
        judge=judge,
        store_url=store_url,
        embedder=embedder,
        memory=memory,
        tick_s=tick_s,
        start=start,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pg.start()
        try:
            yield
        finally:
            await pg.close()

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/state", state),
            Route("/api/export", export),
            Route("/api/prompt", prompt),
            Route("/api/transcript", upload_transcript, methods=["POST"]),
            WebSocketRoute("/ws", websocket_endpoint),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
            Mount(SHARED_URL, StaticFiles(directory=SHARED), name="shared"),
        ],
        lifespan=lifespan,
    )
    app.state.playground = pg
    return app
