"""Serving an ASGI app with uvicorn, in-process, on a socket bound before start-up (the
playground; the Slack HTTP Events API endpoint).

Binding the socket here (not in uvicorn) turns "port in use" into a KuukiError instead of
uvicorn's `sys.exit`, and gives port 0 (a free port) its real number before anyone asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

from kuuki.errors import KuukiError


class _Server(uvicorn.Server):
    """uvicorn's server, telling us when it is listening (no polling of `started`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise KuukiError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)
    return sock


@contextlib.asynccontextmanager
async def running_server(
    app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0,
    lifespan: Literal["on", "off"] = "on",
) -> AsyncIterator[int]:
    """Serve `app` on the running loop while the block runs; yields the bound port."""
    sock = bind(host, port)
    config = uvicorn.Config(
        app, log_level="warning", ws="websockets-sansio", lifespan=lifespan, access_log=False
    )
    server = _Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        waiter = asyncio.get_running_loop().create_task(server.listening.wait())
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            await task  # raises what start-up raised
            raise KuukiError(f"the server on {host}:{port} stopped during start-up")
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()
