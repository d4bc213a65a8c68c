from __future__ import annotations

import random

import numpy as np

from kuuki.conversation.wordindex import WordIndex


def _rows(rng: random.Random, n: int) -> list[frozenset[str]]:
    vocab = [f"word{k}" for k in range(40)]
    return [frozenset(rng.sample(vocab, rng.randint(0, 9))) for _ in range(n)]


def test_shared_counts_are_the_set_intersections_newest_first() -> None:
    rng = random.Random(3)
    rows = _rows(rng, 300)  # past the first sizes of every buffer
    index = WordIndex()
    for r in rows:
        index.add(r)
    for _ in range(200):
        words = frozenset(rng.sample([f"word{k}" for k in range(50)], rng.randint(1, 8)))
        first = rng.randrange(len(rows))
        last = rng.randrange(first, len(rows))
        want = [len(words & rows[r]) for r in range(last, first - 1, -1)]
        got = index.shared(words, first, last)
        assert got.dtype == np.float32
        assert got.tolist() == want


def test_rebuild_keeps_counting_the_kept_rows_only() -> None:
    rng = random.Random(5)
    rows = _rows(rng, 120)
    index = WordIndex()
    for r in rows:
        index.add(r)
    kept = rows[70:]
    index.rebuild(kept)
    index.add(frozenset({"fresh", "word1"}))
    kept.append(frozenset({"fresh", "word1"}))
    words = frozenset({"fresh", "word1", "word2", "word3"})
    want = [len(words & kept[r]) for r in range(len(kept) - 1, -1, -1)]
    assert index.shared(words, 0, len(kept) - 1).tolist() == want
    assert index.shared(frozenset({"unseen"}), 0, 3).tolist() == [0.0] * 4
