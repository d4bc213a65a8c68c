"""`kuuki …` commands. The only place where errors become messages for a person."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .errors import KuukiError
from .settings import LLM_BACKENDS, Settings, load_settings


def _settings(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Settings:
    return load_settings(path=getattr(args, "config", None), overrides=overrides)


def cmd_version(args: argparse.Namespace) -> int:
    print(f"kuuki {__version__}")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from .app import run_chat

    overrides = {"KUUKI_LLM": args.llm} if args.llm else None
    return asyncio.run(run_chat(_settings(args, overrides)))


def cmd_replay(args: argparse.Namespace) -> int:
    from .app import run_replay

    settings = _settings(args, {"KUUKI_LLM": args.llm} if args.llm else None)
    return asyncio.run(
        run_replay(
            settings,
            Path(args.file),
            llm=args.llm or settings.llm.backend,
            dump_dir=Path(args.dump_prompts) if args.dump_prompts else None,
            store_url=args.store,
            skip_bad_lines=args.skip_bad_lines,
        )
    )


def cmd_why(args: argparse.Namespace) -> int:
    from .app import run_why

    return asyncio.run(run_why(_settings(args), args.message_id, args.channel, args.json))


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    if args.what == "ingest":
        result = asyncio.run(bench.ingest(args.messages, args.channels, args.store))
    elif args.what == "disentangle":
        from .conversation.cli import run_bench

        run_bench(Path(args.data), sys.stdout)
        return 0
    elif args.what == "judge":
        from .judge.bench import run_bench_judge

        run_bench_judge(Path(args.dir), sys.stdout)
        return 0
    elif args.what == "facts":
        from .memory.bench import run_bench_facts

        run_bench_facts(sys.stdout)
        return 0
    else:
        raise KuukiError(f"unknown benchmark {args.what!r}")
    print(json.dumps(result), flush=True)
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    from .memory.cli import run_memory_forget, run_memory_show

    settings = _settings(args)
    if args.what == "show":
        return asyncio.run(run_memory_show(settings, args.user, sys.stdout))
    return asyncio.run(run_memory_forget(settings, args.user, sys.stdout))


def cmd_playground(args: argparse.Namespace) -> int:
    from .platforms.playground import serve_playground

    overrides = {"KUUKI_LLM": args.llm} if args.llm else None
    asyncio.run(serve_playground(_settings(args, overrides), host=args.host, port=args.port))
    return 0  # Ctrl-C ends uvicorn cleanly, then reaches main() as KeyboardInterrupt


def cmd_run(args: argparse.Namespace) -> int:
    from .app import run_platforms

    return asyncio.run(run_platforms(_settings(args)))


def cmd_disentangle(args: argparse.Namespace) -> int:
    from .conversation.cli import run_disentangle

    run_disentangle(Path(args.file), args.start, sys.stdout)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from .conversation.cli import run_eval

    run_eval(Path(args.dir), sys.stdout)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from .conversation.cli import run_train

    run_train(Path(args.data), Path(args.out) if args.out else _default_weights(), sys.stdout)
    return 0


def cmd_train_embeddings(args: argparse.Namespace) -> int:
    from .embed_distill import default_table_path, distill

    distill(Path(args.out) if args.out else default_table_path(), out=sys.stdout)
    return 0


def _default_weights() -> Path:
    from .conversation import model as _model

    return Path(_model.__file__).with_name(_model.WEIGHTS_FILE)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kuuki", description="An LLM persona that reads the room.")
    p.add_argument("--config", help="path to kuuki.toml (default: ./kuuki.toml if present)")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("version", help="print the version").set_defaults(fn=cmd_version)

    chat = sub.add_parser("chat", help="a terminal room with the bot (no account needed)")
    chat.add_argument("--llm", choices=LLM_BACKENDS, help="LLM back-end (default: settings)")
    chat.set_defaults(fn=cmd_chat)

    rp = sub.add_parser("replay", help="replay a transcript on a virtual clock")
    rp.add_argument("file")
    rp.add_argument("--llm", choices=("none", "stub", "embedded", "openai", "scripted"))
    rp.add_argument("--dump-prompts", metavar="DIR", help="write every rendered prompt to DIR")
    rp.add_argument("--store", help="store URL (default: a temporary SQLite file)")
    rp.add_argument(
        "--skip-bad-lines", action="store_true", help="report malformed lines and go on"
    )
    rp.set_defaults(fn=cmd_replay)

    why = sub.add_parser("why", help="print the trace of a decision (default: the latest)")
    why.add_argument("message_id", nargs="?")
    why.add_argument("--channel")
    why.add_argument("--json", action="store_true")
    why.set_defaults(fn=cmd_why)

    bench = sub.add_parser("bench", help="benchmarks (figures for docs/benchmarks.md)")
    bsub = bench.add_subparsers(dest="what", required=True)
    ing = bsub.add_parser("ingest", help="steps 1-7 with the LLM off on SQLite")
    ing.add_argument("--messages", type=int, default=10_000)
    ing.add_argument("--channels", type=int, default=100)
    ing.add_argument("--store", help="store URL (default: a temporary SQLite file)")
    ing.set_defaults(fn=cmd_bench)
    dis = bsub.add_parser("disentangle", help="online disentangling speed and quality (dev)")
    dis.add_argument("--data", default=str(_data_dir()))
    dis.set_defaults(fn=cmd_bench)

    jb = bsub.add_parser("judge", help="LLM calls per 100 ambient messages, local-stage latency")
    jb.add_argument("dir", help="transcripts (.jsonl) or IRC logs (.ascii.txt)")
    jb.set_defaults(fn=cmd_bench)
    fb = bsub.add_parser("facts", help="fact search over 10,000 facts in a channel")
    fb.set_defaults(fn=cmd_bench)

    run = sub.add_parser("run", help="run on Discord and/or Slack (tokens from env or kuuki.toml)")
    run.set_defaults(fn=cmd_run)

    pg = sub.add_parser("playground", help="a web page to try kuuki and see why it speaks")
    pg.add_argument("--host", default="127.0.0.1")
    pg.add_argument("--port", type=int, default=8765)
    pg.add_argument("--llm", choices=LLM_BACKENDS, help="LLM back-end (default: settings)")
    pg.set_defaults(fn=cmd_playground)

    mem = sub.add_parser("memory", help="what the bot remembers about a user")
    msub = mem.add_subparsers(dest="what", required=True)
    for name, text in (("show", "print it"), ("forget", "forget it")):
        mp = msub.add_parser(name, help=text)
        mp.add_argument("--user", required=True, help="the user's id")
        mp.set_defaults(fn=cmd_memory)

    dt = sub.add_parser("disentangle", help="print reply links for an IRC log file")
    dt.add_argument("file")
    dt.add_argument("--start", type=int, default=1000)
    dt.set_defaults(fn=cmd_disentangle)

    ev = sub.add_parser("eval", help="evaluations")
    esub = ev.add_subparsers(dest="what", required=True)
    ed = esub.add_parser("disentangle", help="score the disentangler on a split")
    ed.add_argument("dir")
    ed.set_defaults(fn=cmd_eval)

    tr = sub.add_parser("train", help="training commands")
    tsub = tr.add_subparsers(dest="what", required=True)
    td = tsub.add_parser("disentangler", help="reproduce the shipped disentangler weights")
    td.add_argument("--data", default=str(_data_dir()))
    td.add_argument("--out", help="weights file to write (default: the packaged one)")
    td.set_defaults(fn=cmd_train)
    te = tsub.add_parser("embeddings", help="reproduce the static embedding table from USE v3")
    te.add_argument("--out", help="table file to write (default: the packaged one)")
    te.set_defaults(fn=cmd_train_embeddings)
    return p


def _data_dir() -> Path:
    return Path("../shared/data/irc-disentanglement")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.fn(args)
        return code
    except KuukiError as exc:
        print(f"kuuki: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
