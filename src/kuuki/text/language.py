"""Which language a text or a conversation is in: Japanese or English, cheaply and locally.

Counting scripts is enough for the two languages kuuki speaks: kana only occur in
Japanese, and a text whose letters are mostly Latin is English. Kanji alone (a name, 了解)
count as Japanese too. URLs, mentions, code and emoji are ignored, so "`pip install`
でいける？" is Japanese and "see https://例え.jp" is English.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LANGS = ("ja", "en")

_KANA = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\uff66-\uff9f]")
_KANJI = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_NOISE = re.compile(r"https?://\S+|<[@#!&][^>]*>|`[^`]*`|@[\w.-]+|:[a-z0-9_+-]+:")


@dataclass(frozen=True, slots=True)
class Script:
    """Letter counts of one text, by script."""

    kana: int
    kanji: int
    latin: int

    @property
    def japanese(self) -> int:
        return self.kana + self.kanji

    @property
    def letters(self) -> int:
        return self.kana + self.kanji + self.latin


def script(text: str) -> Script:
    text = _NOISE.sub(" ", text)
    return Script(
        len(_KANA.findall(text)), len(_KANJI.findall(text)), len(_LATIN.findall(text))
    )


def detect(text: str) -> str | None:
    """"ja", "en", or None when the text has too few letters to tell (an emoji, "ok?")."""
    s = script(text)
    if s.kana >= 1 and s.japanese * 3 >= s.latin:
        return "ja"
    if s.japanese >= 2 and s.japanese * 2 >= s.latin:
        return "ja"
    if s.latin >= 3 and s.japanese == 0:
        return "en"
    if s.latin >= 6 and s.latin > s.japanese * 4:
        return "en"
    return None


def dominant(texts: Iterable[str], default: str) -> str:
    """The language of a conversation: the newest texts weigh most; ``default`` if none tell.

    ``texts`` is oldest first. The newest text that can be told decides unless the texts
    before it clearly disagree (a one-word English aside in a Japanese conversation).
    """
    votes: list[str] = [lang for t in texts if (lang := detect(t)) is not None]
    if not votes:
        return default
    recent = votes[-5:]
    weight = {lang: 0.0 for lang in LANGS}
    for i, lang in enumerate(recent):
        weight[lang] += 1.0 + i  # newer counts more
    return max(LANGS, key=lambda lang: (weight[lang], lang == recent[-1]))


def hint(text: str) -> str | None:
    """A weak guess for texts too short to tell: any kana or kanji is Japanese, any Latin
    letter (and nothing Japanese) English. "hi", "ok" are English; "👍" is nothing."""
    s = script(text)
    if s.japanese:
        return "ja"
    return "en" if s.latin else None


def conversation_language(
    trigger: str | None, conversation: Sequence[str], default: str
) -> str:
    """The language to answer in: the trigger's own, else the conversation's, else what
    the trigger hints at ("@Kuu hi" alone is English), else ``default``."""
    if trigger is not None:
        lang = detect(trigger)
        if lang is not None:
            return lang
    votes = [lang for t in conversation if (lang := detect(t)) is not None]
    if votes:
        return dominant(conversation, default)
    weak = hint(trigger) if trigger is not None else None
    return weak or default
