"""The operator server next to a running bot (issue 27): read-only, GET only.

    GET /         the operator dashboard (kuuki.platforms.dashboard: charts, the latest
                  decisions, a search), or, with no store to read, where the metrics are
    GET /api/…    the dashboard's data
    GET /metrics  Prometheus's text format, from the app's own registry (kuuki.ops.metrics)

Loopback by default. On any other host `dashboard.token` is required (checked at start,
`kuuki.settings.check_dashboard`) and every request must carry it: ``Authorization: Bearer
<token>`` (Prometheus's ``authorization`` scrape setting) or ``?token=`` (a browser). It is
compared in constant time and never logged (uvicorn's access log is off: a query string
would hold it). The page's own files (``/shared/``, ``/dashboard/``: scripts and styles
shipped in the package, no data) load without it; the page sends the token it was opened
with on each of its requests.
"""

from __future__ import annotations

import contextlib
import hmac
import html
from collections.abc import AsyncIterator, Sequence
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kuuki.app import App
from kuuki.ops.metrics import Metrics
from kuuki.platforms.asgi_server import running_server
from kuuki.settings import Settings, check_dashboard

__all__ = ["DEFAULT_PORT", "app_metrics", "operator_app", "serving"]

DEFAULT_PORT = 8766  # the playground's 8765, plus one
_IN_QUERY = "kuuki.token_in_query"  # the scope's note that a browser sent ?token=
PUBLIC = ("/shared/", "/dashboard/")  # the page's packaged files: no data, no token

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
        app.store,
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
    metrics: Metrics | None, *, name: str, token: str = "", pages: Sequence[BaseRoute] = (),
) -> ASGIApp:
    """The server's ASGI app; with ``token``, every request must carry it. ``pages``: the
    operator dashboard's routes (kuuki.platforms.dashboard), which bring their own ``/``;
    without them (no store to read) ``/`` is a short page linking ``/metrics``. Without
    ``metrics`` (`kuuki dashboard` on a store: no bot runs) there is no ``/metrics``."""

    async def index(request: Request) -> Response:
        # The link keeps a browser's ?token= so /metrics opens from the page.
        query = "?" + urlencode({"token": token}) if request.scope.get(_IN_QUERY) else ""
        return HTMLResponse(_INDEX.format(name=html.escape(name), query=html.escape(query)))

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        body, content_type = metrics.exposition(request.headers.get("accept", ""))
        return Response(body, headers={"Content-Type": content_type})

    scraped = [Route("/metrics", scrape, methods=["GET"])] if metrics is not None else []
    app = Starlette(routes=[
        *scraped,
        *pages,
        Route("/", index, methods=["GET"]),  # when no page took "/"
    ])
    return _TokenGate(app, token) if token else app


class _TokenGate:
    """Every HTTP request carries the token, or gets 401 (before routing: no path says
    whether it exists)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith(PUBLIC):
            request = Request(scope)
            carried = self._carries(request)
            # Taken out of the request once read: whatever logs its URL later (an access
            # log an operator turned on) never sees the token.
            query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            if len(query) != len(request.query_params.multi_items()):
                scope["query_string"] = urlencode(query).encode()
                scope[_IN_QUERY] = True
            if not carried:
                response = PlainTextResponse(
                    "401: this operator server needs its token (Authorization: Bearer "
                    "<token>, or ?token=)\n", status_code=401,
                    headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _carries(self, request: Request) -> bool:
        given = ""
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = credential.strip()
        elif "token" in request.query_params:
            given = request.query_params["token"]
        return hmac.compare_digest(given.encode(), self.token)


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
                       pages=pages)
    async with running_server(app, host=settings.dashboard_host, port=chosen,
                              lifespan="off") as bound:
        yield bound
