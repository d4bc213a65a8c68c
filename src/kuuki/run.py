"""The front-ends' runners: `kuuki chat` (the terminal room) and `kuuki run` (Discord and
Slack on one engine). They compose: build the App (kuuki.app, the composition root of the
engine) and hand it to the front-end, which never builds one itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from kuuki.app import App, build_app
from kuuki.clock import RealClock, VirtualClock
from kuuki.domain import Channel, User
from kuuki.errors import KuukiError
from kuuki.ports import Outbox
from kuuki.settings import Settings


async def run_chat(
    settings: Settings,
    *,
    lines: AsyncIterator[str] | None = None,
    out: TextIO | None = None,
    **build: Any,
) -> int:
    """`kuuki chat`: the terminal room until /quit, Ctrl-D or Ctrl-C.

    Its clock follows real time and `/jump` moves it ahead (the playground's driver). The
    model is loaded once before the first prompt, and the terminal says so while it loads.
    ``lines``, ``out`` and ``build`` (build_app's keywords) are for tests.
    """
    import asyncio

    from kuuki.platforms.playground.model_status import PLUG_IN, ModelLoader
    from kuuki.platforms.playground.timeline import ClockDriver
    from kuuki.platforms.terminal import Console, TerminalOutbox, TerminalRoom, stdin_lines

    # A line typed on a terminal is shown by it; lines from a test or a pipe are echoed.
    console = Console(out or sys.stdout, echo=True if lines is not None else None)
    clock = VirtualClock(RealClock().now())
    driver = ClockDriver(clock)
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    console.line(f"kuuki chat — {settings.persona.name} is listening. Starting…")
    app = await build_app(settings, clock=clock, outbox=TerminalOutbox(clock, bot, console),
                          **build)
    loader = ModelLoader(app, check=True)
    driver.start()
    try:
        status = loader.status
        if (note := status.note()) is not None:
            width = max(len(label) for label, _ in PLUG_IN)
            console.line(note + " Your own model is one setting away:")
            for label, line in PLUG_IN:
                console.line(f"  {label:<{width}}  {line}")
        if status.state == "loading":
            console.line(f"({status.headline()})")
            status = await loader.load()
        console.line(f"({status.headline()})")
        memory = app.memory.snapshot if app.memory is not None else None
        room = TerminalRoom(app.engine.handle, app.engine.idle, clock, console,
                            memory=memory, jump=driver.advance, bot_name=settings.persona.name)
        app.engine.on_decision(room.on_decision)
        await room.run(lines if lines is not None else stdin_lines())
    except asyncio.CancelledError:  # Ctrl-C: asyncio.run cancels us, then exits with 130
        console.interrupted()
        console.line("(leaving kuuki chat)")
        raise
    finally:
        await driver.stop()
        await loader.close()
        await app.close()
    return 0


class RoutingOutbox:
    """One engine, several platforms: each channel's actions go to its platform's outbox."""

    def __init__(self, outboxes: dict[str, Outbox]) -> None:
        self.outboxes = outboxes

    def _for(self, channel: Channel) -> Outbox:
        try:
            return self.outboxes[channel.platform]
        except KeyError:
            raise KuukiError(f"no outbox for platform {channel.platform!r}") from None

    async def send(self, channel: Channel, action: Any) -> Any:
        return await self._for(channel).send(channel, action)

    def typing(self, channel: Channel) -> contextlib.AbstractAsyncContextManager[None]:
        return self._for(channel).typing(channel)


Starter = Callable[[App], Any]


def platform_starters(
    settings: Settings, *, slack_api: str | None = None
) -> tuple[list[str], dict[str, Outbox], list[Starter]]:
    """The configured platforms: their names, their outboxes (to build the App with) and
    a starter for each (runs the platform for an App until cancelled). ``slack_api``
    points Slack's Web API elsewhere (the local test server)."""
    from kuuki.platforms.tokens import platforms_to_run

    names = platforms_to_run(settings)
    outboxes: dict[str, Outbox] = {}
    starters: list[Starter] = []
    if "discord" in names:
        from kuuki.platforms.discord import DiscordOutbox, run_discord

        d_out = DiscordOutbox()
        outboxes["discord"] = d_out
        shards: dict[str, Any] = {}
        if settings.discord_shard_count:
            shards["shard_count"] = settings.discord_shard_count
            if settings.discord_shard_ids:
                shards["shard_ids"] = list(settings.discord_shard_ids)
        starters.append(lambda app: run_discord(app, settings.discord_token, d_out, **shards))
    if "slack" in names:
        from kuuki.platforms.slack import SlackOutbox, run_slack, run_slack_http

        s_out = SlackOutbox()
        outboxes["slack"] = s_out
        if settings.slack_mode == "http":
            starters.append(lambda app: run_slack_http(
                app, settings.slack_bot_token, settings.slack_signing_secret, s_out,
                host=settings.slack_http_host, port=settings.slack_http_port,
                base_url=slack_api,
            ))
        else:
            starters.append(lambda app: run_slack(
                app, settings.slack_bot_token, settings.slack_app_token, s_out,
                base_url=slack_api,
            ))
    return names, outboxes, starters


async def run_platforms(
    settings: Settings, *, dashboard: int | None = None, slack_api: str | None = None,
    ready: Callable[[int], object] | None = None,
) -> int:
    """`kuuki run`: every configured platform at once, on one engine and one store.

    The operator server (kuuki.ops: /metrics) runs beside them when ``dashboard`` is a port
    (`--dashboard`; 0 picks a free one) or `dashboard.port` is set. ``slack_api`` points
    Slack's Web API elsewhere (the local test server); ``ready`` hears the operator
    server's port once it listens (tests)."""
    import asyncio

    from kuuki.settings import check_dashboard

    port = dashboard if dashboard is not None else settings.dashboard_port or None
    if port is not None:
        check_dashboard(settings)  # before connecting anywhere: a refusal is the first word
    names, outboxes, starters = platform_starters(settings, slack_api=slack_api)
    app = await build_app(settings, clock=RealClock(), outbox=RoutingOutbox(outboxes))
    from kuuki.app.heap import settle
    from kuuki.platforms.playground.model_status import ModelLoader

    # Load a local model before connecting: the first person to talk must not wait for it.
    loader = ModelLoader(app)
    if loader.status.state == "loading":
        print(f"kuuki run: {loader.status.headline()}", flush=True)
        status = await loader.load()
        print(f"kuuki run: {status.headline()}", flush=True,
              file=sys.stderr if status.state == "failed" else sys.stdout)
    print(f"kuuki run: {settings.persona.name} on {', '.join(names)}", flush=True)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if port is not None:
                bound = await stack.enter_async_context(_operator_server(app, port))
                if ready is not None:
                    ready(bound)
            settle()  # start-up is over: its objects leave the collector's passes
            await asyncio.gather(*(start(app) for start in starters))
    finally:
        await app.close()
    return 0


@contextlib.asynccontextmanager
async def _operator_server(app: App, port: int) -> AsyncIterator[int]:
    """The operator server (kuuki.ops) for ``app`` on ``port`` while the block runs."""
    from kuuki.ops.server import app_metrics, dashboard_pages, serving

    s = app.settings
    async with serving(s, app_metrics(app), port=port, pages=dashboard_pages(app)) as bound:
        host = f"[{s.dashboard_host}]" if ":" in s.dashboard_host else s.dashboard_host
        print(f"kuuki run: operator dashboard on http://{host}:{bound}/ (metrics at /metrics)",
              flush=True)
        yield bound
