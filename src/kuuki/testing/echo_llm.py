"""Careless servers that echo the caller's credentials, for the secret-leak tests.

Some OpenAI-compatible servers quote the key they were sent in an error ("Incorrect API
key provided: sk-…"), and some JSON APIs echo request headers. `EchoingLLMServer` is such
a chat-completions server on 127.0.0.1 (port 0); `EchoingService` is such an API for
``[[tools.http]]``. Both put everything the caller sent that could be a credential — the
``Authorization`` header (a Basic one decoded too), other auth headers, the query string —
into what they answer, so a test can grep kuuki's logs, store and screens for it.

`EchoingLLMServer` answers each request by the last fault marker ``[f<name>]`` in the
request's messages (the message being answered carries its own, written last):

    (none)   a chat completion ("Sure, noted.")
    400t     HTTP 400 to a request that offers tools; otherwise a chat completion
    400 401 404 422 429 500
             that HTTP status, with the credentials in the OpenAI-style error message
    sse      HTTP 200 as a server-sent event stream: a first chunk, then an error event
             carrying the credentials, mid-stream
    tool     a call of the tool `lookup` while the request offers tools and holds no tool
             result; once it does, an answer that quotes the result (a model repeating
             what a tool said)
    tool403  the same with the tool `denied` (`EchoingService` answers it 403)
    use<q>   the same with the tool `lookup` asked for ``q`` (`EchoingService` then gives
             its `answers[q]` on ``/said?q=<q>``)
    (a name of `answers`)
             the test's own answer, (status, body) sent as written: a secret spelled
             as a test needs it (JSON-escaped, split by a line break, in a non-JSON body)

Every request is recorded with its headers (`requests`); `wait_for` wakes on each one.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_MARKER = re.compile(r"\[f([a-z0-9]+)\]")
STATUSES = ("400", "401", "404", "422", "429", "500")
_TOOLS = {"tool": "lookup", "tool403": "denied"}  # fault -> the tool the "model" calls


def credentials(request: web.Request) -> str:
    """Everything ``request`` carried that could be a credential, as one sentence."""
    auth = request.headers.get("Authorization", "")
    parts = [f"Incorrect API key provided: {auth.split(' ', 1)[-1]}",
             f"you sent Authorization: {auth}"]
    if auth.lower().startswith("basic "):
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            parts.append("as user:password " + base64.b64decode(auth[6:]).decode())
    for name in ("X-Api-Key", "Api-Key", "X-Auth-Token"):
        if name in request.headers:
            parts.append(f"{name}: {request.headers[name]}")
    if request.query_string:
        parts.append(f"query {request.query_string}")
    return "; ".join(parts)


@dataclass(slots=True)
class EchoedRequest:
    body: dict[str, Any]
    headers: Mapping[str, str]
    fault: str


@dataclass
class EchoingLLMServer:
    """See module doc. ``async with EchoingLLMServer() as server: server.base_url``."""

    reply_text: str = "Sure, noted."
    requests: list[EchoedRequest] = field(default_factory=list)
    port: int = 0
    answers: dict[str, tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner = await _serve(app)
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> EchoingLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    def faults(self) -> list[str]:
        return [r.fault for r in self.requests]

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        fault = fault_of(body)
        self.requests.append(EchoedRequest(body, dict(request.headers), fault))
        self._changed.set()
        self._changed = asyncio.Event()
        if fault in self.answers:
            status, text = self.answers[fault]
            return web.Response(text=text, status=status, content_type="application/json")
        said = credentials(request)
        if fault == "400t":
            fault = "400" if body.get("tools") else "ok"
        if fault in STATUSES:
            return _json({"error": {"message": said, "type": "invalid_request_error",
                                    "code": "invalid_api_key"}}, int(fault))
        if fault == "sse":
            return await _sse_error(request, said)
        tool, asked = _TOOLS.get(fault), "status"
        if fault.startswith("use"):
            tool, asked = "lookup", fault.removeprefix("use")
        if tool is not None and body.get("tools") and not _tool_results(body):
            return _json(_calling(tool, {"q": asked}))
        if tool is not None and _tool_results(body):
            return _json(_completion("The service said: " + _tool_results(body)[-1]))
        return _json(_completion(self.reply_text))


@dataclass
class EchoingService:
    """A JSON API for ``[[tools.http]]`` that echoes the credentials it was sent: in a
    200 answer on ``/lookup``, in a 403's body on ``/denied``; on ``/said?q=<name>`` it
    answers ``answers[name]``, (status, body) as written."""

    port: int = 0
    asked: list[Mapping[str, str]] = field(default_factory=list)
    answers: dict[str, tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> EchoingService:
        app = web.Application()
        app.router.add_get("/lookup", self._lookup)
        app.router.add_get("/denied", self._denied)
        app.router.add_get("/said", self._said)
        self._runner = await _serve(app)
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _lookup(self, request: web.Request) -> web.Response:
        self.asked.append(dict(request.headers))
        return _json({"status": "all good", "debug": credentials(request)})

    async def _said(self, request: web.Request) -> web.Response:
        self.asked.append(dict(request.headers))
        status, text = self.answers[request.query.get("q", "")]
        return web.Response(text=text, status=status, content_type="application/json")

    async def _denied(self, request: web.Request) -> web.Response:
        self.asked.append(dict(request.headers))
        return _json({"error": f"forbidden: {credentials(request)}"}, 403)


def fault_of(body: Mapping[str, Any]) -> str:
    """The last ``[f<name>]`` marker in the request's messages; "ok" without one."""
    found = "ok"
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        markers = _MARKER.findall(content) if isinstance(content, str) else []
        if markers:
            found = markers[-1]
    return found


async def _serve(app: web.Application) -> web.AppRunner:
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


def _tool_results(body: Mapping[str, Any]) -> list[str]:
    """What tools said, as tool turns or as the loop's folded "What you found" turn."""
    out = []
    for m in body.get("messages") or []:
        content = str(m.get("content") or "") if isinstance(m, dict) else ""
        if m.get("role") == "tool" or content.startswith("What you found"):
            out.append(content)
    return out


async def _sse_error(request: web.Request, said: str) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    first = {"id": "chatcmpl-echo", "object": "chat.completion.chunk", "created": 0,
             "model": "echo", "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                  "content": "Su"}}]}
    await response.write(f"data: {json.dumps(first)}\n\n".encode())
    error = {"error": {"message": said, "type": "server_error"}}
    await response.write(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
    await response.write_eof()
    return response


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data).encode(), status=status,
                        headers={"Content-Type": "application/json"})


def _calling(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = _completion("")
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_echo", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-echo", "object": "chat.completion", "created": 0, "model": "echo",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    }
