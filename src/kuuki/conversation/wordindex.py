"""The content words of a channel's buffered messages, as integer ids in one flat array.

The disentangler's ``overlap`` and ``log_shared`` features need, for a new message, how
many of its words each of the previous ``window`` messages has. One set intersection per
candidate was the largest single cost of a message's features; here each buffered row's
words are a run of ids in ``flat``, so the counts for a whole window come from marking the
new message's ids once and one cumulative sum over the window's runs. The counts are
exact integers: the same features as the set intersections.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
_A = TypeVar("_A", bound=npt.NDArray[np.generic])


class WordIndex:
    """Rows of word ids, appended in message order (row ``r`` is the history's row ``r``)."""

    def __init__(self) -> None:
        self._vocab: dict[str, int] = {}
        self._flat = np.zeros(64, np.int64)  # word ids, row after row
        self._bound = np.zeros(33, np.int64)  # row r's ids: flat[bound[r] : bound[r + 1]]
        self._rows = 0
        self._mark = np.zeros(64, bool)  # scratch: the new message's ids, cleared after use

    def add(self, words: Iterable[str]) -> None:
        """Append the next row's words."""
        vocab = self._vocab
        for w in words:
            if w not in vocab:
                vocab[w] = len(vocab)
        ids = [vocab[w] for w in words]
        top = int(self._bound[self._rows])
        end = top + len(ids)
        if end > len(self._flat):
            self._flat = _grown(self._flat, end, 0)
        self._flat[top:end] = ids
        self._rows += 1
        if self._rows >= len(self._bound):
            self._bound = _grown(self._bound, self._rows + 1, 0)
        self._bound[self._rows] = end
        if len(vocab) > len(self._mark):
            self._mark = _grown(self._mark, len(vocab), False)

    def rebuild(self, rows: Iterable[Iterable[str]]) -> None:
        """Start over with these rows (after the history dropped its oldest rows); the
        vocabulary starts over too, so it stays bounded by the buffered messages' words."""
        self._vocab = {}
        self._rows = 0
        self._bound[0] = 0
        for words in rows:
            self.add(words)

    def shared(self, words: Iterable[str], first: int, last: int) -> FloatArray:
        """How many of ``words`` each row ``last, last - 1, …, first`` has (newest first)."""
        vocab = self._vocab
        ids = [vocab[w] for w in words if w in vocab]
        if not ids:
            return np.zeros(last - first + 1, np.float32)
        mark = self._mark
        mark[ids] = True
        bound = self._bound[first : last + 2]
        lo = int(bound[0])
        hi = int(bound[-1])
        run = np.zeros(hi - lo + 1, np.int64)
        np.cumsum(mark[self._flat[lo:hi]], out=run[1:])
        mark[ids] = False
        ends = run[bound[1:] - lo]
        ends -= run[bound[:-1] - lo]
        return ends[::-1].astype(np.float32)


def _grown(arr: _A, need: int, fill: object) -> _A:
    size = len(arr)
    while size < need:
        size *= 2
    out = np.full(size, fill, arr.dtype)
    out[: len(arr)] = arr
    return out  # type: ignore[return-value]
