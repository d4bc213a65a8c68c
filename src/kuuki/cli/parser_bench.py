"""The `kuuki bench` parser: one builder per benchmark, speed first (ingest, scale, soak,
crash, disentangle, broker, redact), then quality (scenarios, judge, seat, memory...).
"""

from __future__ import annotations

from typing import Any

from kuuki.cli.args import at_least
from kuuki.cli.bench import add_redact_parser, add_seat_parser, cmd_bench
from kuuki.cli.train import data_dir

Subparsers = Any  # argparse's _SubParsersAction, private in typeshed's terms


def add_bench_speed(sub: Subparsers) -> Subparsers:
    bench = sub.add_parser("bench", help="benchmarks (figures for docs/benchmarks.md)")
    bsub = bench.add_subparsers(dest="what", required=True, metavar="BENCHMARK")
    _add_bench_ingest(bsub)
    _add_bench_scale(bsub)
    _add_bench_soak(bsub)
    _add_bench_crash(bsub)
    _add_bench_disentangle(bsub)
    _add_bench_broker(bsub)
    _add_bench_secrets(bsub)
    add_redact_parser(bsub)
    return bsub


def _add_bench_ingest(bsub: Subparsers) -> None:
    ing = bsub.add_parser("ingest", help="steps 0-7 with the LLM off on SQLite, durable acks")
    ing.add_argument("--messages", type=int, default=10_000, metavar="N",
                     help="messages to send (default 10000)")
    ing.add_argument("--channels", type=int, default=100, metavar="N",
                     help="channels they are spread over (default 100)")
    ing.add_argument("--store", metavar="URL", help="store URL (default: a temporary SQLite file)")
    ing.add_argument("--window", type=int, default=256, metavar="N",
                     help="messages handed over but not yet acknowledged, at most, as a platform "
                     "delivers them (default 256; 1: one at a time)")
    ing.add_argument("--metrics", action="store_true",
                     help="count the Prometheus metrics and serve them, as kuuki run "
                     "--dashboard does (their cost)")
    ing.set_defaults(fn=cmd_bench)


def _add_bench_scale(bsub: Subparsers) -> None:
    sc = bsub.add_parser(
        "scale", help="scale-out: msg/s through gateway → broker → workers → store, 1 vs 2",
        description="Publish the ingest benchmark's synthetic chat to RabbitMQ as a gateway "
        "does, then time 1 and then 2 worker processes (no model) until the store has every "
        "event handled. Each run makes its own PostgreSQL database (the role needs CREATEDB) "
        "and RabbitMQ virtual host (rabbitmqctl, so the broker runs on this machine).",
    )
    sc.add_argument("--messages", type=int, default=10_000, metavar="N",
                    help="synthetic messages per run (default 10000)")
    sc.add_argument("--channels", type=int, default=200, metavar="N",
                    help="channels they are spread over (default 200)")
    sc.add_argument("--amqp", default="amqp://guest:guest@127.0.0.1:5672/", metavar="URL",
                    help="RabbitMQ (default: %(default)s)")
    sc.add_argument("--postgres", required=True, metavar="URL",
                    help="a PostgreSQL server and role with CREATEDB")
    sc.set_defaults(fn=cmd_bench)


def _add_bench_soak(bsub: Subparsers) -> None:
    soak = bsub.add_parser("soak", help="memory over a long stream in many channels, then idle")
    soak.add_argument("--messages", type=int, default=200_000, metavar="N",
                      help="messages to send (default 200000)")
    soak.add_argument("--channels", type=int, default=2_000, metavar="N",
                      help="channels they are spread over, round-robin (default 2000)")
    soak.add_argument("--sample-every", type=int, default=10_000, metavar="N",
                      help="messages between two readings of the resident set (default 10000)")
    soak.add_argument("--store", metavar="URL", help="store URL (default: a temporary SQLite file)")
    soak.set_defaults(fn=cmd_bench)


def _add_bench_crash(bsub: Subparsers) -> None:
    crash = bsub.add_parser("crash", help="kill -9 (and a stopped PostgreSQL) mid-stream "
                            "through the local Discord and Slack servers: what was kept")
    crash.add_argument("--platform", choices=("discord", "slack", "both"), default="both",
                       help="which local platform server (default both)")
    crash.add_argument("--postgres", action="store_true",
                       help="also stop a private PostgreSQL cluster for 6 s mid-stream (needs "
                       "PostgreSQL's server binaries and root, as .ci/postgres.sh)")
    crash.add_argument("--runs", type=at_least(1), default=1, metavar="N",
                       help="run all the selected cases N times in a row (default 1)")
    crash.add_argument("--cpu-hogs", type=at_least(0), default=0, metavar="N",
                       help="N CPU-bound processes beside the cases, from before the first to "
                       "after the last: a slower machine (default 0)")
    crash.set_defaults(fn=cmd_bench)


