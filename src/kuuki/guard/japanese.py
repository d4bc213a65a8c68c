"""Is a Japanese text made of Japanese words? A cheap check with janome's dictionary.

A model that cannot write Japanese produces text in the right script that is no language:
invented katakana words ("シリアトスコックカータスサアミス"), archaic kana (ゐ, ゑ),
full-width symbols sprinkled between words (＆, ＝, ＰＰＰＰ). janome (pure Python, its
IPADIC dictionary inside the wheel, already used for topic keywords) marks the words it
does not know; words the conversation itself used (names, jargon) are not held against
the text.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Iterable
from typing import Any

_lock = threading.Lock()
_use = threading.Lock()
_tokenizer: Any = None

_JA = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ff]{7,}")
_KATAKANA_WORD = re.compile(r"[\u30a0-\u30ff]+")
# Characters no chat message of today needs: archaic kana, full-width ASCII symbols and
# letters (a model's byte-level noise), replacement characters.
_STRAY = re.compile(
    r"[ゐゑヰヱ\uff03-\uff06\uff0a\uff0b\uff1c-\uff1e\uff20\uff3b-\uff40\uff5b\uff5d\ufffd]"
    r"|[\uff21-\uff3a\uff41-\uff5a]{2,}"
)
_KANA_WORD = re.compile(r"[\u3040-\u309f]{1,2}")
UNKNOWN_SHARE = 0.3


def janome() -> Any:
    """The process's one janome Tokenizer (~0.4 s to load the dictionary, once)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            from janome.tokenizer import Tokenizer  # type: ignore[import-untyped]

            _tokenizer = Tokenizer()
        return _tokenizer


def tokenize(text: str) -> list[Any]:
    """janome's tokens of ``text``, one caller at a time: topics are read in a worker
    thread (kuuki.memory.profiles), and janome's prefix cache is not safe to share — a
    lookup can find an entry that another thread evicts before it is moved."""
    tokenizer = janome()
    with _use:
        return list(tokenizer.tokenize(text))


def _ungrammatical(tokens: list[Any]) -> str | None:
    """Word sequences Japanese does not have, as a model without Japanese produces them:
    a verb's irrealis form not followed by its auxiliary ("わか" + "わか"), or the same
    short kana word twice in a row ("わわ", "とらとら" as two words)."""
    for a, b in itertools.pairwise(tokens):
        pos_a, pos_b = a.part_of_speech.split(",")[0], b.part_of_speech.split(",")[0]
        if (
            pos_a == "動詞" and a.infl_form.startswith("未然")
            and pos_b not in ("助動詞", "助詞") and b.surface not in ("ず", "ぬ", "ん")
        ):
            return f"“{a.surface}{b.surface}” is not Japanese grammar"
        if (
            a.surface == b.surface and _KANA_WORD.fullmatch(a.surface)
            and pos_a not in ("感動詞", "フィラー", "副詞")  # うんうん, はいはい
        ):
            return f"“{a.surface}{b.surface}” is a stammer, not a word"
    return None


def unfluent(text: str, known: Iterable[str] = ()) -> str | None:
    """Why ``text`` is not fluent Japanese, or None. ``known``: the conversation's texts."""
    stray = _STRAY.search(text)
    if stray:
        return f"stray characters “{stray.group(0)}”"
    context = "\n".join(known)
    ja_total = len(_JA.findall(text))
    if ja_total == 0:
        return None
    unknown: list[str] = []
    tokens = tokenize(text)
    for token in tokens:
        surface = token.surface
        if token.node_type != "UNKNOWN" or not _JA.search(surface) or surface in context:
            continue
        if _KATAKANA_WORD.fullmatch(surface) and len(surface) < 7:
            continue  # a loanword newer than the dictionary (デプロイ); long ones are below
        unknown.append(surface)
    broken = _ungrammatical(tokens)
    if broken is not None:
        return broken
    for word in unknown:
        if _KATAKANA_RUN.fullmatch(word):
            return f"invented word “{word}”"
    share = sum(len(_JA.findall(w)) for w in unknown) / ja_total
    if share >= UNKNOWN_SHARE and ja_total >= 4:
        return f"{share:.0%} of it is no Japanese word ({'、'.join(unknown[:3])})"
    return None
