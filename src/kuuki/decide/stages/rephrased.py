"""Is one message the other sent again in other words? (used by `SentTwice`)

A person who re-sends a question before it was answered often rewords it: a word swapped
for its synonym ("set up" for "install", 「店」 for 「屋」), a phrase moved ("on ubuntu, how
do I …" / "how do I … on ubuntu"), a typo fixed ("instal" / "install"), a particle or an
ending changed (「明日雨降るかな」 / 「明日は雨が降るかな」). The same person asking two
different things in a row differs in the same few words — "for python" / "for rust",
「東京で」 / 「大阪で」 — and a sentence vector cannot tell the two apart: a bag of pieces
scores both pairs 0.9 and more (docs/benchmarks.md). So the two texts are lined up word by
word, and only their differences are judged:

- words only one side has, or that moved, are allowed when they are function words
  (English stop words, a run of hiragana: particles, endings, 「って」 for 「は」);
- one phrase moved elsewhere is a reordering; two content words trading places
  ("png to jpg" / "jpg to png", 「駅から会場まで」 / 「会場から駅まで」) is not;
- a content word swapped for another is a typo fixed (one letter added, dropped, changed
  or two swapped, in words of 4+ letters) or a synonym (the two words' vectors in the
  shipped static table at least SYNONYM apart); never when a number differs, when one is
  the other with an opposite's prefix ("mount" / "unmount", 「来週」 / 「再来週」), or when
  the two say "not" a different number of times;
- content only one side has is a different question ("the pip cache" / "the cache").

Every rule is conservative: a rewording it cannot vouch for is judged as a new message (the
behaviour before), because folding a different question leaves a person unanswered.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Two swapped words' cosine in the static table (kuuki.embed.static) at which they are
# taken for synonyms; set on the paraphrase pairs of kuuki.bench.repeats (docs/decisions.md)
SYNONYM = 0.75
MIN_SHARED = 2  # content both texts must share, in order: English words, or kanji/kana by two
_TYPO_MIN = 4  # letters a word needs before one changed letter counts as a typo

_TOKEN = re.compile(
    r"[a-z0-9]+(?:['.][a-z0-9]+)*"  # an English word, a number ("20.04", "what's")
    r"|[\u4e00-\u9fff\u3005\u3006\u30f6]+"  # a run of kanji (々, 〆, ヶ)
    r"|[\u30a0-\u30ff]+"  # a run of katakana (with ー)
    r"|[\u3040-\u309f]+"  # a run of hiragana: particles and endings
)
_HIRAGANA = re.compile(r"[\u3040-\u309f]+")
_KANA_ONLY = re.compile(r"[\u3040-\u309f\u30fc]+")  # hiragana and the long-vowel mark ー
_STOP = frozenset((
    "a", "an", "the", "i", "you", "we", "my", "your", "me", "us", "our", "it", "its", "it's",
    "this", "that", "these", "those", "there", "here", "to", "of", "in", "on", "for", "with",
    "at", "by", "as", "and", "or", "but", "so", "if", "then", "is", "are", "am", "was", "were",
    "be", "been", "do", "does", "did", "can", "could", "would", "will", "should", "shall",
    "may", "might", "any", "some", "anyone", "anybody", "someone", "somebody", "everyone",
    "guys", "hey", "hi", "please", "just", "really", "also", "still", "yet", "now", "again",
    "ok", "okay", "um", "uh",
))
# hiragana that says where or when from and to: content, not an ending (「何時から」 / 「何時まで」)
_BOUND = re.compile(r"から|まで|より")
_NOT_EN = frozenset(("not", "no", "never", "none", "nothing", "nobody", "without", "cannot",
                     "cant"))
_NOT_JA = re.compile(r"ない|なく|なかっ|ません|ず(?:に|の|は|と|、|$)|無い|無し")
_OPPOSITE = ("un", "dis", "de", "re", "in", "im", "non", "anti",
             "アン", "ノン", "非", "不", "未", "無", "再", "反", "逆")

Embed = Callable[[Sequence[str]], Any]  # rows of vectors (an array)


@dataclass(frozen=True, slots=True)
class Rephrasing:
    """How the second text says the first again: ``how`` in words for the trace, and the
    swapped words' cosine when a synonym decided it (1.0 otherwise)."""

    how: str
    swapped: float = 1.0


