"""What the addressee and seat models read from one turn and from a name in it.

Everything here is string work on what a member of the chat sees. A turn's cues are
computed once and kept in a small cache keyed by the turn object (a live channel asks about
the same turns on every message), and so is where each participant's name occurs in it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from kuuki.conversation.cues import is_greeting, is_question, is_thanks
from kuuki.decide.addressing.names import normalise, to_hiragana
from kuuki.decide.models.turns import Turn

_HONORIFICS = (
    "さん", "ちゃん", "くん", "君", "様", "さま", "氏", "たん", "っち", "先輩", "せんぱい",
    "-san", "-chan", "-kun", " san",
)
_GREETING_WORDS = (
    "hey", "hi", "hello", "yo", "ok", "okay", "oh", "thanks", "thank you", "thx", "ty",
    "morning", "sorry", "well", "so", "and", "but", "ねえ", "ねぇ", "おい", "あの", "ありがとう",
    "ありがとうございます", "おはよう", "こんにちは", "こんばんは", "やあ", "なるほど", "あと",
    "でも", "じゃあ", "そういえば",
)
_SEP = " :,，、：!！?？。.~〜ー>;"
_TRAIL = " !！?？。.…~〜w笑ｗー)）"
# after a name: talk about the person ("ねぎとろさんが言ってた"); は/も/って are not among
# them, as they often put a question or suggestion to the person ("ねぎとろさんもどうですか？")
_PARTICLES = ("が", "を", "に", "と", "の", "へ", "から", "より", "で")
_ANSWER_RE = re.compile(
    r"^\s*(yes|yeah|yep|yup|no|nope|nah|sure|right|correct|exactly|indeed|ok|okay|it is|"
    r"it's|i did|i do|i have|i am|i'm|not really|"
    r"はい|いいえ|いや|うん|ううん|ええ|そうです|そうなんです|そうですね|そう|そうそう|"
    r"確かに|たしかに|なるほど|ですね|ありますね|ないです|ありません|してます|してない)",
    re.IGNORECASE,
)
_YOU_RE = re.compile(
    r"\b(you|your|yours|you're|youre|u|ur)\b|あなた|貴方|君は|きみは|お前|おまえ|そちら|"
    r"さんは|さんも|さんの|ちゃんは|くんは",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"\w+")
# Japanese register: polite (です/ます) or casual (plain endings). Family and friends speak
# casually to each other and politely to a stranger, so who is spoken to shows in it.
_POLITE_RE = re.compile(r"(です|ます|でした|ません|ください|でしょう)")
_CASUAL_END_RE = re.compile(
    r"(よね|よな|じゃん|だよ|だね|かな|っけ|でしょ|だろ|よ|ね|の|わ|ぞ|さ|な|だ|る|た|ない|って|けど|し|か)"
    r"[\s!！?？。、…~〜ー笑wｗ)）]*$")
# a run of letters in a script without spaces: not ASCII, and what str.isalnum calls a
# letter or digit (a word character of re, the underscore aside); and one of hiragana
_RUN_RE = re.compile(r"[^\W_\x00-\x7f]+")
_HIRAGANA_RE = re.compile("[\u3041-\u309f]+")

# name positions (a bit each)
ANY, START, END, HONORIFIC, MID, PARTICLE, LEAD = 1, 2, 4, 8, 16, 32, 64


@dataclass(frozen=True, slots=True)
class TurnCues:
    folded: str  # NFKC, lower case, katakana as hiragana: where names are looked for
    question: bool
    greeting: bool
    thanks: bool
    answer: bool
    you: bool
    length: float  # log(1 + characters)
    short: bool  # a short remark: <= 12 characters (ja) / <= 3 words (en)
    grams: frozenset[str]  # content: English words of 4+ letters, Japanese bigrams (not kana)
    polite: bool = False  # Japanese polite register (です/ます…)
    casual: bool = False  # Japanese plain register (…よね, …だよ, …じゃん)


def is_short(text: str) -> bool:
    """A short remark or aizuchi: at most 3 words of ASCII text, else at most 12 characters."""
    t = text.strip()
    if t.isascii():
        return len(_WORD_RE.findall(t)) <= 3
    return len(t) <= 12


def _cues(turn: Turn) -> TurnCues:
    text = turn.text
    return TurnCues(
        folded=to_hiragana(normalise(text)),
        question=is_question(text),
        greeting=is_greeting(text),
        thanks=is_thanks(text),
        answer=_ANSWER_RE.search(text) is not None,
        you=_YOU_RE.search(text) is not None,
        length=math.log1p(len(text)),
        short=is_short(text),
        grams=content_grams(text),
        polite=(polite := _POLITE_RE.search(text) is not None),
        casual=not polite and not text.isascii() and _CASUAL_END_RE.search(text.strip())
        is not None,
    )


def content_grams(text: str) -> frozenset[str]:
    """English words of 4+ letters and Japanese character bigrams not made of hiragana only
    (``英語``, ``観葉``): a bag for "this message takes up what that one said"."""
    t = normalise(text)
    out = {w for w in _WORD_RE.findall(t) if len(w) > 3 and w.isascii()}
    for run in _RUN_RE.findall(t):  # the pairs of a run, less those of its hiragana
        pairs = _pairs(run)
        for kana in _HIRAGANA_RE.findall(run):
            pairs -= _pairs(kana)
        out |= pairs
    return frozenset(out)


def _pairs(s: str) -> set[str]:
    return {s[k:k + 2] for k in range(len(s) - 1)}


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared content of two bags, 0 to 1 (cosine of the sets)."""
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


