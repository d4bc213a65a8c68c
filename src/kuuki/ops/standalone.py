"""`kuuki dashboard`: the operator page on any store, with no bot running and no platform.

The store is opened as the other reading commands open it (kuuki.explain.why.open_to_read:
``--store``, else the configured one) read-only (kuuki.store.reading): nothing is created,
migrated or changed, and what is not a store this kuuki reads is refused in one line. The
page is the one `kuuki run --dashboard` serves (kuuki.platforms.dashboard) behind the same
gates (on loopback, only requests for this machine; another host needs `dashboard.token`,
kuuki.ops.server); there is no ``/metrics``, since no bot counts anything here. The page
opens on ``--since``'s window (default 7 days) and says where the store's data lies when
that window holds none — a replayed store is dated where its transcript says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from kuuki.clock import Clock, RealClock
from kuuki.explain.why import open_to_read, where_looked
from kuuki.ops.server import DEFAULT_PORT, operator_app
from kuuki.platforms.asgi_server import running_server
from kuuki.settings import Settings, check_dashboard


async def serve_store(
    settings: Settings,
    store_url: str | None,
    *,
    window: str,
    out: TextIO,
    host: str | None = None,
    port: int | None = None,
    clock: Clock | None = None,
    until: Callable[[], asyncio.Future[None]] | None = None,
) -> int:
    """Serve the page on the store until ``until()`` completes (default: never, Ctrl-C)."""
    from kuuki.platforms.dashboard import dashboard_routes
    from kuuki.platforms.dashboard.overview import overview_of

    if host is not None:  # an error about it names the flag
        sources = {**settings.sources, "dashboard_host": ("--host", "on the command line")}
        settings = replace(settings, dashboard_host=host, sources=sources)
    check_dashboard(settings)  # before the store is opened or a port bound
    chosen = port if port is not None else (settings.dashboard_port or DEFAULT_PORT)
    store = await open_to_read(settings, store_url)
    try:
        label = where_looked(settings, store_url)
        persona = settings.persona
        routes = dashboard_routes(
            store.browse,
            overview_of(store, clock or RealClock(), prices=settings.llm.price_per_1k_tokens,
                        show_private=settings.dashboard_show_private),
            bot_names=(persona.name, *persona.aliases),
            show_private=settings.dashboard_show_private,
            about={"window": window, "metrics": False, "store": label},
        )
        app = operator_app(None, name=persona.name, token=settings.dashboard_token,
                           pages=routes, host=settings.dashboard_host)
        async with running_server(app, host=settings.dashboard_host, port=chosen,
                                  lifespan="off") as bound:
            shown = f"[{settings.dashboard_host}]" if ":" in settings.dashboard_host \
                else settings.dashboard_host
            gate = "; every request needs the token" if settings.dashboard_token else ""
            out.write(f"kuuki dashboard: http://{shown}:{bound}/ — read-only, on {label}"
                      f"{gate}. Ctrl-C stops it.\n")
            out.flush()
            await (until() if until is not None else asyncio.Event().wait())
    finally:
        await store.close()
    return 0
