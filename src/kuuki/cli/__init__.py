"""The `kuuki` command (the console script is ``kuuki.cli:main``): parse, run one command,
and turn a `KuukiError` into one line on stderr and exit code 2.

A RecursionError or MemoryError that no reader turned into a `KuukiError` is one line and
exit code 2 as well: it comes from an input nested too deeply or too large to hold, and a
traceback thousands of lines long tells the user nothing (``-v`` logs it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from kuuki.cli.parser import build_parser
from kuuki.errors import KuukiError
from kuuki.text.secrets import redacting_handler

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Records are redacted before they are written: a library's log line or a traceback
    # may carry a secret the edges never saw (kuuki.text.secrets).
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        handlers=[redacting_handler()],
    )
    try:
        code: int = args.fn(args)
        return code
    except KuukiError as exc:
        print(f"kuuki: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (RecursionError, MemoryError) as exc:
        logging.getLogger("kuuki").debug("%s", type(exc).__name__, exc_info=exc)
        print(f"kuuki: {args.command} {_gave_up(exc)}", file=sys.stderr)
        return 2


def _gave_up(exc: RecursionError | MemoryError) -> str:
    if isinstance(exc, RecursionError):
        what = "something it read is nested too deeply to follow (RecursionError)"
    else:
        what = "something it read is too large to hold in memory (MemoryError)"
    return f"gave up: {what}; run with -v to see where"