class CueCache:
    """Cues of turns and name positions, kept per turn object (bounded: a full cache drops
    its oldest quarter, the turns that left every channel's window first)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        # per turn: its cues, and where each participant's names occur in it (key -> bits)
        self._cues: dict[int, tuple[Turn, TurnCues, dict[str, int]]] = {}
        self._variants: dict[tuple[str, ...], tuple[str, ...]] = {}
        # per turn, for one names mapping: every participant it names (key -> bits)
        self._found: dict[int, tuple[Turn, Mapping[str, Sequence[str]], dict[str, int]]] = {}
        self._index: dict[int, tuple[Mapping[str, Sequence[str]], list[tuple[str, list[str]]]]]
        self._index = {}
        self.last_context: object = None  # kuuki.decide.models.features.context's one slot

    def cues(self, turn: Turn) -> TurnCues:
        hit = self._cues.get(id(turn))
        if hit is not None and hit[0] is turn:
            return hit[1]
        if len(self._cues) >= self._size:
            for old in list(islice(self._cues, max(1, self._size // 4))):
                del self._cues[old]
                self._found.pop(old, None)
        c = _cues(turn)
        self._cues[id(turn)] = (turn, c, {})
        return c

    def window(self, turns: Sequence[Turn], start: int, stop: int) -> list[TurnCues]:
        """``cues`` of ``turns[start:stop]``, in order (the lookups inline: a window is
        read on every message)."""
        kept, out = self._cues, []
        for j in range(start, stop):  # (an augmented chat cannot be sliced)
            turn = turns[j]
            hit = kept.get(id(turn))
            out.append(hit[1] if hit is not None and hit[0] is turn else self.cues(turn))
        return out

    def variants(self, names: Sequence[str]) -> tuple[str, ...]:
        key = tuple(names)
        hit = self._variants.get(key)
        if hit is None:
            hit = name_forms(names)
            if len(self._variants) >= self._size:
                self._variants.clear()
            self._variants[key] = hit
        return hit

    def named_in(self, turn: Turn, names: Mapping[str, Sequence[str]]) -> dict[str, int]:
        """Every key of ``names`` whose names occur in ``turn``, with where (in the order of
        ``names``). One substring test per distinct spelling: a channel of a hundred people
        costs microseconds. Kept per turn while ``names`` is the same mapping object."""
        text = self.cues(turn).folded
        hit = self._found.get(id(turn))
        if hit is not None and hit[0] is turn and hit[1] is names:
            return hit[2]
        found: dict[str, int] = {}
        for form, keys in self._forms(names):
            if form in text:
                for k in keys:
                    if k not in found:
                        bits = self.named(turn, k, names)
                        if bits:  # (0: only inside a longer word)
                            found[k] = bits
        if len(found) > 1:
            found = {k: found[k] for k in names if k in found}
        self._found[id(turn)] = (turn, names, found)
        return found

    def _forms(self, names: Mapping[str, Sequence[str]]) -> list[tuple[str, list[str]]]:
        hit = self._index.get(id(names))
        if hit is not None and hit[0] is names:
            return hit[1]
        by_form: dict[str, list[str]] = {}
        for k, ns in names.items():
            for form in self.variants(ns or (k,)):
                by_form.setdefault(form, []).append(k)
        if len(self._index) >= 64:
            self._index.clear()
        self._index[id(names)] = (names, list(by_form.items()))
        return list(by_form.items())

    def named(self, turn: Turn, key: str, names: Mapping[str, Sequence[str]]) -> int:
        """Where ``key``'s names occur in ``turn`` (bits: ANY, START, END, …; 0: nowhere)."""
        seen = self._cues.get(id(turn))
        if seen is None or seen[0] is not turn:
            self.cues(turn)
            seen = self._cues[id(turn)]
        hit = seen[2].get(key)
        if hit is None:
            hit = name_bits(seen[1].folded, self.variants(names.get(key) or (key,)))
            seen[2][key] = hit
        return hit


