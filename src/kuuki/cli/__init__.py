"""The `kuuki` command (the console script is ``kuuki.cli:main``): parse, run one command,
and turn a `KuukiError` into one line on stderr and exit code 2.
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
