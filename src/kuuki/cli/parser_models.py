"""The `kuuki` parser's builders for the learned addressee and seat models:
`kuuki addressee FILE`, `kuuki eval addressee DIR...`, `kuuki train addressee|seat`."""

from __future__ import annotations

from typing import Any

from kuuki.cli.train import (
    cmd_addressee,
    cmd_eval_addressee,
    cmd_train_addressee,
    cmd_train_seat,
)
from kuuki.settings.data import shared_data

Subparsers = Any  # argparse's _SubParsersAction, private in typeshed's terms


def add_addressee(sub: Subparsers) -> None:
    ad = sub.add_parser(
        "addressee", help="who each message of a transcript is for (the learned model)",
        description="Read a transcript (JSON Lines, see the README) and print one JSON line "
        'per message: {"id", "to" (a participant\'s name or "room"), "p", "candidates"}. '
        "The persona (the setup line's bot, else the settings') is always a candidate. "
        "A bad line stops it with the file and line, as `kuuki replay` does.",
    )
    ad.add_argument("file", metavar="FILE", help="the transcript (.jsonl)")
    ad.add_argument(
        "--skip-bad-lines", action="store_true", help="report malformed lines and go on"
    )
    ad.set_defaults(fn=cmd_addressee)


def add_eval_addressee(esub: Subparsers) -> None:
    ea = esub.add_parser(
        "addressee", help="score the addressee model on labelled chats, beside baselines",
        description="Each DIR is an MRMP dialogues folder (or one split of it) or an IRC "
        "split folder (X.ascii.txt + X.annotation.txt). Prints the accuracy on messages with "
        "exactly one addressee beside the baselines and the count.",
    )
    ea.add_argument("dir", metavar="DIR", nargs="+", help="a folder of labelled chats")
    ea.add_argument("--json", action="store_true", help="one JSON object per folder")
    ea.add_argument("--seat", action="store_true",
                    help="also the seat model's AUC and a silent member's p (MRMP)")
    ea.add_argument("--speed", action="store_true",
                    help="instead, time both models per message on a 50-message buffer "
                    "over the folder's first chat")
    ea.set_defaults(fn=cmd_eval_addressee)


def add_train_models(tsub: Subparsers) -> None:
    data = shared_data()
    for what, fn, help_ in (
        ("addressee", cmd_train_addressee, "retrain the shipped addressee model"),
        ("seat", cmd_train_seat, "retrain the shipped seat model"),
    ):
        tp = tsub.add_parser(what, help=help_)
        tp.add_argument("--irc", default=str(data / "irc-disentanglement" / "train"),
                        metavar="DIR", help="IRC train split (default: %(default)s; '' for none)")
        tp.add_argument("--mrmp", default=str(data / "mrmp" / "dialogues" / "train"),
                        metavar="DIR", help="MRMP train split (default: %(default)s; '' for none)")
        tp.add_argument("--out", metavar="PATH",
                        help="weights file to write (default: the packaged one)")
        if what == "seat":
            tp.add_argument("--addressee", metavar="PATH",
                            help="the addressee weights to read (default: the packaged ones)")
        tp.set_defaults(fn=fn)