def name_forms(names: Sequence[str]) -> tuple[str, ...]:
    """The folded spellings a name is looked for in: the name (kana as hiragana), and an
    IRC nick without its trailing digits or underscores (``speeddemon8803``: ``speeddemon``)."""
    out: set[str] = set()
    for name in names:
        n = to_hiragana(normalise(name)).strip().lstrip("@")
        if len(n) < 2:
            continue
        out.add(n)
        if n.isascii():
            trimmed = n.rstrip("0123456789_-|`^")
            if len(trimmed) >= 3:
                out.add(trimmed)
    return tuple(sorted(out, key=len, reverse=True))


def _latin_glued(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return (before.isascii() and before.isalnum()) or (after.isascii() and after.isalnum())


def name_bits(text: str, forms: Sequence[str]) -> int:
    bits = 0
    for form in forms:
        at = text.find(form)
        while at >= 0:
            end = at + len(form)
            if not (form.isascii() and _latin_glued(text, at, end)):
                bits |= _position(text, at, end)
            at = text.find(form, at + 1)
    return bits


def _position(text: str, at: int, end: int) -> int:
    bits = ANY
    rest = text[end:]
    for h in _HONORIFICS:
        if rest.startswith(h):
            bits |= HONORIFIC
            rest = rest[len(h) :]
            break
    before = text[:at].strip().rstrip("@").strip()
    bare = before
    for g in _GREETING_WORDS:
        if bare.endswith(g) and (len(bare) == len(g) or not bare[-len(g) - 1].isalnum()):
            bare = bare[: -len(g)].strip(" ,、，!！")
            break
    if not before or not bare:
        bits |= START
        if not rest or rest[0] in _SEP:
            bits |= LEAD
    raw = text[:at].rstrip("@")
    after_greeting = bare != before
    if not rest.strip(_TRAIL) and (not raw or raw[-1] in ",、， " or after_greeting):
        bits |= END
    elif before and before[-1] in "。.!！?？\n、,，" and rest[:1] in ",、，":
        bits |= MID
    if rest.startswith(_PARTICLES):
        bits |= PARTICLE
    return bits
