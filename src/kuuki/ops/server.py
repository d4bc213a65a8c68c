"""The operator server next to a running bot: read-only, GET only.

    GET /         the operator dashboard (kuuki.platforms.dashboard: charts, the latest
                  decisions, a search), or, with no store to read, where the metrics are
    GET /api/…    the dashboard's data
    GET /metrics  Prometheus's text format, from the app's own registry (kuuki.ops.metrics)

Loopback by default, where it answers only requests whose ``Host`` names this machine (a
page of another site re-pointed at 127.0.0.1 by DNS rebinding gets 421:
kuuki.platforms.web.host). On any other host `dashboard.token` is required (checked at
start, `kuuki.settings.check_dashboard`) and every request must carry it, once:
``Authorization: Bearer <token>`` (Prometheus's ``authorization`` scrape setting) or
``?token=`` (a browser); kuuki.ops.gates. It is compared in constant time and never logged
(uvicorn's access log is off: a query string would hold it). The page's own files
(``/shared/``, ``/dashboard/``: scripts and styles shipped in the package, no data) load
without it; the page sends the token it was opened with on each of its requests.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import AsyncIterator, Sequence
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from kuuki.app import App
from kuuki.ops.gates import IN_QUERY, TokenGate
from kuuki.ops.metrics import Metrics
from kuuki.platforms.asgi_server import running_server
from kuuki.platforms.web.host import HostGate
from kuuki.settings import Settings, check_dashboard, loopback

__all__ = ["DEFAULT_PORT", "app_metrics", "operator_app", "serving"]

DEFAULT_PORT = 8766  # the playground's 8765, plus one

_INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kuuki: {name}</title></head>
<body>
<h1>kuuki operator server: {name}</h1>
<p>This server runs next to <code>kuuki run</code> and only reads: it changes nothing.</p>
<ul><li><a href="metrics{query}">/metrics</a>: Prometheus metrics of this bot (decisions,
LLM calls and tokens, reply latency, guard verdicts, queues, breakers)</li></ul>
</body></html>
"""


def dashboard_pages(app: App) -> list[BaseRoute]:
    """The operator dashboard's routes on ``app``'s store (none without a store)."""
    from kuuki.platforms.dashboard import dashboard_routes
    from kuuki.platforms.dashboard.overview import overview_of

    s = app.settings
    if app.store is None:
        return []
    return dashboard_routes(
        app.store.browse,
        overview_of(app.store, app.clock, prices=s.llm.price_per_1k_tokens,
                    show_private=s.dashboard_show_private),
        bot_names=(s.persona.name, *s.persona.aliases),
        show_private=s.dashboard_show_private,
    )


def app_metrics(app: App) -> Metrics:
    """Metrics for ``app``: its decisions counted as they finish, its engine and model
    doors read at scrape time; a channel label only when `dashboard.metrics_per_channel`."""
    metrics = Metrics(per_channel=app.settings.dashboard_metrics_per_channel)
    app.engine.on_decision(metrics.observe)
    metrics.watch(app.engine, app.models)
    return metrics


def operator_app(
    metrics: Metrics, *, name: str, token: str = "", pages: Sequence[BaseRoute] = (),
    host: str = "127.0.0.1",
) -> ASGIApp:
    """The server's ASGI app; with ``token``, every request must carry it once; on a
    loopback ``host``, every request must be for this machine (kuuki.platforms.web.host).
    ``pages``: the operator dashboard's routes (kuuki.platforms.dashboard), which bring
    their own ``/``; without them (no store to read) ``/`` is a short page linking
    ``/metrics``."""

    async def index(request: Request) -> Response:
        # The link keeps a browser's ?token= so /metrics opens from the page.
        query = "?" + urlencode({"token": token}) if request.scope.get(IN_QUERY) else ""
        return HTMLResponse(_INDEX.format(name=html.escape(name), query=html.escape(query)))

    async def scrape(request: Request) -> Response:
        body, content_type = metrics.exposition(request.headers.get("accept", ""))
        return Response(body, headers={"Content-Type": content_type})

    app = Starlette(routes=[
        Route("/metrics", scrape, methods=["GET"]),
        *pages,
        Route("/", index, methods=["GET"]),  # when no page took "/"
    ])
    gated: ASGIApp = TokenGate(app, token) if token else app
    return HostGate(gated, host) if loopback(host) else gated


@contextlib.asynccontextmanager
async def serving(
    settings: Settings, metrics: Metrics, *, port: int | None = None,
    pages: Sequence[BaseRoute] = (),
) -> AsyncIterator[int]:
    """Serve the operator server for ``settings`` while the block runs; yields its port.
    ``port`` overrides the setting (0: a free one). Refuses a host other than loopback
    without a token (`ConfigError` naming the setting) before binding anything."""
    check_dashboard(settings)
    chosen = settings.dashboard_port if port is None else port
    app = operator_app(metrics, name=settings.persona.name, token=settings.dashboard_token,
                       pages=pages, host=settings.dashboard_host)
    async with running_server(app, host=settings.dashboard_host, port=chosen,
                              lifespan="off") as bound:
        yield bound
