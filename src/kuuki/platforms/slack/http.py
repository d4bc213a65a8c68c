"""Slack over the HTTP Events API: any number of `kuuki run` processes behind a load
balancer, each serving Slack's signed requests at ``POST /slack/events``.

Socket Mode allows an app only a few connections and spreads events at random across
them; the Events API is how Slack apps scale out. The endpoint is slack-bolt's own ASGI
handler (`AsyncSlackRequestHandler`) behind uvicorn: bolt checks each request's v0
signature against the signing secret (401 otherwise) and answers ``url_verification``;
everything after that is the Socket Mode adapter's path (kuuki.platforms.slack.adapter):
200 once the event is durable, 500 when the store cannot take it so that Slack retries,
and a retry (``X-Slack-Retry-Num``) of an event already taken handled once, by its id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from starlette.types import ASGIApp

from kuuki.errors import ConfigError
from kuuki.platforms.asgi_server import running_server
from kuuki.platforms.slack.adapter import SlackAdapter
from kuuki.platforms.slack.outbox import SlackOutbox

if TYPE_CHECKING:
    from kuuki.app import App

log = logging.getLogger("kuuki.slack")

EVENTS_PATH = "/slack/events"  # bolt's default; the Request URL to give Slack


async def run_slack_http(
    app: App,
    bot_token: str,
    signing_secret: str,
    outbox: SlackOutbox | None = None,
    *,
    host: str = "0.0.0.0",
    port: int = 3000,
    base_url: str | None = None,
    backfill_limit: int = 50,
    ready: Callable[[int], None] | None = None,
) -> None:
    """Serve Slack's Events API for `app` on host:port until cancelled; ``ready`` gets
    the bound port (port 0 picks a free one). `base_url` points the Web API elsewhere."""
    if not signing_secret:
        raise ConfigError(
            "SLACK_SIGNING_SECRET",
            "the HTTP Events API mode needs the app's signing secret",
        )
    adapter = SlackAdapter(app, bot_token, "", outbox, base_url=base_url,
                           backfill_limit=backfill_limit, signing_secret=signing_secret)
    try:
        await adapter.start()
        assert adapter.asgi is not None
        # bolt types its handler's scope narrower than the ASGI spec's mapping
        endpoint = cast(ASGIApp, adapter.asgi)
        async with running_server(endpoint, host=host, port=port, lifespan="off") as bound:
            shown = f"[{host}]" if ":" in host else host
            print(f"kuuki run: Slack events at http://{shown}:{bound}{EVENTS_PATH}", flush=True)
            if ready is not None:
                ready(bound)
            await asyncio.Event().wait()
    finally:
        await adapter.close()
