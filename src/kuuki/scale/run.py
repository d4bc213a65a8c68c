"""Starting the pieces: `kuuki gateway`, `kuuki worker`, and `kuuki run --workers N`.

Both need ``broker.url`` (KUUKI_BROKER_URL, RabbitMQ with the consistent-hash exchange
plugin) and one store for all (``store.url``: PostgreSQL; a SQLite file only works while
every process is on one machine and one worker writes at a time, so it is refused for
more than one worker). `kuuki run --workers N` starts one gateway in its own process and
N workers as child processes, restarts a worker that dies, and stops them all on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.engine.config import EngineOptions
from kuuki.errors import ConfigError
from kuuki.ports import Outbox
from kuuki.settings import Settings

if TYPE_CHECKING:
    from kuuki.scale.worker import BrokerWorker, ChannelReader

log = logging.getLogger("kuuki.scale")


def _check(settings: Settings, *, workers: int = 1) -> None:
    if not settings.broker_url:
        raise settings.error(
            "broker_url",
            "scale-out needs a RabbitMQ URL, e.g. amqp://user:password@host:5672/ "
            "(the consistent-hash exchange plugin enabled)",
        )
    if workers > 1 and not settings.store_url.startswith(("postgresql", "postgres:")):
        raise settings.error(
            "store_url",
            "several workers need one PostgreSQL store for all "
            "(postgresql://user:password@host/db)",
        )


async def run_gateway(
    settings: Settings, *, slack_api: str | None = None, ready: Callable[[], None] | None = None
) -> int:
    """`kuuki gateway`: the platform connections; every event goes to the broker."""
    from kuuki.run import RoutingOutbox, platform_starters
    from kuuki.scale.broker import Publisher
    from kuuki.scale.gateway import BrokerRelay

    _check(settings)
    names, outboxes, starters = platform_starters(settings, slack_api=slack_api)
    publisher = Publisher(settings.broker_url, settings.broker_partitions)
    await publisher.open()
    relay = BrokerRelay(publisher)
    app = await build_app(settings, clock=RealClock(), outbox=RoutingOutbox(outboxes),
                          llm=None, judge_llm=None, embedder=None,
                          engine=EngineOptions(relay=relay))
    relay.drain = app.engine.drain_intake
    print(f"kuuki gateway: {settings.persona.name} on {', '.join(names)}, events to "
          f"{settings.broker_partitions} partitions", flush=True)
    if ready is not None:
        ready()
    try:
        await asyncio.gather(*(start(app) for start in starters))
    finally:
        await app.close()
        await relay.close()
        await publisher.close()
    return 0


async def run_worker(
    settings: Settings,
    *,
    index: int = 0,
    count: int = 1,
    standby_s: float = 2.0,
    slack_api: str | None = None,
    build: Mapping[str, Any] | None = None,
    ready: Callable[[], None] | None = None,
    outboxes: Mapping[str, Outbox] | None = None,
) -> int:
    """`kuuki worker`: the engine for the partitions this worker holds, until stopped.
    ``build`` are build_app's keywords (tests: a scripted model); ``outboxes`` more
    platforms' outboxes beside the ones started here (`kuuki bench scale`: its synthetic
    chat's platform)."""
    from kuuki.platforms.playground.model_status import ModelLoader
    from kuuki.platforms.tokens import platforms_to_run
    from kuuki.run import RoutingOutbox
    from kuuki.scale.worker import BrokerWorker, consume

    _check(settings, workers=count)
    if not 0 <= index < count:
        raise ConfigError("--index", f"worker {index} does not exist among {count} (0 to "
                          f"{count - 1})")
    names = platforms_to_run(settings)
    routes: dict[str, Outbox] = dict(outboxes or {})
    app = await build_app(settings, clock=RealClock(), outbox=RoutingOutbox(routes),
                          engine=EngineOptions(seen_capacity=0), **(build or {}))
    readers: dict[str, ChannelReader] = {}
    closers: list[Any] = []
    try:
        saw = await _start_platforms(app, settings, names, routes, readers, closers,
                                     slack_api)
        loader = ModelLoader(app)
        if loader.status.state == "loading":
            print(f"kuuki worker {index}: {loader.status.headline()}", flush=True)
            await loader.load()
        worker = BrokerWorker(app, readers, saw=saw)
        connection = await consume(worker, settings.broker_url, settings.broker_partitions,
                                   index=index, count=count, standby_s=standby_s)
        closers.insert(0, connection.close)
        print(f"kuuki worker {index} of {count}: consuming", flush=True)
        if ready is not None:
            ready()
        return await _until_stopped(worker, index)
    finally:
        for close in closers:
            try:
                await close()
            except Exception as exc:
                log.debug("closing: %s", exc)
        await app.close()


async def _start_platforms(
    app: App, settings: Settings, names: Collection[str], outboxes: dict[str, Outbox],
    readers: dict[str, ChannelReader], closers: list[Any], slack_api: str | None,
) -> Any:
    """Start the REST side of each platform to run, filling ``outboxes``, ``readers`` and
    ``closers`` as each starts; what Discord saw (None without Discord)."""
    saw = None
    if "discord" in names:
        from kuuki.platforms.discord import DiscordOutbox
        from kuuki.platforms.discord.rest import DiscordRest

        d_out = DiscordOutbox()
        outboxes["discord"] = d_out
        rest = DiscordRest(app, settings.discord_token, d_out)
        await rest.start()
        readers["discord"], saw = rest, rest.saw
        closers.append(rest.close)
    if "slack" in names:
        from kuuki.platforms.slack import SlackOutbox
        from kuuki.platforms.slack.adapter import SlackAdapter

        s_out = SlackOutbox()
        outboxes["slack"] = s_out
        adapter = SlackAdapter(app, settings.slack_bot_token, "", s_out, base_url=slack_api)
        await adapter.start_web()
        readers["slack"] = adapter
        closers.append(adapter.close)
    return saw


async def _until_stopped(worker: BrokerWorker, index: int) -> int:
    """Wait for the worker to stop: 75 when the broker was lost, re-raised on cancel."""
    from kuuki.scale.worker import WorkerStopped

    try:
        await worker.stopped
    except WorkerStopped as exc:
        print(f"kuuki worker {index}: stopped: {exc}", file=sys.stderr, flush=True)
        return 75  # EX_TEMPFAIL: a supervisor starts it again
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM: a clean stop
        await worker.drain()
        raise
    return 0


async def run_supervised(settings: Settings, workers: int, argv_of: Callable[[int], list[str]],
                         *, gateway: Callable[[], Any]) -> int:
    """`kuuki run --workers N`: the gateway here, N worker processes beside it, each
    started again (after a second) when it exits; all stop with the gateway."""
    _check(settings, workers=workers)
    procs: dict[int, asyncio.subprocess.Process] = {}
    stopping = False

    async def keep(i: int) -> None:
        while not stopping:
            proc = await asyncio.create_subprocess_exec(*argv_of(i), env=dict(os.environ))
            procs[i] = proc
            code = await proc.wait()
            if stopping:
                return
            print(f"kuuki run: worker {i} exited ({code}); starting it again", flush=True)
            await asyncio.sleep(1.0)

    keepers = [asyncio.create_task(keep(i)) for i in range(workers)]
    try:
        return int(await gateway())
    finally:
        stopping = True
        for proc in procs.values():
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        await asyncio.gather(*(p.wait() for p in procs.values()), return_exceptions=True)
        for k in keepers:
            k.cancel()
        await asyncio.gather(*keepers, return_exceptions=True)
