"""Words for people: counts with the right plural, shared by every command's output."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 message`, `2 messages`, `1 reply`, `0 replies`; `many` for an irregular plural."""
    if n == 1:
        return f"1 {word}"
    if many is None:
        if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
            many = word[:-1] + "ies"
        elif word.endswith(("s", "x", "ch", "sh")):
            many = word + "es"
        else:
            many = word + "s"
    return f"{n} {many}"


ECHO_CHARS = 80


def echoed(text: str, limit: int = ECHO_CHARS) -> str:
    """Something the user typed (an id, a name) as a message shows it: at most ``limit``
    characters, then "…", so a 100,000-character argument is not printed back whole."""
    return text if len(text) <= limit else text[:limit] + "…"
