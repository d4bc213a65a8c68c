"""What a model must not hand back: the prompts' own words, their examples and format.

`Scaffold` is built from the prompt templates in effect (the packaged ones and a user's
copies, both languages) plus the rendered persona prompt. From the templates it keeps
their literal text (tags and variables removed): every line, for "this output contains a
heading or instruction of ours", the runs of words, for "this output copies a stretch
of the prompt", and the lead-ins of their sentences ("Based on the above, …"), for "this
output opens with the prompt's words" — a model echoes the last instruction it read.
The example values of the templates' answer formats (JSON) ("why", "the
recent flow of the channel…") are its placeholders, and the JSON keys of those formats
tell a schema echo. Because it is derived from the templates, a user's own wording is
guarded exactly like ours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

_TAG = re.compile(r"\{%-?.*?-?%\}|\{\{.*?\}\}|\{#.*?#\}", re.DOTALL)
# A value in an answer format's example: after a key's colon or inside a list.
_EXAMPLE_VALUE = re.compile(r"(?:\"\s*:\s*\[?|\[\s*|,\s*)\"([^\"\n]{2,200})\"(?!\s*:)")
_KEY = re.compile(r"\"([a-z_]{3,40})\"\s*:")
_WORD = re.compile(r"[a-z0-9']+")
_JA = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
_TOKEN = re.compile(r"[a-z0-9']+|[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")

WORD_RUN = 5  # this many words in a row shared with the scaffold is a copy
OPENER_WORDS = (4, 8)  # a sentence's lead-in of this many words, up to its first comma
JA_OPENER = 6  # likewise in Japanese characters, up to the first 、
JA_RUN = 10  # likewise in Japanese characters
PLACEHOLDER_RUN = 4  # words shared in a row with an example value
JA_PLACEHOLDER_RUN = 6

# Placeholders no template has to teach: fill-in-the-blank markers of any prompt.
_GENERIC_PLACEHOLDER = re.compile(
    r"\[(your|insert|name|message|reply|response|text|topic|user)[^\]]{0,40}\]"
    r"|<(your|insert|message|reply|response|text|name)[^>]{0,40}>"
    r"|\{\{?\s*[a-z_]+\s*\}?\}|\blorem ipsum\b|\byour (reply|response|message) here\b"
    r"|ここに[^。\n]{0,20}(入れ|書い|記入)|（[^）]{0,20}を入力）|\bTODO\b",
    re.IGNORECASE,
)
# A JSON schema's type names standing in for values ("topics": ["string"]).
_SCHEMA_WORDS = frozenset({"string", "boolean", "number", "integer", "object", "array", "null"})


class Sources(Protocol):
    """Where templates come from (kuuki.prompts.Prompts)."""

    def sources(self, language: str | None = None) -> dict[str, str]: ...


def tokens(text: str) -> list[str]:
    """Lower-case Latin words and single Japanese characters, in order."""
    return _TOKEN.findall(text.lower())


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ja_chars(text: str) -> str:
    """The Japanese characters of a text; anything else becomes a break ("|")."""
    return re.sub(r"[^\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]+", "|", text)


def _ngrams(seq: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


def _char_ngrams(text: str, n: int) -> set[str]:
    out: set[str] = set()
    for part in ja_chars(text).split("|"):
        out.update(part[i : i + n] for i in range(len(part) - n + 1))
    return out


def literal_text(source: str) -> str:
    """A template's own words: tags, variables and comments removed, markup kept."""
    return _TAG.sub("\n", source)


def normalized(text: str) -> str:
    return " ".join(tokens(text))


