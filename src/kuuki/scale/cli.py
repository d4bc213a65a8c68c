"""The command line of scale-out: `kuuki gateway`, `kuuki worker`, `kuuki run --workers`."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from kuuki.settings import Settings, load_settings

_BROKER = ("Settings: broker.url (KUUKI_BROKER_URL, RabbitMQ with the consistent-hash "
           "exchange plugin), broker.partitions (KUUKI_BROKER_PARTITIONS, default 16, the "
           "same everywhere) and one PostgreSQL store.url (KUUKI_STORE_URL). See "
           "docs/scaling.md.")

def _settings(args: argparse.Namespace) -> Settings:
    overrides = {"KUUKI_BROKER_URL": args.broker} if getattr(args, "broker", None) else None
    return load_settings(path=getattr(args, "config", None), overrides=overrides)

def _until_signal(work: Coroutine[Any, Any, int]) -> int:
    """Run ``work``; SIGTERM cancels it the way Ctrl-C does, so it closes cleanly."""

    async def main() -> int:
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            return 0

    return asyncio.run(main())

def cmd_gateway(args: argparse.Namespace) -> int:
    from kuuki.scale.run import run_gateway

    return _until_signal(run_gateway(_settings(args)))

def cmd_worker(args: argparse.Namespace) -> int:
    from kuuki.scale.run import run_worker

    return _until_signal(run_worker(_settings(args), index=args.index, count=args.of,
                                    standby_s=args.standby))

def run_with_workers(args: argparse.Namespace, settings: Settings) -> int:
    """`kuuki run --workers N`: the gateway in this process, N worker processes."""
    from kuuki.scale.run import run_gateway, run_supervised

    def argv_of(i: int) -> list[str]:
        config = ["--config", args.config] if getattr(args, "config", None) else []
        return [sys.executable, "-m", "kuuki.cli", *config, "worker", "--index", str(i),
                "--of", str(args.workers)]

    return _until_signal(run_supervised(
        settings, args.workers, argv_of, gateway=lambda: run_gateway(settings)
    ))

def add_parsers(sub: Any, run: argparse.ArgumentParser) -> None:
    """The two commands, and `run`'s --workers flag."""
    gw = sub.add_parser(
        "gateway", help="scale-out: the platform connections, events to the broker",
        description="Run the platform connections (as `kuuki run` does: Discord shards, "
        "Slack HTTP or Socket Mode) and hand every event to the broker, which takes it to "
        "the worker owning its channel. " + _BROKER,
    )
    gw.add_argument("--broker", metavar="URL", help="RabbitMQ URL (default: KUUKI_BROKER_URL)")
    gw.set_defaults(fn=cmd_gateway)
    wk = sub.add_parser(
        "worker", help="scale-out: the engine for the channels of some partitions",
        description="Run the engine for the channels whose partition queues this worker "
        "holds: its share (--index of --of) first, the others as a standby that takes over "
        "when a worker dies. " + _BROKER,
    )
    wk.add_argument("--index", type=int, default=0, metavar="K",
                    help="this worker's number, 0 to N-1 (default 0)")
    wk.add_argument("--of", type=int, default=1, metavar="N",
                    help="how many workers share the partitions (default 1)")
    wk.add_argument("--standby", type=float, default=2.0, metavar="S",
                    help="seconds before registering as a standby on the other workers' "
                    "partitions, so that each worker's own share goes to it (default 2)")
    wk.add_argument("--broker", metavar="URL", help="RabbitMQ URL (default: KUUKI_BROKER_URL)")
    wk.set_defaults(fn=cmd_worker)
    run.add_argument("--workers", type=int, metavar="N",
                     help="scale-out: a gateway here and N worker processes (needs "
                     "KUUKI_BROKER_URL and a PostgreSQL store)")

Command = Callable[[argparse.Namespace], int]
