"""The `kuuki` command line: one small builder per command, called in the order `kuuki --help`
lists them; each command's function lives with its group (run, inspect, bench, train).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from kuuki.cli.args import given
from kuuki.cli.doctor import cmd_doctor
from kuuki.cli.inspect import cmd_memory, cmd_replay
from kuuki.cli.parser_bench import add_bench_quality, add_bench_speed
from kuuki.cli.parser_models import add_addressee, add_eval_addressee, add_train_models
from kuuki.cli.parser_reading import add_dashboard, add_stats, add_why
from kuuki.cli.run import cmd_chat, cmd_playground, cmd_run, cmd_version
from kuuki.cli.store import add_store_parser
from kuuki.cli.train import cmd_disentangle, cmd_eval, cmd_train, cmd_train_embeddings, data_dir
from kuuki.scale.cli import add_parsers
from kuuki.settings import llm_backends

Subparsers = Any  # argparse's _SubParsersAction, private in typeshed's terms


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kuuki",
        description="An LLM persona that reads the room in Discord and Slack group chats.",
        epilog="Settings come from the environment and kuuki.toml; see the README.",
    )
    p.add_argument("--config", metavar="PATH", help="kuuki.toml to read (default: ./kuuki.toml "
                   "if present, or $KUUKI_CONFIG)")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    backends = llm_backends()
    llm_help = (
        "LLM back-end: " + ", ".join(backends) + " (default: KUUKI_LLM or [llm] backend, "
        "else embedded); none turns generation and LLM judging off"
    )
    llm = (backends, llm_help)
    _add_version(sub)
    _add_chat(sub, *llm)
    _add_replay(sub, *llm)
    add_why(sub)
    add_stats(sub)
    add_dashboard(sub)
    add_bench_quality(add_bench_speed(sub))
    _add_run(sub)
    _add_doctor(sub)
    _add_playground(sub, *llm)
    _add_memory(sub)
    add_store_parser(sub)
    _add_training(sub)
    return p


def _add_version(sub: Subparsers) -> None:
    sub.add_parser("version", help="print the version").set_defaults(fn=cmd_version)


def _add_chat(sub: Subparsers, backends: Sequence[str], llm_help: str) -> None:
    chat = sub.add_parser("chat", help="a terminal room with the bot (no account needed)")
    chat.add_argument("--llm", choices=backends, metavar="NAME", help=llm_help)
    chat.set_defaults(fn=cmd_chat)


def _add_replay(sub: Subparsers, backends: Sequence[str], llm_help: str) -> None:
    rp = sub.add_parser(
        "replay",
        help="replay a transcript on a virtual clock; --check tests its expect lines",
        description="Replay a transcript (JSON Lines, see the README) through the bot on a "
        "virtual clock and print one JSON line per decision. With --check, evaluate the "
        "file's expect lines instead and exit 1 if any fails: a test for a persona and its "
        "thresholds.",
    )
    rp.add_argument("file", metavar="FILE", help="the transcript (.jsonl) to replay")
    rp.add_argument("--llm", choices=backends, metavar="NAME", help=llm_help)
    rp.add_argument(
        "--check", action="store_true",
        help="check the file's expect lines: print each failure with the decisions' reasons, "
        "exit 1 if any fails",
    )
    rp.add_argument("--dump-prompts", metavar="DIR", help="write every rendered prompt to DIR")
    rp.add_argument(
        "--store", metavar="PATH",
        help="keep the decisions in this SQLite file (or database URL) for `kuuki why`; "
        "default: a temporary store, deleted at the end",
    )
    rp.add_argument(
        "--skip-bad-lines", action="store_true", help="report malformed lines and go on"
    )
    rp.add_argument(
        "--shadow", action="store_true",
        help="shadow mode: decide (and with a model, write) every answer but post none; the "
        "lines show what the bot would have done, and only the file's own lines of the bot "
        "join the conversation",
    )
    rp.set_defaults(fn=cmd_replay)




def _add_run(sub: Subparsers) -> None:
    run = sub.add_parser(
        "run",
        help="run the bot on Discord and/or Slack",
        description="Run the bot on every platform whose tokens are set: DISCORD_TOKEN for "
        "Discord; SLACK_BOT_TOKEN and SLACK_APP_TOKEN for Slack (environment or kuuki.toml "
        "[discord]/[slack]). Stops with Ctrl-C. See the README for creating the bot.",
    )
    run.add_argument("--shard-count", metavar="N",
                     help="Discord gateway shards in all (the same in every process)")
    run.add_argument("--shard-ids", metavar="IDS",
                     help="the Discord shards this process runs, e.g. 0,1 (default: all)")
    run.add_argument("--slack-mode", choices=("socket", "http"),
                     help="Slack Socket Mode (default) or the HTTP Events API, signed with "
                     "SLACK_SIGNING_SECRET")
    run.add_argument("--host", help="address the Slack HTTP endpoint listens on "
                     "(default 0.0.0.0)")
    run.add_argument("--port", help="port of the Slack HTTP endpoint (default 3000)")
    run.add_argument(
        "--dashboard", nargs="?", type=int, const=-1, metavar="PORT",
        help="serve the operator server (Prometheus /metrics) beside the bot, on PORT "
        "(0: a free one; default: dashboard.port, else 8766), on 127.0.0.1 unless "
        "dashboard.host says otherwise, which then needs KUUKI_DASHBOARD_TOKEN",
    )
    run.add_argument(
        "--shadow", action="store_true",
        help="listen only, everywhere: decide (and with a model, write) every answer but post "
        "none; each decision is stored marked so, and `kuuki stats` and the dashboard show "
        "what the bot would have done beside what it did (KUUKI_SHADOW, channels.shadow)",
    )
    run.set_defaults(fn=cmd_run)
    add_parsers(sub, run)


def _add_doctor(sub: Subparsers) -> None:
    doc = sub.add_parser(
        "doctor", help="check a set-up: settings, tokens, platform logins, store, broker, model",
        description="Check what `kuuki run` needs, in its order: the settings, the tokens' "
        "shapes, a live login on each configured platform (Discord's MESSAGE CONTENT intent, "
        "Slack's scopes and Socket Mode), the store and its migrations, the broker when set, "
        "and the model (a tiny prompt, timed); with no model configured, the model servers "
        "on this machine (Ollama, llama.cpp, vLLM, LM Studio). One line per check, each "
        "problem with its fix; exit 0 only when all pass, else 1.",
    )
    doc.add_argument("--json", action="store_true", help="print one JSON object instead")
    doc.set_defaults(fn=cmd_doctor)


def _add_playground(sub: Subparsers, backends: Sequence[str], llm_help: str) -> None:
    pg = sub.add_parser("playground", help="a web page to try kuuki and see why it speaks")
    pg.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default: %(default)s, this machine only); the playground "
        "has no authentication, so any other address lets others in",
    )
    pg.add_argument("--port", type=int, default=8765, metavar="N",
                    help="port to listen on (default: %(default)s; 0 picks a free one)")
    pg.add_argument("--llm", choices=backends, metavar="NAME", help=llm_help)
    pg.add_argument(
        "--store", metavar="PATH",
        help="keep the room's messages and decisions in this SQLite file (or database URL) "
        "for `kuuki why`; default: a temporary store, deleted on exit",
    )
    pg.set_defaults(fn=cmd_playground)


def _add_memory(sub: Subparsers) -> None:
    mem = sub.add_parser("memory", help="what the bot remembers: list, show, forget, unforget")
    msub = mem.add_subparsers(dest="what", required=True, metavar="ACTION")
    ml = msub.add_parser("list", help="per channel, who and what is remembered")
    ms = msub.add_parser("show", help="everything remembered about a person or a channel")
    user, channel = given("a user's id"), given("a channel's name or id")
    ms.add_argument("--user", metavar="ID", type=user, help="the person's user id (or name)")
    ms.add_argument("--channel", metavar="NAME", type=channel, help="the channel's name or id")
    mf = msub.add_parser(
        "forget", help="erase a person's messages and what was learned from them, and learn "
        "nothing about them again (also in a running bot) until `unforget`")
    mf.add_argument("--user", required=True, metavar="ID", type=user,
                    help="the person's user id")
    mu = msub.add_parser("unforget", help="let the bot learn about a forgotten person again")
    mu.add_argument("--user", required=True, metavar="ID", type=user,
                    help="the person's user id")
    for mp in (ml, ms, mf, mu):
        mp.add_argument("--store", metavar="PATH", type=given("a SQLite file or a database URL"),
                        help="the SQLite file (or database URL) to read (default: configured)")
        mp.set_defaults(fn=cmd_memory)


def _add_training(sub: Subparsers) -> None:
    dt = sub.add_parser("disentangle", help="print reply links for an IRC log file")
    dt.add_argument("file", metavar="FILE", help="an IRC log (.ascii.txt or .annotation.txt)")
    dt.add_argument("--start", type=int, default=1000, metavar="N",
                    help="first line to link (earlier lines are context; default %(default)s)")
    dt.set_defaults(fn=cmd_disentangle)
    add_addressee(sub)

    ev = sub.add_parser("eval", help="evaluations")
    esub = ev.add_subparsers(dest="what", required=True, metavar="EVALUATION")
    ed = esub.add_parser("disentangle", help="score the disentangler on a split")
    ed.add_argument("dir", metavar="DIR", help="a split of the irc-disentanglement data")
    ed.set_defaults(fn=cmd_eval)
    add_eval_addressee(esub)

    tr = sub.add_parser("train", help="training commands")
    tsub = tr.add_subparsers(dest="what", required=True, metavar="MODEL")
    td = tsub.add_parser("disentangler", help="retrain the shipped disentangler")
    td.add_argument("--data", default=str(data_dir()), metavar="DIR",
                    help="the irc-disentanglement data (default: %(default)s)")
    td.add_argument("--out", metavar="FILE",
                    help="weights file to write (default: the packaged one)")
    td.set_defaults(fn=cmd_train)
    te = tsub.add_parser("embeddings", help="rebuild the static embedding table from USE v3")
    te.add_argument("--out", help="table file to write (default: the packaged one)")
    te.set_defaults(fn=cmd_train_embeddings)
    add_train_models(tsub)
