"""Folded cue patterns answer exactly as the case-insensitive originals (kuuki.text.folded)."""

from __future__ import annotations

import random
import re

import pytest

from kuuki.conversation import cues
from kuuki.decide import phrases
from kuuki.decide.judge import state
from kuuki.text.folded import Folded


def _texts(rng: random.Random, n: int) -> list[str]:
    words = [
        "Bye", "GOOD night", "see YA", "Thanks", "thank   you", "ty", "Stupid", "you're WRONG",
        "that's not what I meant", "AnyOne", "y'all", "We Shipped", "done!", "hmm", "I'M OFF",
        "byebye", "tyvm!", "ok", "the", "bug", "fixed?", "お疲れ様でした", "誰か", "ありがとう",
        "ふざけ", "café", "İstanbul", "ǅ", "K", "ſ", ",", ".", "!!", "?!",
    ]
    out = []
    for _ in range(n):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
        out.append("".join(c.swapcase() if rng.random() < 0.2 else c for c in line))
    return out


@pytest.mark.parametrize(
    "pattern",
    [p.pattern for _, p in state._CUES]
    + [cues._THANKS.pattern, phrases.GOOD_NEWS.pattern, phrases.ROOM.pattern],
)
def test_the_same_match_as_the_case_insensitive_pattern(pattern: re.Pattern[str]) -> None:
    folded = Folded(pattern)
    texts = _texts(random.Random(pattern.pattern), 4_000)
    hits = 0
    for text in texts:
        want = pattern.search(text)
        assert folded.find(text) == (want.group(0) if want else None), text
        assert folded.found_in(text) is (want is not None)
        hits += want is not None
    assert hits > 200  # the texts do exercise the matches, ASCII and not


def test_only_lower_case_insensitive_patterns_are_taken() -> None:
    with pytest.raises(ValueError, match="not a lower-case IGNORECASE"):
        Folded(re.compile(r"\bbye\b"))
    with pytest.raises(ValueError, match="not a lower-case IGNORECASE"):
        Folded(re.compile(r"\Sbye", re.IGNORECASE))
