"""Is a message addressed to the bot? Mention, reply to one of its messages, or a name call.

A name call is the name used as a vocative ("Kuu, what do you think?", "くうさん、これ見て",
"thanks Kuu!", "hey Kuu") or a question put to the bot by name ("くうも来る？"), not the
name used in reference ("I asked Kuu yesterday", "くうが言ってた"). Kana, kanji and latin
variants and the usual honorifics count.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..domain import Message

HONORIFICS_JA = ("さん", "ちゃん", "くん", "君", "様", "さま", "氏", "たん", "っち")
HONORIFICS_LATIN = ("san", "chan", "kun", "sama")
_GREETINGS = (
    "hey",
    "hi",
    "hello",
    "yo",
    "ok",
    "okay",
    "oh",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "good morning",
    "morning",
    "night",
    "good night",
    "sorry",
    "please",
    "dear",
    "so",
    "well",
    "ねえ",
    "ねぇ",
    "おい",
    "あの",
    "ありがとう",
    "おはよう",
    "こんにちは",
    "こんばんは",
    "やあ",
    "よう",
    "ども",
)
_VOCATIVE_AFTER = r"(?:\s*[,、，:：!！?？。.…~〜ー]|\s*$|\s+(?=[^\W\d_]))"
_KATA_START, _KATA_END = 0x30A1, 0x30F6


def to_hiragana(text: str) -> str:
    return "".join(
        chr(ord(ch) - 0x60) if _KATA_START <= ord(ch) <= _KATA_END else ch for ch in text
    )


def to_katakana(text: str) -> str:
    return "".join(chr(ord(ch) + 0x60) if 0x3041 <= ord(ch) <= 0x3096 else ch for ch in text)


def normalise(text: str) -> str:
    """NFKC (full-width latin → ASCII, half-width kana → full-width), lower-cased."""
    return unicodedata.normalize("NFKC", text).lower()


def name_variants(names: Iterable[str]) -> list[str]:
    """Every spelling a name call may use: kana swapped, with and without honorifics."""
    base: set[str] = set()
    for name in names:
        n = normalise(name).strip()
        if not n:
            continue
        base |= {n, to_hiragana(n), to_katakana(n)}
    out: set[str] = set(base)
    for n in base:
        for h in HONORIFICS_JA:
            out.add(n + h)
        if n.isascii():
            for h in HONORIFICS_LATIN:
                out |= {f"{n}-{h}", f"{n} {h}", f"{n}{h}"}
    # Longest first, so "kuu-san" wins over "kuu".
    return sorted(out, key=len, reverse=True)


@dataclass(frozen=True, slots=True)
class Addressing:
    kind: str  # "mention" | "reply" | "name" | ""
    detail: str = ""

    def __bool__(self) -> bool:
        return bool(self.kind)


class AddressDetector:
    """Detects the three ways of addressing the bot, for one persona."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = [normalise(n) for n in names if n.strip()]
        self._hira_names = [to_hiragana(n) for n in self.names]
        self._named: dict[str, bool] = {}
        variants = name_variants(names)
        alt = "|".join(re.escape(v) for v in variants) or r"(?!x)x"
        greet = "|".join(re.escape(g) for g in _GREETINGS)
        # A latin name must not be glued to other latin letters ("kuuki" is not "kuu").
        name = rf"(?<![a-z0-9])(?:@)?(?P<name>{alt})(?![a-z0-9])"
        self._start = re.compile(rf"^\s*(?:(?:{greet})[\s,、!！]*)?{name}{_VOCATIVE_AFTER}")
        self._end = re.compile(
            rf"(?:[,、，]|(?:^|\s)(?:{greet}))\s*{name}\s*[!！?？。.…~〜w笑]*\s*$"
        )
        self._at = re.compile(rf"@{name}")
        # "くうも来る？", "くうは何が好き？": a question that opens with the bot's name and a
        # topic particle asks the bot itself ("くうが言ってた" does not: no question).
        self._topic_question = re.compile(
            rf"^\s*{name}(?:も|は|って|ってさ)[^。\n]{{0,40}}[?？]\s*$"
        )
        self._mid_vocative = re.compile(rf"(?:^|[。.!！?？\n]\s*){name}\s*[,、，]")

    def detect(
        self, msg: Message, *, bot_user_ids: Iterable[str], bot_message_ids: Iterable[str] = ()
    ) -> Addressing:
        ids = set(bot_user_ids)
        lowered = {normalise(n) for n in self.names}
        for m in msg.mentions:
            if m in ids or normalise(m) in lowered:
                return Addressing("mention", m)
        if msg.reply_to is not None and msg.reply_to in set(bot_message_ids):
            return Addressing("reply", msg.reply_to)
        text = normalise(msg.text)
        patterns = (self._at, self._start, self._end, self._mid_vocative, self._topic_question)
        for pattern in patterns:
            hit = pattern.search(text)
            if hit:
                return Addressing("name", hit.group("name"))
        return Addressing("")

    def mentions_name(self, text: str) -> bool:
        """The name appears at all (call or reference): used for "bot not mentioned lately"."""
        # Asked for every message of a window on every message: remember the answers.
        hit = self._named.get(text)
        if hit is None:
            t = to_hiragana(normalise(text))
            hit = any(v in t for v in self._hira_names)
            if len(self._named) > 4096:
                self._named.clear()
            self._named[text] = hit
        return hit
