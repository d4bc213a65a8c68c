"""A tiny OpenAI-ish HTTP server for the back-end tests (no SDK, no framework)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, JSON body) for one request, decided from the parsed request body.
Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def chat_body(content: str, model: str = "fake-model") -> dict[str, Any]:
    """A minimal, valid chat.completion response."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


@dataclass
class FakeServer:
    """A tiny OpenAI-ish HTTP server on a free port, answering through ``respond``."""

    respond: Responder
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    base_url: str = ""


@contextmanager
def fake_servers() -> Iterator[Callable[[Responder], FakeServer]]:
    """Yields ``start(respond)``; every server started is shut down on exit."""
    servers: list[tuple[ThreadingHTTPServer, threading.Thread, FakeServer]] = []

    def start(respond: Responder) -> FakeServer:
        state = FakeServer(respond)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                state.requests.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload = state.respond(body)
                if status == 0:  # "never answer": hold the connection until teardown
                    state.release.wait(30)
                    return
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        servers.append((server, thread, state))
        return state

    try:
        yield start
    finally:
        for server, thread, state in servers:
            state.release.set()
            server.shutdown()
            server.server_close()
            thread.join(5)
