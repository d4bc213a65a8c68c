"""The parsers of the commands that read a store for a person: `kuuki why`, `kuuki stats`
and `kuuki dashboard` (their functions live in kuuki.cli.inspect)."""

from __future__ import annotations

import argparse
from typing import Any

from kuuki.cli.args import given
from kuuki.cli.inspect import cmd_dashboard, cmd_stats, cmd_why, span

Subparsers = Any  # argparse's _SubParsersAction, private in typeshed's terms


def add_why(sub: Subparsers) -> None:
    why = sub.add_parser(
        "why", help="the message, decision, reply and trace behind a message (default: latest)"
    )
    why.add_argument(
        "message_id", nargs="?", metavar="MESSAGE_ID",
        type=given("a message's id, or leave MESSAGE_ID out for the latest decision"),
        help="the message's id (default: the latest decision)",
    )
    why.add_argument("--channel", metavar="ID", type=given("a channel's id"),
                     help="the latest decision in this channel")
    why.add_argument("--json", action="store_true", help="print the stored rows as JSON")
    reading_store(why)
    why.set_defaults(fn=cmd_why)


def reading_store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", metavar="PATH", type=given("a SQLite file or a database URL"),
        help="the SQLite file (or database URL) to read, e.g. one written by "
        "`kuuki replay --store` (default: the configured store)",
    )


def add_stats(sub: Subparsers) -> None:
    st = sub.add_parser(
        "stats",
        help="what the bot did over a window: messages, its replies and their share, asked "
        "or not, LLM calls and tokens per model, latency, guard, silences",
        description="Per channel and overall, from the store (read only): messages, the "
        "bot's replies, acks and reactions and its share of the messages, how many were "
        "asked, LLM calls, tokens and cost per model, the latency of its answers to "
        "messages that addressed it (p50/p95; the replies it gave after a deliberate wait "
        "are counted apart), guard rejections, fallbacks and silences for budget or quiet. "
        "DMs are a count. When the window holds nothing, it says where the store's data "
        "lies and which --since reaches it.",
    )
    st.add_argument(
        "--since", default="7d", type=span, metavar="SPAN",
        help="how far back: 30m, 12h, 7d (default), 2w or 1y",
    )
    st.add_argument("--channel", metavar="NAME", type=given("a channel's name or id"),
                    help="one channel, by name or id")
    st.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    reading_store(st)
    st.set_defaults(fn=cmd_stats)


def add_dashboard(sub: Subparsers) -> None:
    db = sub.add_parser(
        "dashboard",
        help="the operator page on a store, read-only, no bot or platform needed",
        description="Serve the operator dashboard (charts per hour or day, per channel, the "
        "latest decisions with their cards, a search) on a store, e.g. one written by "
        "`kuuki replay --store`, without running the bot. It only reads. On 127.0.0.1 by "
        "default; another host needs KUUKI_DASHBOARD_TOKEN (dashboard.token).",
    )
    reading_store(db)
    db.add_argument(
        "--since", default="7d", type=span, metavar="SPAN",
        help="the window the page opens on: 24h, 7d (default), 30d, 1y…",
    )
    db.add_argument("--host", help="address to listen on (default: dashboard.host, 127.0.0.1)")
    db.add_argument("--port", type=int, metavar="PORT",
                    help="port (0: a free one; default: dashboard.port, else 8766)")
    db.set_defaults(fn=cmd_dashboard)
