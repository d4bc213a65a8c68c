"""`kuuki bench …`: one function per benchmark, each importing its module only when run
(the benchmarks live in kuuki.bench; a few of them run kuuki.testing's local servers)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kuuki.cli.common import settings_for
from kuuki.errors import KuukiError


def cmd_bench(args: argparse.Namespace) -> int:
    run = _BENCHES.get(args.what)
    if run is None:
        raise KuukiError(f"unknown benchmark {args.what!r}")
    return run(args)


def _ingest(args: argparse.Namespace) -> int:
    from kuuki.bench.ingest import ingest

    result = asyncio.run(ingest(args.messages, args.channels, args.store, window=args.window,
                                metrics=args.metrics))
    print(json.dumps(result), flush=True)
    return 0


def _soak(args: argparse.Namespace) -> int:
    from kuuki.bench.soak import soak

    result = asyncio.run(soak(args.messages, args.channels, sample_every=args.sample_every,
                              store_url=args.store))
    print(json.dumps(result), flush=True)
    return 0


def _crash(args: argparse.Namespace) -> int:
    from kuuki.bench.crash_runs import bench_runs

    platforms = ["discord", "slack"] if args.platform == "both" else [args.platform]
    return bench_runs(platforms, postgres=args.postgres, runs=args.runs, hogs=args.cpu_hogs,
                      out=sys.stdout, err=sys.stderr)


def _disentangle(args: argparse.Namespace) -> int:
    from kuuki.conversation.cli import run_bench

    run_bench(Path(args.data), sys.stdout)
    return 0


def _judge(args: argparse.Namespace) -> int:
    from kuuki.bench.judge import run_bench_judge

    run_bench_judge(Path(args.dir), sys.stdout, budget=args.budget, settled=True)
    return 0


def _facts(args: argparse.Namespace) -> int:
    from kuuki.bench.memory import run_bench_facts

    run_bench_facts(sys.stdout)
    return 0


def _reply(args: argparse.Namespace) -> int:
    from kuuki.bench.guard import bench_reply, print_report

    report = asyncio.run(bench_reply(settings_for(args), limit=args.limit, busy=args.busy))
    print_report(report, sys.stdout, details=args.details)
    return 0


def _tools(args: argparse.Namespace) -> int:
    from kuuki.app import make_llm
    from kuuki.bench.tools import bench_tools
    from kuuki.bench.tools import print_report as print_tools

    settings = settings_for(args, {"KUUKI_LLM": args.llm} if args.llm else None)
    llm = make_llm(settings.llm)
    if llm is None:
        raise KuukiError("bench tools needs a model (--llm embedded, openai, …)")
    report = asyncio.run(bench_tools(settings, llm))
    print_tools(report, sys.stdout, details=args.details)
    return 0


def _broker(args: argparse.Namespace) -> int:
    from kuuki.bench.broker import bench_broker

    engines = ("rabbitmq", "nats") if args.engine == "all" else (args.engine,)
    asyncio.run(bench_broker(args.messages, args.channels, args.amqp, args.nats, sys.stdout,
                             engines, rabbit_queue=args.rabbit_queue))
    return 0


def _repeats(args: argparse.Namespace) -> int:
    from kuuki.bench.repeats import main as repeats

    return repeats([args.data])


def _scenarios(args: argparse.Namespace) -> int:
    from kuuki.bench import scenarios as scenario_bench

    found = asyncio.run(scenario_bench.bench_scenarios(
        settings_for(args), [Path(d) for d in args.dirs], args.llm,
        judge_llm=args.judge_llm, judge_mode=args.judge_mode,
    ))
    scenario_bench.print_report(found, sys.stdout)
    return 0


def _scale(args: argparse.Namespace) -> int:
    from kuuki.bench.scale import bench_scale

    asyncio.run(bench_scale(args.amqp, args.postgres, messages=args.messages,
                            channels=args.channels, out=sys.stdout))
    return 0


def _secrets(args: argparse.Namespace) -> int:
    from kuuki.bench.secrets import print_report as print_secrets
    from kuuki.bench.secrets import probe

    return print_secrets(asyncio.run(probe(args.store)), sys.stdout, as_json=args.json)


def _redact(args: argparse.Namespace) -> int:
    from kuuki.bench.redact import bench_redact, print_report

    print_report(bench_redact(), sys.stdout, as_json=args.json)
    return 0


def add_redact_parser(bsub: Any) -> None:
    """`kuuki bench redact` (called by kuuki.cli.parser with the bench sub-parsers)."""
    red = bsub.add_parser(
        "redact", help="what the redaction step costs on a 2 kB error body (µs per call)",
        description="Time kuuki.text.secrets.redact on error bodies of about 2 kB (no "
        "secret, an unknown key, the configured key as written and JSON-escaped) and a "
        "traceback, with nine secrets registered; print the reference loop's time beside.",
    )
    red.add_argument("--json", action="store_true", help="print one JSON object")
    red.set_defaults(fn=cmd_bench)


def _seat(args: argparse.Namespace) -> int:
    from kuuki.bench.seat import bench_seat
    from kuuki.bench.seat import print_report as print_seat
    from kuuki.bench.seat_replay import Variant

    variant = Variant(shadow=not args.no_shadow, mentions=args.mentions,
                      strip_nick=args.strip_nick)
    result = asyncio.run(bench_seat(settings_for(args), Path(args.dir), args.gap or [],
                                    limit=args.limit, err=sys.stderr, variant=variant))
    print_seat(result, sys.stdout, as_json=args.json)
    return 0


def add_seat_parser(bsub: Any) -> None:
    """`kuuki bench seat`'s options (called by kuuki.cli.parser with the bench sub-parsers)."""
    seat = bsub.add_parser(
        "seat", help="the bot in a member's seat of real chats (MRMP three-person chats, or "
        "Ubuntu IRC logs): AUC of its score for messages to it vs to others, replies after "
        "each, and (MRMP) a silent fourth member's replies",
        description="Replay every MRMP dialogue of DIR with the bot in each member's seat "
        "(no model, no mentions: being addressed is inferred), then with a fourth member "
        "nobody addresses, and print the figures beside their targets. DIR may instead be "
        "an IRC split folder (X.ascii.txt + X.annotation.txt): each log is replayed with the "
        "bot in the seat of the participant others most answer. In shadow mode unless "
        "--no-shadow: the seat's real lines are the bot's, its own answers only recorded.",
    )
    seat.add_argument("dir", metavar="DIR",
                      help="MRMP dialogues (a split folder, e.g. dialogues/dev, or above) or "
                      "an IRC split folder")
    seat.add_argument("--no-shadow", action="store_true",
                      help="the bot's answers join the timeline (and the seat's real lines "
                      "stay in too), as before shadow mode")
    seat.add_argument("--mentions", action="store_true",
                      help="MRMP: pass each removed @name as a platform mention")
    seat.add_argument("--strip-nick", action="store_true",
                      help="IRC: remove a leading 'nick:' or 'nick,' from every line")
    seat.add_argument("--gap", type=_seconds, action="append", metavar="SECONDS",
                      help="seconds between two lines (default 15, a text chat's pace); "
                      "repeat for several, e.g. --gap 10 --gap 30")
    seat.add_argument("--limit", type=_whole, metavar="N", help="only the first N dialogues")
    seat.add_argument("--json", action="store_true", help="print one JSON object")
    seat.set_defaults(fn=cmd_bench)


def _seconds(raw: str) -> float:
    from kuuki.bench.seat import check_gap

    try:
        return check_gap(float(raw))
    except (ValueError, KuukiError) as exc:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not seconds between two lines (more than 0, at most 3600)") from exc


def _whole(raw: str) -> int:
    try:
        n = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {n}")
    return n


_BENCHES: dict[str, Callable[[argparse.Namespace], int]] = {
    "ingest": _ingest,
    "soak": _soak,
    "crash": _crash,
    "disentangle": _disentangle,
    "judge": _judge,
    "facts": _facts,
    "reply": _reply,
    "tools": _tools,
    "broker": _broker,
    "scenarios": _scenarios,
    "scale": _scale,
    "secrets": _secrets,
    "redact": _redact,
    "seat": _seat,
    "repeats": _repeats,
}
