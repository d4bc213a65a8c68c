"""argparse types for values the command line checks itself: a bad one is argparse's
usage line and ``error: argument NAME: …``, exit code 2, naming the argument."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kuuki.text.wording import echoed


def given(what: str) -> Callable[[str], str]:
    """An id or name as typed, refused when empty or blank: it matches nothing, so the
    command would answer about nothing (``why ''``: "no decision stored" of a store that
    holds some) or act on no one (``memory forget --user ''``: a tombstone for nobody).
    ``what`` ends the error."""
    def parse(raw: str) -> str:
        if not raw.strip():
            raise argparse.ArgumentTypeError(f"empty; give {what}")
        return raw

    return parse


def at_least(least: int) -> Callable[[str], int]:
    """A whole number, ``least`` or more."""
    def parse(raw: str) -> int:
        try:
            n = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{echoed(raw)!r} is not a whole number") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be {least} or more, not {n}")
        return n

    return parse
