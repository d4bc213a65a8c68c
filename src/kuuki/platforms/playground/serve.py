"""Serving the playground with uvicorn, in-process, on a socket bound before start-up.

Binding the socket here (not in uvicorn) turns "port in use" into a KuukiError instead of
uvicorn's `sys.exit`, and gives port 0 (a free port) its real number before anyone asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable

import uvicorn
from starlette.types import ASGIApp

from ...errors import KuukiError
from ...settings import Settings
from .server import create_app
from .session import Playground


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
    app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[int]:
    """Serve `app` on the running loop while the block runs; yields the bound port."""
    sock = bind(host, port)
    config = uvicorn.Config(
        app, log_level="warning", ws="websockets-sansio", lifespan="on", access_log=False
    )
    server = _Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        waiter = asyncio.get_running_loop().create_task(server.listening.wait())
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            await task  # raises what start-up raised
            raise KuukiError("the playground server stopped during start-up")
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


async def serve_playground(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    ready: Callable[[int], None] | None = None,
    store_url: str | None = None,
) -> None:
    """Serve the playground until cancelled (Ctrl-C); port 0 picks a free port.

    The engine is built before the server starts, so a configuration problem raises here
    (as KuukiError) rather than inside uvicorn. ``store_url`` None: a temporary store. A local
    model starts loading once the address is printed, and the terminal and the page both say
    when it is ready.
    """
    playground = Playground(settings, store_url=store_url)
    await playground.start(load_model=False)
    try:
        app = create_app(settings, playground=playground)
        async with running_server(app, host=host, port=port) as bound:
            shown = f"[{host}]" if ":" in host else host
            print(f"kuuki playground: http://{shown}:{bound}/", flush=True)
            loader = playground.loader
            if loader is not None and loader.status.state == "loading":  # the page says so too
                print(f"kuuki playground: {loader.status.headline()}", flush=True)
                loader.on_change(lambda status: print(f"kuuki playground: {status.headline()}",
                                                      flush=True))
            # Only now: while llama.cpp loads, whatever the process prints is lost.
            playground.load_model()
            if ready is not None:
                ready(bound)
            await asyncio.Event().wait()
    finally:
        await playground.close()
