"""The commands that look back: `kuuki replay`, `why`, `stats`, `dashboard` and `memory`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from kuuki.cli.common import settings_for
from kuuki.errors import KuukiError
from kuuki.settings.urls import path_or_url


def cmd_replay(args: argparse.Namespace) -> int:
    from kuuki.replay.cli import run_replay

    settings = settings_for(args, {"KUUKI_LLM": args.llm} if args.llm else None)
    return asyncio.run(
        run_replay(
            settings,
            Path(args.file),
            llm=args.llm or settings.llm.backend,
            dump_dir=Path(args.dump_prompts) if args.dump_prompts else None,
            store=args.store,
            skip_bad_lines=args.skip_bad_lines,
            check_expectations=args.check,
            shadow=args.shadow,
        )
    )


def cmd_why(args: argparse.Namespace) -> int:
    from kuuki.explain.why import run_why

    settings = settings_for(args)
    store = path_or_url(args.store) if args.store else None
    return asyncio.run(
        run_why(settings, args.message_id, args.channel, args.json, sys.stdout, store)
    )


def span(text: str) -> str:
    """`--since`'s value, checked by argparse (which names the flag when it is bad)."""
    from kuuki.explain.window import parse_span

    try:
        parse_span(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip().lower()


def cmd_stats(args: argparse.Namespace) -> int:
    from kuuki.clock import RealClock
    from kuuki.explain.stats_cli import run_stats
    from kuuki.explain.window import parse_span

    settings = settings_for(args)
    store = path_or_url(args.store) if args.store else None
    return asyncio.run(
        run_stats(settings, parse_span(args.since), args.since, args.channel, args.json,
                  sys.stdout, RealClock().now(), store)
    )


def cmd_memory(args: argparse.Namespace) -> int:
    from kuuki.memory.cli import (
        run_memory_forget,
        run_memory_list,
        run_memory_show,
        run_memory_unforget,
    )

    overrides = {"KUUKI_STORE_URL": path_or_url(args.store)} if args.store else None
    settings = settings_for(args, overrides)
    if args.what == "list":
        return asyncio.run(run_memory_list(settings, sys.stdout))
    if args.what == "show":
        if not args.user and not args.channel:
            raise KuukiError("kuuki memory show needs --user ID or --channel NAME")
        return asyncio.run(
            run_memory_show(settings, sys.stdout, user=args.user, channel=args.channel)
        )
    if args.what == "unforget":
        return asyncio.run(run_memory_unforget(settings, args.user, sys.stdout))
    return asyncio.run(run_memory_forget(settings, args.user, sys.stdout))


def cmd_dashboard(args: argparse.Namespace) -> int:
    from kuuki.ops.standalone import serve_store

    settings = settings_for(args)
    store = path_or_url(args.store) if args.store else None
    return asyncio.run(serve_store(settings, store, window=args.since, out=sys.stdout,
                                   host=args.host, port=args.port))
