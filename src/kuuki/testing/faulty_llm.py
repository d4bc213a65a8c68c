"""A misbehaving OpenAI-compatible server on 127.0.0.1, port 0, for fault tests and
`kuuki bench faults`.

Each request to ``/v1/chat/completions`` is answered by the next fault in `script` (the
last one repeats), so a test says exactly what the server does:

    ok            a valid chat completion with `reply_text`
    hang          accepts the request and never answers (until `release()` or `close()`)
    429           HTTP 429 with ``Retry-After: <retry_after>``
    500           HTTP 500 with an OpenAI-style error body
    nonjson       HTTP 200, ``application/json``, a body that is not JSON
    notcompletion HTTP 200, JSON that is not a chat completion
    close         closes the connection without a word

Every request is recorded (`requests`, with the fault it got); `wait_for` wakes on each
change, so tests never sleep.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

FAULTS = ("ok", "hang", "429", "500", "nonjson", "notcompletion", "close")


@dataclass(slots=True)
class FaultyRequest:
    body: dict[str, Any]
    fault: str


@dataclass
class FaultyLLMServer:
    """See module doc. ``async with FaultyLLMServer(["hang"]) as server: server.base_url``."""

    script: list[str] = field(default_factory=lambda: ["ok"])
    reply_text: str = "Sure, happy to help with that."
    retry_after: float = 30.0
    requests: list[FaultyRequest] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        _check(self.script)
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()
        self._changed = asyncio.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def set_script(self, script: Sequence[str]) -> None:
        """Answer the next requests with ``script`` (the last fault repeats)."""
        _check(script)
        self.script = list(script)

    def release(self) -> None:
        """Let every hanging request end (with a 503), and later ones not hang."""
        self._release.set()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FaultyLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _next_fault(self) -> str:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        fault = self._next_fault()
        self.requests.append(FaultyRequest(body if isinstance(body, dict) else {}, fault))
        self._notify()
        if fault == "hang":
            await self._release.wait()
            return _json({"error": {"message": "released", "type": "server_error"}}, 503)
        if fault == "429":
            return _json(
                {"error": {"message": "rate limited", "type": "rate_limit"}}, 429,
                headers={"Retry-After": f"{self.retry_after:g}"},
            )
        if fault == "500":
            return _json({"error": {"message": "boom", "type": "server_error"}}, 500)
        if fault == "nonjson":
            return web.Response(
                body=b"<html>502 Bad Gateway</html>", status=200,
                headers={"Content-Type": "application/json"},
            )
        if fault == "notcompletion":
            return _json({"object": "list", "data": [{"id": "not-a-completion"}]})
        if fault == "close":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=200)
        return _json(_completion(self.reply_text, str(body.get("model") or "faulty")))


def _check(script: Sequence[str]) -> None:
    unknown = [f for f in script if f not in FAULTS]
    if unknown or not script:
        raise ValueError(f"unknown faults {unknown}; choose from {', '.join(FAULTS)}")


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(), status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-faulty",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text},
             "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
    }