def tokens(text: str) -> list[str]:
    """Words (English), runs of one script (Japanese) and numbers, NFKC and lower-cased;
    punctuation, spaces and emoji left out."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def _function(tok: str) -> bool:
    if tok in _STOP:
        return True
    return _KANA_ONLY.fullmatch(tok) is not None and _BOUND.search(tok) is None


def _weight(toks: Sequence[str]) -> float:
    """How much content: an English word or number is one, a Japanese run one per two
    letters (a single kanji is a word too)."""
    return sum(1.0 if t.isascii() else max(1.0, len(t) / 2) for t in toks)


def _join(toks: Sequence[str]) -> str:
    """Tokens as text again: English words spaced, Japanese runs joined."""
    out = ""
    for t in toks:
        out += " " + t if out and t.isascii() and out[-1].isascii() else t
    return out


def _content(toks: Sequence[str]) -> tuple[str, ...]:
    return tuple(t for t in toks if not _function(t))


def _negations(text: str, toks: Sequence[str]) -> int:
    en = sum(1 for t in toks if t in _NOT_EN or t.endswith("n't"))
    return en + len(_NOT_JA.findall(unicodedata.normalize("NFKC", text)))


def rephrased(
    first: str, again: str, embed: Embed | None = None, *, synonym: float = SYNONYM
) -> Rephrasing | None:
    """How ``again`` says ``first`` in other words, or None when it may ask something else
    (module doc). ``embed`` gives the static table's vectors of the swapped words (taken
    for synonyms from ``synonym`` up); without it only reorderings, function words and
    typos count."""
    a, b = tokens(first), tokens(again)
    if _negations(first, a) != _negations(again, b):
        return None
    ops = [(a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in
           difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"]
    full = [(gone, came) for gone, came in ops if (_content(gone) or _content(came))
            and (_BOUND.search(_join(gone) + _join(came))
                 or _trimmed(_join(_content(gone)), _join(_content(came))) is not None)]
    if _weight(_content(a)) - sum(_weight(_content(gone)) for gone, _ in full) < MIN_SHARED:
        return None  # too little in common to vouch for anything: a new message
    if not full:
        return Rephrasing("worded differently only in small words") if ops else None
    if _moved(full):
        return Rephrasing("the same words in another order")
    changed = [(_content(gone), _content(came)) for gone, came in full]
    if sorted(w for g, _ in changed for w in g) == sorted(w for _, c in changed for w in c):
        return None  # the same words trading places: "png to jpg" / "jpg to png"
    swaps: list[tuple[str, str]] = []
    for gone, came in changed:
        if _BOUND.search(_join(gone) + _join(came)):
            return None  # from where or until when changed: 「何時から」 / 「何時まで」
        pair = _trimmed(_join(gone), _join(came))
        if pair is None or not pair[0] or not pair[1]:
            return None  # content only one side has: something else is asked
        swaps.append(pair)
    return _swapped(swaps, embed, synonym)


def _trimmed(gone: str, came: str) -> tuple[str, str] | None:
    """The swapped words less the letters both start or end with, so that 「食後」 /
    「食前」 is judged as 「後」 / 「前」 (English words are kept whole); None when what is
    left on both sides is no content."""
    if not (gone.isascii() and came.isascii()):
        k = 0
        while k < min(len(gone), len(came)) and gone[k] == came[k]:
            k += 1
        gone, came = gone[k:], came[k:]
        k = 0
        while k < min(len(gone), len(came)) and gone[-1 - k] == came[-1 - k]:
            k += 1
        gone, came = gone[:len(gone) - k], came[:len(came) - k]
        gone, came = _KANA_ONLY.sub("", gone), _KANA_ONLY.sub("", came)
    if not gone and not came:
        return None
    return gone, came


def _moved(full: list[tuple[list[str], list[str]]]) -> bool:
    """One phrase taken out in one place and put back whole in another, or less a small
    word at its edge ("log files for nginx" / "nginx log files"). A word that moved while
    its particle stayed (「駅から会場まで」 / 「会場から駅まで」) changed its part: not this."""
    if len(full) != 2:
        return False
    (g1, c1), (g2, c2) = full
    if _content(c1) or _content(g2):
        g1, c2, g2, c1 = c1, g2, c2, g1  # the phrase went in first and left later
    if _content(c1) or _content(g2):
        return False
    return g1 == c2 or _edge(g1) == c2 or _edge(c2) == g1


def _edge(toks: list[str]) -> list[str]:
    out = list(toks)
    while out and _function(out[0]):
        out.pop(0)
    while out and _function(out[-1]):
        out.pop()
    return out


def _swapped(
    swaps: list[tuple[str, str]], embed: Embed | None, synonym: float
) -> Rephrasing | None:
    if any(_number(g) or _number(c) or _opposite(g, c) for g, c in swaps):
        return None
    if all(_typo(g, c) for g, c in swaps):
        return Rephrasing("a typo fixed")
    if embed is None:
        return None
    words = [w for pair in swaps for w in pair]
    vecs = embed(words)
    low = 1.0
    for k in range(len(swaps)):
        u, v = vecs[2 * k], vecs[2 * k + 1]
        low = min(low, float(sum(x * y for x, y in zip(u, v, strict=True))))
    if low < synonym:
        return None
    said = ", ".join(f"“{g}” → “{c}”" for g, c in swaps)
    return Rephrasing(f"a word swapped for its like ({said})", round(low, 2))


def _number(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _opposite(gone: str, came: str) -> bool:
    short, long_ = sorted((gone, came), key=len)
    return any(long_ == p + short for p in _OPPOSITE)


def _typo(gone: str, came: str) -> bool:
    """One letter added, dropped or changed, or two neighbours swapped (Damerau), in one
    English word of _TYPO_MIN+ letters."""
    if " " in gone or " " in came or not (gone.isascii() and came.isascii()):
        return False
    if min(len(gone), len(came)) < _TYPO_MIN or abs(len(gone) - len(came)) > 1:
        return False
    return _one_edit(gone, came)


def _one_edit(s: str, t: str) -> bool:
    """At most one edit apart: what is left between the common start and the common end
    is one letter changed, added or dropped, or two neighbours swapped."""
    k = 0
    while k < min(len(s), len(t)) and s[k] == t[k]:
        k += 1
    a, b = s[k:], t[k:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    return (len(a) <= 1 and len(b) <= 1) or (len(a) == len(b) == 2 and a == b[::-1])