def _add_bench_disentangle(bsub: Subparsers) -> None:
    dis = bsub.add_parser("disentangle", help="online disentangling speed and quality (dev)")
    dis.add_argument("--data", default=str(data_dir()), metavar="DIR",
                     help="the irc-disentanglement data (default: %(default)s)")
    dis.set_defaults(fn=cmd_bench)


def _add_bench_broker(bsub: Subparsers) -> None:
    brk = bsub.add_parser(
        "broker", help="scale-out brokers (RabbitMQ, NATS JetStream): confirmed publishes, "
        "ordered delivery to 1 and 2 consumers, and a consumer killed mid-stream"
    )
    brk.add_argument("--messages", type=int, default=20_000, metavar="N",
                     help="messages per case (default 20000)")
    brk.add_argument("--channels", type=int, default=200, metavar="N",
                     help="channel ids they are keyed by (default 200)")
    brk.add_argument("--amqp", metavar="URL",
                     help="RabbitMQ (default: amqp://guest:guest@127.0.0.1:5672/)")
    brk.add_argument("--nats", metavar="URL",
                     help="NATS with JetStream (default: nats://127.0.0.1:4222)")
    brk.add_argument("--engine", choices=("all", "rabbitmq", "nats"), default="all",
                     help="which engines (default all; an unreachable one is skipped)")
    brk.add_argument("--rabbit-queue", choices=("quorum", "classic"), default="quorum",
                     help="RabbitMQ queue type behind the exchange (default quorum)")
    brk.set_defaults(fn=cmd_bench)


def _add_bench_secrets(bsub: Subparsers) -> None:
    sec = bsub.add_parser(
        "secrets", help="where each configured secret was found after a chat against "
        "servers that echo credentials (exit 1 if anywhere)",
        description="Run the bot in the playground against local servers that echo every "
        "credential they get, then count each configured secret in every log record, every "
        "row of every table, `kuuki why` and the playground's screens.",
    )
    sec.add_argument("--store", metavar="URL", help="an empty store (default: a temporary "
                     "SQLite file); every row of every table in it is read")
    sec.add_argument("--json", action="store_true", help="print one JSON object")
    sec.set_defaults(fn=cmd_bench)


def add_bench_quality(bsub: Subparsers) -> None:
    jb = bsub.add_parser(
        "judge", help="LLM calls per 100 ambient messages, local-stage latency, and (IRC logs "
        "with gold links) replies to already-answered messages and unanswered questions "
        "picked up"
    )
    jb.add_argument("dir", metavar="DIR", help="transcripts (.jsonl) or IRC logs (.ascii.txt)")
    jb.add_argument("--budget", type=int, default=0, metavar="N",
                    help="per-channel LLM call budget (default 0: off, to measure the judge "
                    "itself)")
    jb.set_defaults(fn=cmd_bench)
    fb = bsub.add_parser("facts", help="fact search over 10,000 facts in a channel")
    fb.set_defaults(fn=cmd_bench)
    rb = bsub.add_parser(
        "reply", help="40 addressed messages (ja/en) through the configured model: latency, "
        "real replies vs fallbacks, posted texts the guard would reject"
    )
    rb.add_argument("--limit", type=int, help="only the first N messages")
    rb.add_argument("--details", action="store_true", help="every message, reply and verdict")
    rb.add_argument("--busy", action="store_true",
                    help="each message arrives while a memory call (a summary) runs on the model")
    rb.set_defaults(fn=cmd_bench)
    tb = bsub.add_parser(
        "tools", help="24 messages: does the model choose the sensible tool (or none)?"
    )
    tb.add_argument("--llm", help="back-end (default: the setting)")
    tb.add_argument("--details", action="store_true", help="every message and its choice")
    tb.set_defaults(fn=cmd_bench)
    sb = bsub.add_parser(
        "scenarios", help="replay transcripts with a back-end and count the expect lines that "
        "hold (compare --llm none with a model)"
    )
    sb.add_argument("dirs", nargs="+", metavar="DIR", help="directories of .jsonl transcripts")
    sb.add_argument("--llm", default="none", help="back-end for judging and replies "
                    "(default none: the local stage alone)")
    sb.add_argument("--judge-llm", help="another back-end for the judge only (e.g. the judge "
                    "on a model with generation off: --llm none --judge-llm embedded)")
    sb.add_argument("--judge-mode", choices=("auto", "hybrid", "llm", "rules"),
                    help="judge mode for this run (default: the setting, auto)")
    sb.set_defaults(fn=cmd_bench)
    rp = bsub.add_parser(
        "repeats", help="a question sent twice in other words: paraphrase pairs caught, "
        "near-misses and dev-split messages folded, per threshold of the swapped words")
    rp.add_argument("data", nargs="?", default="../shared/data", metavar="DATA",
                    help="the corpora folder (irc-disentanglement/dev, mrmp/dialogues/dev; "
                    "default ../shared/data)")
    rp.set_defaults(fn=cmd_bench)
    add_seat_parser(bsub)
