"""The fact store's in-memory index: one per source channel, searched in a millisecond.

A fact's score for a query is

    relevance × 0.5^(age / half-life) × (0.5 + 0.5 × confidence) × (boost if about the speaker)

where relevance is keyword Jaccard averaged with embedding cosine (Jaccard alone when
either side has no embedding). Each channel's index holds a float32 matrix of embeddings,
an inverted keyword index and numpy columns for lengths, ages, confidence and flags, so
a search is one matrix-vector product and a few vector operations — no per-fact Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from kuuki.memory.keywords import keyword_set
from kuuki.store.records import FactRecord

SPEAKER_BOOST = 1.5
MIN_RELEVANCE = 0.2
DUPLICATE_COSINE = 0.92
DUPLICATE_JACCARD = 0.8


@dataclass(frozen=True, slots=True)
class FactHit:
    fact: FactRecord
    score: float
    relevance: float


def decay(age_days: float | npt.NDArray[np.float64], half_life_days: float) -> Any:
    """0.5^(age / half-life): 1 when new, 0.5 after one half-life."""
    return np.power(0.5, np.maximum(age_days, 0.0) / half_life_days)


class FactIndex:
    """The facts of one source channel, ready for vectorised search."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.facts: list[FactRecord] = []
        self._dirty = True
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._has_emb = np.zeros(0, dtype=bool)
        self._kw_len = np.zeros(0, dtype=np.float64)
        self._created = np.zeros(0, dtype=np.float64)
        self._confidence = np.zeros(0, dtype=np.float64)
        self._shareable = np.zeros(0, dtype=bool)
        self._ids = np.zeros(0, dtype=np.int64)
        self._t_ref = 0.0
        self._weight = np.zeros(0, dtype=np.float64)
        self._weight_hl = -1.0
        self._inverted: dict[str, npt.NDArray[np.intp]] = {}
        self._by_user: dict[str, npt.NDArray[np.intp]] = {}
        self._kwsets: list[frozenset[str]] = []

    def __len__(self) -> int:
        return len(self.facts)

    def add(self, fact: FactRecord) -> None:
        self.facts.append(fact)
        self._dirty = True

    def replace(self, fact: FactRecord) -> None:
        for i, f in enumerate(self.facts):
            if f.id == fact.id:
                self.facts[i] = fact
                self._dirty = True
                return
        self.add(fact)

    def remove(self, ids: Iterable[int]) -> int:
        drop = set(ids)
        before = len(self.facts)
        self.facts = [f for f in self.facts if f.id not in drop]
        self._dirty = self._dirty or len(self.facts) != before
        return before - len(self.facts)

    def rebuild(self) -> None:
        """Recompute the arrays; done after a batch of changes, off the reply path."""
        n = len(self.facts)
        self._matrix = np.zeros((n, self.dim), dtype=np.float32)
        self._has_emb = np.zeros(n, dtype=bool)
        inverted: dict[str, list[int]] = {}
        by_user: dict[str, list[int]] = {}
        self._kwsets = []
        for i, f in enumerate(self.facts):
            if f.embedding is not None and f.embedding.shape == (self.dim,):
                self._matrix[i] = f.embedding
                self._has_emb[i] = True
            kws = keyword_set(f.keywords)
            self._kwsets.append(kws)
            for k in kws:
                inverted.setdefault(k, []).append(i)
            for u in f.source_user_ids:
                by_user.setdefault(u, []).append(i)
        self._kw_len = np.array([len(k) for k in self._kwsets], dtype=np.float64)
        self._created = np.array([f.created_at.timestamp() for f in self.facts], dtype=np.float64)
        self._confidence = np.array([f.confidence for f in self.facts], dtype=np.float64)
        self._shareable = np.array([f.shareable for f in self.facts], dtype=bool)
        self._ids = np.array([f.id for f in self.facts], dtype=np.int64)
        self._t_ref = float(self._created.max()) if n else 0.0
        self._weight_hl = -1.0
        self._inverted = {k: np.array(v, dtype=np.intp) for k, v in inverted.items()}
        self._by_user = {k: np.array(v, dtype=np.intp) for k, v in by_user.items()}
        self._dirty = False

    def _weights(self, half_life_days: float) -> npt.NDArray[np.float64]:
        """(0.5 + 0.5 confidence) × decay relative to the newest fact, cached per half-life."""
        self._ready()
        if self._weight_hl != half_life_days:
            rel_days = (self._created - self._t_ref) / 86400.0
            self._weight = (0.5 + 0.5 * self._confidence) * np.power(
                0.5, -rel_days / half_life_days
            )
            self._weight_hl = half_life_days
        return self._weight

    def _ready(self) -> None:
        if self._dirty:
            self.rebuild()

    def _jaccard(self, query: frozenset[str]) -> npt.NDArray[np.float64]:
        inter = np.zeros(len(self.facts), dtype=np.float64)
        for k in query:
            rows = self._inverted.get(k)
            if rows is not None:
                inter[rows] += 1.0
        union = np.maximum(len(query) + self._kw_len - inter, 1.0)
        return inter / union

    def relevance(
        self, query: frozenset[str], vector: npt.NDArray[np.float32] | None
    ) -> npt.NDArray[np.float64]:
        self._ready()
        jacc = self._jaccard(query) if query else np.zeros(len(self.facts))
        if vector is None or not self._has_emb.any():
            return jacc
        cos = np.clip(_matvec(self._matrix, vector), 0.0, 1.0).astype(np.float64)
        if not query:
            return np.where(self._has_emb, cos, 0.0)
        return np.where(self._has_emb, 0.5 * jacc + 0.5 * cos, jacc)

    def search(
        self,
        query: frozenset[str],
        vector: npt.NDArray[np.float32] | None,
        *,
        now: datetime,
        half_life_days: float,
        speaker: str | None = None,
        limit: int = 3,
        min_relevance: float = MIN_RELEVANCE,
        shareable_only: bool = False,
        exclude: set[int] | frozenset[int] = frozenset(),
    ) -> list[FactHit]:
        if not self.facts:
            return []
        rel = self.relevance(query, vector)
        score = rel * self._weights(half_life_days)
        # Every fact ages alike between rebuilds, so "now" is one scalar factor; facts
        # from the future (clock skew) are not rewarded beyond "new".
        score *= float(decay((now.timestamp() - self._t_ref) / 86400.0, half_life_days))
        if speaker is not None and speaker in self._by_user:
            score[self._by_user[speaker]] *= SPEAKER_BOOST
        ok = rel >= min_relevance
        if shareable_only:
            ok &= self._shareable
        if exclude:
            ok &= ~np.isin(self._ids, np.fromiter(exclude, dtype=np.int64))
        candidates = np.flatnonzero(ok)
        if candidates.size == 0:
            return []
        if candidates.size > limit:
            part = np.argpartition(-score[candidates], limit - 1)[:limit]
            candidates = candidates[part]
        order = candidates[np.argsort(-score[candidates], kind="stable")]
        return [FactHit(self.facts[i], float(score[i]), float(rel[i])) for i in order]

    def duplicate_of(
        self, content: str, kws: frozenset[str], vector: npt.NDArray[np.float32] | None
    ) -> FactRecord | None:
        """An existing fact saying the same thing, if any (merged instead of stored twice)."""
        if not self.facts:
            return None
        self._ready()
        norm = _norm_text(content)
        for f in self.facts:
            if _norm_text(f.content) == norm:
                return f
        if vector is not None and self._has_emb.any():
            cos = np.where(self._has_emb, _matvec(self._matrix, vector), -1.0)
            best = int(np.argmax(cos))
            if cos[best] >= DUPLICATE_COSINE:
                return self.facts[best]
            return None
        if kws:
            jacc = self._jaccard(kws)
            best = int(np.argmax(jacc))
            if jacc[best] >= DUPLICATE_JACCARD:
                return self.facts[best]
        return None

    def weakest(self, count: int, *, now: datetime, half_life_days: float) -> list[int]:
        """Ids of the ``count`` facts least worth keeping (lowest confidence × decay)."""
        if count <= 0 or not self.facts:
            return []
        self._ready()
        worth = self._confidence * decay((now.timestamp() - self._created) / 86400, half_life_days)
        order = np.argsort(worth, kind="stable")[:count]
        return [int(self._ids[i]) for i in order]

    def decayed(self, threshold: float, *, now: datetime, half_life_days: float) -> list[int]:
        """Ids of facts whose confidence × decay fell below ``threshold``."""
        if not self.facts:
            return []
        self._ready()
        worth = self._confidence * decay((now.timestamp() - self._created) / 86400, half_life_days)
        return [int(self._ids[i]) for i in np.flatnonzero(worth < threshold)]


def _matvec(matrix: npt.NDArray[np.float32], vector: npt.NDArray[Any]) -> Any:
    # BLAS sgemv. kuuki keeps BLAS single-threaded (see kuuki/__init__.py): a threaded
    # matvec on a busy two-core host spends 10-20x longer waking threads than computing.
    return matrix @ vector.astype(np.float32, copy=False)


def _norm_text(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def forget_after_days(threshold: float, half_life_days: float) -> float:
    """How old a fully confident fact gets before it decays below ``threshold``."""
    return half_life_days * math.log2(1 / threshold)


def merge_sources(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))
