"""Slack: slack-bolt (async) over Socket Mode, for one workspace, or over the HTTP Events
API (`run_slack_http`, kuuki.platforms.slack.http) for several processes.

`run_slack` connects an App's engine to Slack and runs until cancelled. Build the App with a
`SlackOutbox` (it is bound to the Slack client once connected)::

    outbox = SlackOutbox()
    app = await build_app(settings, clock=RealClock(), outbox=outbox)
    await run_slack(app, settings.slack_bot_token, settings.slack_app_token, outbox)

With several platforms on one engine, give the engine a routing outbox and pass the
SlackOutbox inside it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kuuki.platforms.slack.adapter import SlackAdapter
from kuuki.platforms.slack.http import run_slack_http
from kuuki.platforms.slack.mapping import MalformedPayload
from kuuki.platforms.slack.outbox import SlackOutbox

if TYPE_CHECKING:
    from kuuki.app import App

__all__ = ["MalformedPayload", "SlackAdapter", "SlackOutbox", "run_slack", "run_slack_http"]


async def run_slack(
    app: App,
    bot_token: str,
    app_token: str,
    outbox: SlackOutbox | None = None,
    *,
    base_url: str | None = None,
    backfill_limit: int = 50,
) -> None:
    """Connect `app` to Slack (bot token ``xoxb-…``, app-level token ``xapp-…`` with
    ``connections:write``) and serve until cancelled.

    `outbox` is the SlackOutbox the engine sends Slack actions through; it may be left out
    when it is the engine's outbox itself. `base_url` points the Web API client elsewhere
    (a local test server); the Socket Mode URL comes from that API. `backfill_limit`
    messages of history per conversation are recorded at start (0: none)."""
    adapter = SlackAdapter(
        app, bot_token, app_token, outbox, base_url=base_url, backfill_limit=backfill_limit
    )
    try:
        await adapter.start()
        await asyncio.Event().wait()
    finally:
        await adapter.close()
