"""The persona's area: its keywords (or a channel policy's own) found in a text.

One matcher per keyword list, built once: the local stage scores a message in the area
higher, and the stages that judge an open question again read the lines after a question
in the area more closely (kuuki.decide.not_an_answer).
"""

from __future__ import annotations

import re

from kuuki.decide.addressing.names import normalise


class Area:
    """Finds the keywords of a list in a text: ASCII ones as whole words, others anywhere."""

    def __init__(self, persona_keywords: tuple[str, ...]) -> None:
        self.persona = persona_keywords
        self._matchers: dict[tuple[str, ...], tuple[re.Pattern[str] | None, list[str]]] = {}

    def found(self, raw: str, keywords: tuple[str, ...] | None = None) -> list[str]:
        """The keywords of ``keywords`` (None: the persona's) in ``raw``."""
        text = normalise(raw)
        pattern, other = self._matcher(self.persona if keywords is None else keywords)
        found: list[str] = []
        if pattern is not None:
            found += sorted({m.group(1) for m in pattern.finditer(text)})
        found += [k for k in other if k in text]
        return found

    def _matcher(self, keywords: tuple[str, ...]) -> tuple[re.Pattern[str] | None, list[str]]:
        if keywords not in self._matchers:
            words = [k for k in keywords if k.strip()]
            ascii_kw = [re.escape(normalise(k)) for k in words if k.isascii()]
            pattern = (
                re.compile(r"(?<![a-z0-9])(" + "|".join(ascii_kw) + r")(?![a-z0-9])")
                if ascii_kw else None
            )
            self._matchers[keywords] = (pattern, [normalise(k) for k in words if not k.isascii()])
        return self._matchers[keywords]
