"""Text that leaves the bot: no mass pings, no role pings, nothing a platform would expand."""

from __future__ import annotations

import re

_ZWSP = "\u200b"
_MASS = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)
_DISCORD_ROLE = re.compile(r"<@&\d+>")
_SLACK_SPECIAL = re.compile(r"<!(everyone|here|channel|subteam\^[A-Z0-9]+)(\|[^>]*)?>")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
INCOMING_LIMIT = 20_000  # characters of an incoming text the engine keeps
CUT_MARK = " […]"  # what follows a text cut at INCOMING_LIMIT


def defuse_mentions(text: str) -> str:
    """Neutralise @everyone/@here/@channel and role or group pings in outgoing text."""
    text = _SLACK_SPECIAL.sub(lambda m: "@" + _ZWSP + m.group(1).split("^")[0], text)
    text = _DISCORD_ROLE.sub("@role", text)
    return _MASS.sub(lambda m: "@" + _ZWSP + m.group(1), text)


def clean_incoming(text: str, limit: int = INCOMING_LIMIT) -> str:
    """What the engine keeps of an incoming text: valid UTF-8, no control characters,
    bounded length (a 100,000-character paste is cut, with a marker, not refused)."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = _CONTROL.sub("", text)
    if len(text) > limit:
        text = text[:limit] + CUT_MARK
    return text


def split_text(text: str, limit: int) -> list[str]:
    """Split on paragraph, line, sentence, then word boundaries so every part fits `limit`."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for sep in ("\n\n", "\n", "。", ". ", "! ", "? ", "！", "？", "、", ", ", " "):
            at = window.rfind(sep)
            if at > limit // 3:
                cut = at + len(sep)
                break
        if cut <= 0:
            cut = limit
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts
