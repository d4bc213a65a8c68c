"""The output guard for what the bot is about to remember: summaries, facts, profiles.

A summary is read back into every later prompt and shown to operators, so junk there is
worse than junk in one reply. The same rules as for replies apply, adapted to notes:

    words        a note must say something ("-", "…", "n/a", a bare time stamp say nothing)
    placeholder  the prompt's example values ("the lasting story of the channel: …")
    echo         a stretch of the prompt's own instructions
    degenerate   the same phrase over and over
    repeated     a list whose items repeat ("purpose," seven times)
    language     a note in another language than the channel's
    length       a keyword that is a sentence, a note too short to mean anything

`MemoryCheck.problems` collects every problem of one write; any problem rejects the whole
write and memory stays as it was (the caller records why).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kuuki.guard.reply import degenerate
from kuuki.guard.scaffold import Scaffold, normalized, tokens
from kuuki.text.language import detect, dominant

MAX_KEYWORD_TOKENS = 6
_NOTHING = frozenset({"n a", "na", "none", "null", "nothing", "unknown", "な し", "不 明"})


@dataclass(slots=True)
class MemoryCheck:
    """One memory write under review."""

    scaffold: Scaffold
    language: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self, name: str, value: str, *, required: bool = True) -> str:
        """Check one note; returns it stripped (checked either way)."""
        value = value.strip()
        norm = normalized(value)
        # Letters or kana/kanji: a note of digits alone ("2022-01-05 10:02:00", a time the
        # model copied from the messages) says nothing either.
        if not norm or norm in _NOTHING or not any(ch.isalpha() for ch in value):
            if required or value:
                self.problems.append(f"{name}: says nothing (“{value[:30]}”)")
            return value
        for problem in (
            self.scaffold.placeholder(value),
            self.scaffold.copied(value),
            degenerate(value),
            self._language(value),
        ):
            if problem is not None:
                self.problems.append(f"{name}: {problem}")
                break
        return value

    def items(self, name: str, values: Iterable[str], *, keywords: bool = False) -> list[str]:
        """Check a list (topics, tags, keywords); returns its items stripped."""
        out = [v.strip() for v in values if isinstance(v, str)]
        seen: dict[str, int] = {}
        for v in out:
            key = normalized(v)
            seen[key] = seen.get(key, 0) + 1
            problem = self.scaffold.placeholder(v) or self.scaffold.copied(v)
            if problem is None and keywords and len(tokens(v)) > MAX_KEYWORD_TOKENS:
                problem = f"“{v[:30]}” is a sentence, not a keyword"
            if problem is not None:
                self.problems.append(f"{name}: {problem}")
                return out
        # One duplicate is a model being thorough (the fact store merges it); three of the
        # same, or a list that is mostly repeats, is a model in a loop.
        worst = max(seen.items(), key=lambda kv: kv[1], default=("", 0))
        if worst[1] >= 3 or (len(out) >= 4 and len(seen) * 2 <= len(out)):
            self.problems.append(f"{name}: “{worst[0][:30]}” repeated {worst[1]} times")
        return out

    def _language(self, value: str) -> str | None:
        lang = detect(value)
        if lang is None or lang == self.language:
            return None
        names = {"ja": "Japanese", "en": "English"}
        return f"written in {names[lang]} for a {names[self.language]} channel"

    def reason(self) -> str:
        return "; ".join(self.problems[:3])


def channel_language(texts: Sequence[str], default: str) -> str:
    """The language notes about these messages should be in."""
    return dominant(texts, default)
