"""English noun readings from lemminflect's lemma table, kept small.

lemminflect's `getAllLemmas` loads its whole lookup table as a dict of dicts of tuples:
about 34 MB of Python objects, for the one question topics ask — "what noun does this
lower-case word name, if any, and is it in the dictionary at all?". `NounTable` reads the
same files with lemminflect's own codecs and keeps only that answer for each word, as two
sorted strings searched by bisection: about 1.2 MB, and the same answers (`noun_reading`
matches `getAllLemmas` on every word of the table; tests/memory/test_nouns.py).
"""

from __future__ import annotations

import gzip
import heapq
import io
import threading
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from itertools import groupby

from lemminflect import config
from lemminflect.codecs.LemmaLUCodec import LemmaLUCodec
from lemminflect.codecs.OverridesCodec import OverridesCodec
from lemminflect.core.LexicalUtils import categoryToUPos

_NOUN_KINDS = ("NOUN", "PROPN")  # getAllLemmas' reading order for "a noun reading"
_NO_NOUN = "\x00"  # known, with no noun reading
_SAME = "\x01"  # its noun reading is the word itself


def _lookup() -> Iterator[tuple[str, dict[str, str]]]:
    """The lookup table as (word, {NOUN/VERB/…: first lemma}), lower-case words only
    (getAllLemmas looks a word up in lower case), in the table's order."""
    with gzip.open(config.lemma_lu_fn, "rb") as f:
        lines = (LemmaLUCodec.fromString(raw.decode()) for raw in f)
        for word, group in groupby(lines, key=lambda line: line[0]):
            if word == word.lower():
                yield word, {categoryToUPos(c): forms[0].lower() for _, c, forms in group}


def _readings() -> Iterator[tuple[str, dict[str, str]]]:
    """Every lower-case word's readings as `getAllLemmas` sees it — the lookup table,
    then the overrides over it —, in sorted order, one word at a time (the whole table
    as Python objects is what this module avoids, even for a moment)."""
    overrides = {
        word: {u: forms[0].lower() for u, forms in entry.items()}
        for word, entry in OverridesCodec.load(config.lemma_overrides_fn).items()
        if word == word.lower()
    }
    extra: Iterator[tuple[str, dict[str, str]]] = ((w, {}) for w in sorted(overrides))
    previous = ""
    for word, group in groupby(heapq.merge(_lookup(), extra, key=lambda e: e[0]),
                               key=lambda e: e[0]):
        if word <= previous and previous:
            raise RuntimeError(f"lemminflect's lemma table is not sorted at {word!r}")
        previous = word
        readings: dict[str, str] = {}
        for _, entry in group:
            readings.update(entry)
        readings.update(overrides.get(word, {}))
        yield word, readings


class _Joined:
    """Strings written one after another, and where each starts."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self.offsets = array("I", [0])

    def add(self, item: str) -> None:
        self.buffer.write(item)
        self.offsets.append(self.offsets[-1] + len(item))


class NounTable:
    """Every lower-case word lemminflect knows, with its noun reading (module doc)."""

    def __init__(self) -> None:
        words, nouns = _Joined(), _Joined()
        for word, readings in _readings():
            noun = next((readings[k] for k in _NOUN_KINDS if k in readings), None)
            words.add(word)
            nouns.add(_NO_NOUN if noun is None else _SAME if noun == word else noun)
        self._words, self._word_at = words.buffer.getvalue(), words.offsets
        self._nouns, self._noun_at = nouns.buffer.getvalue(), nouns.offsets
        self._size = len(self._word_at) - 1

    def _word(self, i: int) -> str:
        return self._words[self._word_at[i]:self._word_at[i + 1]]

    def noun_reading(self, word: str) -> tuple[bool, str | None]:
        """(whether the dictionary knows ``word``, its first noun lemma or None); ``word``
        in lower case."""
        i = bisect_left(range(self._size), word, key=self._word)
        if i == self._size or self._word(i) != word:
            return False, None
        noun = self._nouns[self._noun_at[i]:self._noun_at[i + 1]]
        return True, None if noun == _NO_NOUN else word if noun == _SAME else noun


_table: NounTable | None = None
_lock = threading.Lock()


def nouns() -> NounTable:
    """The process's one table (about 0.3 s to read, once)."""
    global _table
    with _lock:
        if _table is None:
            _table = NounTable()
        return _table