@dataclass(slots=True)
class Scaffold:
    lines: set[str] = field(default_factory=set)
    word_runs: set[tuple[str, ...]] = field(default_factory=set)
    char_runs: set[str] = field(default_factory=set)
    placeholders: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    openers: set[tuple[str, ...]] = field(default_factory=set)
    ja_openers: set[str] = field(default_factory=set)

    @classmethod
    def from_sources(
        cls, sources: Iterable[str], *, persona_prompts: Iterable[str] = ()
    ) -> Scaffold:
        sc = cls()
        for source in sources:
            for m in _EXAMPLE_VALUE.finditer(source):
                value = m.group(1).strip()
                if _TAG.search(value) or value.startswith(("{", "#")):
                    continue
                sc.placeholders.add(normalized(value))
            sc.keys.update(_KEY.findall(source))
            sc.add_text(literal_text(source))
            sc.add_openers(literal_text(source))
        for prompt in persona_prompts:
            sc.add_text(prompt)
        sc.placeholders.discard("")
        return sc

    @classmethod
    def from_prompts(cls, prompts: Sources, *, persona_prompts: Iterable[str] = ()) -> Scaffold:
        """From every template in effect, in both languages."""
        sources = [src for lang in ("ja", "en") for src in prompts.sources(lang).values()]
        return cls.from_sources(sources, persona_prompts=persona_prompts)

    def add_text(self, text: str) -> None:
        """Make `text` (an instruction, the persona prompt) part of what must not be copied."""
        for raw in re.split(r"[\n。]|(?<=[.!?])\s", text):
            norm = normalized(raw)
            w = words(raw)
            ja = len(_JA.findall(raw))
            if (len(w) >= 3 and len(norm) >= 12) or ja >= 6:
                self.lines.add(norm)
        self.word_runs |= _ngrams(words(text), WORD_RUN)
        self.char_runs |= _char_ngrams(text, JA_RUN)

    def add_openers(self, text: str) -> None:
        """The lead-ins of the instructions' sentences: the words before the first comma
        ("Based on the above", 「上記の情報をもとに」)."""
        for raw in re.split(r"[\n。]|(?<=[.!?])\s", text):
            m = re.match(r"([^,、]*)[,、]", raw.strip())
            if m is None:
                continue
            lead = m.group(1)
            w = words(lead)
            if OPENER_WORDS[0] <= len(w) <= OPENER_WORDS[1] and all(
                    any(c.isalpha() for c in x) for x in w):  # not "0.7-0.9"
                self.openers.add(tuple(w))
            elif not w and len(_JA.findall(lead)) >= JA_OPENER:
                self.ja_openers.add(lead.strip())

    # -- checks -----------------------------------------------------------------------------

    def opened(self, text: str) -> str | None:
        """Why `text` opens with a lead-in of the prompt's instructions, or None."""
        head = words(text)[: OPENER_WORDS[1]]
        for lead in self.openers:
            if tuple(head[: len(lead)]) == lead:
                return f"opens with the prompt's words “{' '.join(lead)}”"
        start = text.lstrip(" \t\n「『\"“")
        for ja in self.ja_openers:
            if start.startswith(ja):
                return f"opens with the prompt's words “{ja}”"
        return None

    def copied(self, text: str) -> str | None:
        """Why `text` reads as a copy of the prompt, or None."""
        norm = f" {normalized(text)} "
        for line in self.lines:
            if f" {line} " in norm:
                return f"repeats the prompt: “{_short(line)}”"
        run = _ngrams(words(text), WORD_RUN) & self.word_runs
        if run:
            return f"copies the prompt: “{_short(' '.join(next(iter(run))))}…”"
        chars = _char_ngrams(text, JA_RUN) & self.char_runs
        if chars:
            return f"copies the prompt: “{next(iter(chars))}…”"
        return None

    def placeholder(self, text: str) -> str | None:
        """Why `text` is an example value or a fill-in marker rather than content, or None."""
        generic = _GENERIC_PLACEHOLDER.search(text)
        if generic:
            return f"placeholder text “{generic.group(0)}”"
        norm = normalized(text)
        if not norm:
            return None
        if norm in _SCHEMA_WORDS:
            return f"a schema type name (“{norm}”) instead of a value"
        if norm in self.placeholders and (" " in norm or norm == "why"):
            # One-word examples are mostly enum values ("same", "changed"), which are fine
            # words in a message; "why" is the judge's reason example, never a reason.
            return f"the prompt's example value “{_short(norm)}”"
        # A stretch of an example that is most of the value (or long in itself): "the
        # recent flow of the channel: purpose," is the example; "盛り上がっている" in a
        # real summary only shares a phrase with one.
        mine = words(text)
        mine_ja = ja_chars(text).replace("|", "")
        for ph in self.placeholders:
            theirs = ph.split()
            if len(theirs) >= PLACEHOLDER_RUN and mine:
                run = longest_run(mine, [t for t in theirs if t.isascii()])
                if run >= PLACEHOLDER_RUN and (run >= 0.6 * len(mine) or run >= 7):
                    return f"the prompt's example value “{_short(ph)}”"
            if len(mine_ja) >= JA_PLACEHOLDER_RUN:
                run = longest_run(list(mine_ja), [t for t in theirs if not t.isascii()])
                if run >= JA_PLACEHOLDER_RUN and (run >= 0.6 * len(mine_ja) or run >= 12):
                    return f"the prompt's example value “{_short(ph)}”"
        return None

    def schema_echo(self, text: str) -> str | None:
        """Why `text` looks like an answer format (JSON, keys, fences), or None."""
        stripped = text.strip()
        if "```" in stripped:
            return "a code fence"
        if stripped and stripped[0] in "{[" and stripped[-1] in "}]":
            return "a JSON object instead of a message"
        for key in self.keys:
            if "_" in key and (f'"{key}"' in text or re.search(rf"(?m)^\s*{key}\s*:", text)):
                return f"the answer format's key “{key}”"
        if re.search(r'"[a-z_]+"\s*:\s*["\[{0-9tf]', text):
            return "JSON fields instead of a message"
        return None


def longest_run(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest stretch `a` and `b` share, in tokens."""
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
