"""The commands that run the bot: `kuuki version`, `chat`, `playground` and `run`."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys

from kuuki import __version__
from kuuki.cli.common import settings_for
from kuuki.settings import Settings
from kuuki.settings.urls import path_or_url


def cmd_version(args: argparse.Namespace) -> int:
    print(f"kuuki {__version__}")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from kuuki.run import run_chat

    overrides = {"KUUKI_LLM": args.llm} if args.llm else None
    return asyncio.run(run_chat(settings_for(args, overrides)))


def cmd_playground(args: argparse.Namespace) -> int:
    from kuuki.platforms.playground import serve_playground

    overrides = {"KUUKI_LLM": args.llm} if args.llm else None
    settings = settings_for(args, overrides)
    if not _loopback(args.host):
        print(
            f"kuuki: warning: the playground has no authentication; on {args.host} anyone who "
            "can reach this machine can read and write its chat, memory and prompts",
            file=sys.stderr,
            flush=True,
        )
    store = path_or_url(args.store) if args.store else None
    if store is None:
        print(
            "kuuki: the playground keeps its decisions in a temporary store; "
            "start it with --store PATH to keep them for `kuuki why`",
            file=sys.stderr,
            flush=True,
        )
    asyncio.run(serve_playground(settings, host=args.host, port=args.port, store_url=store))
    return 0  # Ctrl-C ends uvicorn cleanly, then reaches main() as KeyboardInterrupt


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def cmd_run(args: argparse.Namespace) -> int:
    from kuuki.run import run_platforms

    flags = {
        "KUUKI_DISCORD_SHARD_COUNT": args.shard_count,
        "KUUKI_DISCORD_SHARD_IDS": args.shard_ids,
        "KUUKI_SLACK_MODE": args.slack_mode,
        "KUUKI_SLACK_HOST": args.host,
        "KUUKI_SLACK_PORT": args.port,
        "KUUKI_SHADOW": "true" if args.shadow else None,
    }
    overrides = {name: str(v) for name, v in flags.items() if v is not None}
    settings = settings_for(args, overrides)
    if args.workers:
        from kuuki.scale.cli import run_with_workers

        if args.dashboard is not None or settings.dashboard_port:
            from kuuki.errors import KuukiError

            raise KuukiError("the operator server (--dashboard, dashboard.port) runs beside "
                             "one process: not with --workers (yet)")

        return run_with_workers(args, settings)
    return asyncio.run(run_platforms(settings, dashboard=_dashboard_port(args, settings)))


def _dashboard_port(args: argparse.Namespace, settings: Settings) -> int | None:
    """`--dashboard [PORT]`: the port asked for, else the setting's, else the default."""
    if args.dashboard is None:
        return None
    if args.dashboard >= 0:
        return int(args.dashboard)
    from kuuki.ops.server import DEFAULT_PORT

    return settings.dashboard_port or DEFAULT_PORT
