"""Case-insensitive cue patterns, searched faster on ASCII text.

The judge and the disentangler test every message against a few ``re.IGNORECASE``
patterns of English words and Japanese phrases (the cues of a conversation's state,
thanks, good news, a question put to the room). Python's ``re`` pays for case folding
at every position; on ASCII text the same search is a case-sensitive one over the
lower-cased text — the same length, so the span maps back to the original — at about
half the cost (~1–2 µs a pattern on a chat line). Other text is searched as before.
"""

from __future__ import annotations

import re


class Folded:
    """``pattern`` (compiled with ``re.IGNORECASE``) with the same answers, faster."""

    __slots__ = ("_fast", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        if not pattern.flags & re.IGNORECASE or re.search(r"[A-Z]", pattern.pattern):
            # an upper-case letter in the source (\S, \W, a literal) would change meaning
            raise ValueError(f"not a lower-case IGNORECASE pattern: {pattern.pattern[:40]!r}")
        self.pattern = pattern
        self._fast = re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)

    def find(self, text: str) -> str | None:
        """The leftmost match, as written in ``text``, or None."""
        if text.isascii():
            m = self._fast.search(text.lower())
            return None if m is None else text[m.start() : m.end()]
        found = self.pattern.search(text)
        return None if found is None else found.group(0)

    def found_in(self, text: str) -> bool:
        if text.isascii():
            return self._fast.search(text.lower()) is not None
        return self.pattern.search(text) is not None
