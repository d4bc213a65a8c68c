"""Words a message carries that its author did not write.

A Discord forward (``message_snapshots``) and a Slack share (an ``attachments[]`` entry
with ``is_share``) bring someone else's message into the channel. The bot must read it
("forward this to the bot and ask" is a question about that text), but it must not credit
the one who forwarded it with the words: a profile learns what a person talks about from
their own words. The adapters therefore append such content as a marked block::

    hello check that out!
    [shared message from lev]
    > this will be shared with a message

and `own_words` is what the author wrote themselves. The header is the same in every
language (the platforms' payloads are too); an LLM reading the channel sees who wrote
what.
"""

from __future__ import annotations

import re

FORWARDED = "forwarded"
SHARED = "shared"

_HEADER = re.compile(r"^\[(?:forwarded|shared) message(?: from [^\]\n]*)?\]$")
_MAX_AUTHOR = 80


def quote_block(kind: str, body: str, *, author: str | None = None) -> str:
    """The marked block for a forwarded or shared message (`kind`: FORWARDED or SHARED)."""
    who = " ".join((author or "").replace("]", ")").split())[:_MAX_AUTHOR]
    head = f"[{kind} message from {who}]" if who else f"[{kind} message]"
    lines = body.strip().splitlines() or [""]
    return "\n".join([head, *(f"> {line}".rstrip() for line in lines)])


def with_quotes(text: str, blocks: list[str]) -> str:
    """The author's text followed by the quoted blocks, one per line."""
    return "\n".join(part for part in (text, *blocks) if part)


def own_words(text: str) -> str:
    """`text` without the quoted blocks `quote_block` made: what its author wrote."""
    out: list[str] = []
    quoting = False
    for line in text.splitlines():
        if _HEADER.match(line):
            quoting = True
            continue
        if quoting and (line.startswith("> ") or line == ">"):
            continue
        quoting = False
        out.append(line)
    return "\n".join(out)
