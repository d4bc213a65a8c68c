"""Serving the playground with uvicorn, in-process (kuuki.platforms.asgi_server)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kuuki.platforms.asgi_server import running_server
from kuuki.platforms.playground.server import create_app
from kuuki.platforms.playground.session import Playground
from kuuki.settings import Settings


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
