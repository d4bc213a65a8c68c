"""What was said, for the addressee and seat models: does a message answer a question a
candidate asked (even several turns up), take up what the candidate talked about, answer
a request of theirs, thank or greet them back.

Topic is read as shared n-grams, weighted by how rare each is in the corpora the models
were trained on (an inverse document frequency, kept hashed in the addressee weights): an
English word of 3+ letters, and in any script without spaces the character pairs and
triples of each run of letters (kana read as hiragana), so 「花粉やばい」 and 「花粉はヤバい
です」 share 花粉 and ばい without a tokenizer. Each turn's n-grams are read once and kept
per turn object (`ContentCache`): a live channel asks about the same turns on every
message, so the cost per new message is its own n-grams and one sparse dot product per
turn of the window.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kuuki.conversation.cues import is_greeting, is_question
from kuuki.decide.addressing.names import normalise, to_hiragana
from kuuki.decide.models.turns import Turn


class Window(Protocol):
    """What the content features read of a message's context (kuuki.decide.models.features'
    `Context`): message ``i`` of ``turns``, its author, where the window starts, and each
    speaker's turns in it."""

    @property
    def turns(self) -> Sequence[Turn]: ...
    @property
    def i(self) -> int: ...
    @property
    def author(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def said(self) -> Mapping[str, Sequence[int]]: ...

FloatArray = npt.NDArray[np.float64]

BUCKETS = 1 << 16  # hashed n-gram buckets of the rarity table
CONTENT_FEATURES = (
    "topic_last", "topic_recent", "topic_best", "their_question_topic",
    "after_author_question", "request_answered", "thanks_for_answer", "greeting_back",
)
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9'_-]*[a-z0-9]")
_REQUEST_RE = re.compile(
    r"(ください|下さい|てね|てほしい|て欲しい|ませんか|どうですか|どうでしょう|いかが|しましょう|"
    r"ましょう|おすすめ|教えて|\bplease\b|\bcould you\b|\bcan you\b|\bwould you\b|\blet'?s\b|"
    r"\bhow about\b|\byou should\b|\btry\b)",
    re.IGNORECASE,
)
# a run of letters in a script without spaces: not ASCII, and what str.isalnum calls a
# letter or digit (a word character of re, the underscore aside)
RUN_RE = re.compile(r"[^\W_\x00-\x7f]+")
_THANKS_RE = re.compile(r"(ありがと|感謝|助かり|助かる|thank|thx|\bty\b|cheers)", re.IGNORECASE)


def ngrams(text: str) -> frozenset[str]:
    """English words of 3+ letters, and the character pairs and triples of every run of
    letters in a script without spaces (kana as hiragana)."""
    t = to_hiragana(normalise(text))
    out = {w for w in _WORD_RE.findall(t) if len(w) >= 3}
    for s in RUN_RE.findall(t):
        out.update([s[a:a + 2] for a in range(len(s) - 1)])
        out.update([s[a:a + 3] for a in range(len(s) - 2)])
    return frozenset(out)


def bucket(gram: str) -> int:
    return zlib.crc32(gram.encode("utf-8")) & (BUCKETS - 1)


def rarity_table(texts: Iterable[str]) -> npt.NDArray[np.float32]:
    """log(N / document frequency) of every bucket over ``texts`` (a bucket seen once or
    never gets log N: rare)."""
    df = np.zeros(BUCKETS, np.int64)
    n = 0
    for text in texts:
        n += 1
        for b in {bucket(g) for g in ngrams(text)}:
            df[b] += 1
    return np.log(max(n, 1) / np.maximum(df, 1)).astype(np.float32)


class TurnText:
    """One turn's n-grams with their rarity weights (and its cues for this module)."""

    __slots__ = ("greeting", "n", "norm", "question", "request", "squares")

    def __init__(self, text: str, rarity: npt.NDArray[np.float32] | None) -> None:
        grams = ngrams(text)
        if rarity is None:
            weights = dict.fromkeys(grams, 1.0)
        else:
            weights = {g: float(rarity[bucket(g)]) for g in grams}
        # each n-gram's weight squared, once: what the cosine's dot product adds up
        self.squares = {g: v * v for g, v in weights.items()}
        self.n = len(self.squares)
        self.norm = math.sqrt(sum(self.squares.values())) or 1.0
        self.question = is_question(text)
        self.request = _REQUEST_RE.search(text) is not None
        self.greeting = is_greeting(text)

    def similarity(self, other: TurnText) -> float:
        """Cosine of the two weighted bags of n-grams, 0 to 1."""
        a, b = self.squares, other.squares
        if self.n > other.n:
            a, b = b, a
        # the shared n-grams' squares added in the smaller bag's order (at C speed)
        shared = sum(map(a.__getitem__, filter(b.__contains__, a)))
        return shared / (self.norm * other.norm)


class ContentCache:
    """Each turn's `TurnText`, kept per turn object (bounded: a full cache drops its oldest
    quarter), for one rarity table."""

    def __init__(self, rarity: npt.NDArray[np.float32] | None = None, size: int = 4096
                 ) -> None:
        self.rarity = rarity
        self._size = size
        self._texts: dict[int, tuple[Turn, TurnText]] = {}

    def text(self, turn: Turn) -> TurnText:
        hit = self._texts.get(id(turn))
        if hit is not None and hit[0] is turn:
            return hit[1]
        if len(self._texts) >= self._size:  # the oldest quarter goes
            for old in list(islice(self._texts, max(1, self._size // 4))):
                del self._texts[old]
        t = TurnText(turn.text, self.rarity)
        self._texts[id(turn)] = (turn, t)
        return t

    def window(self, turns: Sequence[Turn], start: int, stop: int) -> list[TurnText]:
        """``text`` of ``turns[start:stop]``, in order (the lookups inline: a window is
        read on every message)."""
        texts, out = self._texts, []
        for j in range(start, stop):  # (an augmented chat cannot be sliced)
            turn = turns[j]
            hit = texts.get(id(turn))
            out.append(hit[1] if hit is not None and hit[0] is turn else self.text(turn))
        return out


def content_rows(ctx: Window, candidates: Sequence[str], texts: ContentCache) -> FloatArray:
    """One row of `CONTENT_FEATURES` per candidate, from ``turns[:i+1]`` only."""
    turns, i, s0, author = ctx.turns, ctx.i, ctx.start, ctx.author
    me = texts.text(turns[i])
    window = texts.window(turns, s0, i)
    # the author's own turns are no candidate's: their similarity is never read
    sims = [0.0 if turns[j].speaker == author else me.similarity(t)
            for j, t in enumerate(window, s0)]
    mine = ctx.said.get(author, [])
    asked = next((j for j in reversed(mine) if window[j - s0].question), None)
    thanks = _THANKS_RE.search(turns[i].text) is not None
    best = max([v for j, v in enumerate(sims, s0) if turns[j].speaker != author],
               default=0.0)
    rows = []
    for c in candidates:
        said = ctx.said.get(c)
        if not said:
            rows.append(_NOTHING)
            continue
        last = window[said[-1] - s0]
        spoke_after = asked is not None and said[-1] > asked
        rows.append((
            sims[said[-1] - s0],
            max([sims[j - s0] for j in said[-3:]]),
            best > 0 and max([sims[j - s0] for j in said]) == best,
            max([sims[j - s0] for j in said if window[j - s0].question], default=0.0),
            spoke_after,
            last.request and not me.question,
            thanks and spoke_after,
            me.greeting and last.greeting,
        ))
    return np.array(rows, dtype=np.float64).reshape(len(candidates), len(CONTENT_FEATURES))


_NOTHING = (0.0,) * len(CONTENT_FEATURES)
