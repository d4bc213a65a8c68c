"""`kuuki bench facts`: how fast is fact retrieval in a channel holding many facts?

Builds one channel's index of synthetic facts (random unit embeddings, keywords from a
fixed vocabulary, ages spread over a year, a few hundred speakers), then times the full
retrieval step the responder runs after deciding to speak — keyword extraction of the
trigger text, the vectorised search, privacy filtering and ranking — for many queries.
The query's embedding is precomputed: the static embedder (~10 µs a chat message) is
the embedder's cost, measured by its own benchmark, not the index's.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from kuuki.domain import Channel, Visibility
from kuuki.memory.fact_store import FactMemory
from kuuki.memory.privacy import ChannelRegistry
from kuuki.store.records import FactRecord

DIM = 512
_VOCAB = [f"topic{i}" for i in range(2000)]


class _FixedEmbedder:
    """Returns a prepared vector: the bench times the index, not the encoder."""

    dim = DIM
    related = 0.45

    def __init__(self) -> None:
        self.vector = np.zeros(DIM, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.tile(self.vector, (len(texts), 1))


def _unit(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    out: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out


def build_memory(count: int, seed: int = 7) -> tuple[FactMemory, Channel, _FixedEmbedder]:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    channel = Channel("bench", "bench", Visibility.PUBLIC)
    registry = ChannelRegistry()
    registry.add(channel)
    embedder = _FixedEmbedder()
    memory = FactMemory(
        store=None,  # type: ignore[arg-type]  # search never touches the store
        registry=registry, embedder=embedder, half_life_days=30, max_per_channel=count,
    )
    now = datetime(2026, 1, 5, tzinfo=UTC)
    vectors = _unit(rng, count)
    index = memory._index(channel.id)
    for i in range(count):
        kws = tuple(pick.sample(_VOCAB, 5))
        index.add(FactRecord(
            id=i + 1, content=f"fact {i} about {' '.join(kws)}", source_channel_id=channel.id,
            source_user_ids=(f"u{pick.randrange(300)}",), keywords=kws, embedding=vectors[i],
            confidence=pick.random(), shareable=pick.random() < 0.7,
            visibility=Visibility.PUBLIC, workspace="default",
            created_at=now - timedelta(days=pick.random() * 365), last_used_at=None,
        ))
    index.rebuild()
    return memory, channel, embedder


def run_bench_facts(out: TextIO, *, facts: int = 10_000, queries: int = 500) -> dict[str, Any]:
    """Time retrieval over ``facts`` facts; print and return {"facts", "p50_ms", "p99_ms"}."""
    memory, channel, embedder = build_memory(facts)
    rng = np.random.default_rng(11)
    pick = random.Random(11)
    now = datetime(2026, 1, 5, tzinfo=UTC)
    query_vectors = _unit(rng, queries)
    index = memory._index(channel.id)
    # Half the queries share keywords with a stored fact, so ranking has work to do.
    texts: list[str] = []
    for i in range(queries):
        if i % 2:
            texts.append(" ".join(pick.sample(_VOCAB, 4)))
            continue
        target = pick.choice(index.facts)
        texts.append(" ".join([*target.keywords[:2], *pick.sample(_VOCAB, 2)]))
        assert target.embedding is not None
        near = target.embedding + 0.05 * query_vectors[i]
        query_vectors[i] = near / np.linalg.norm(near)
    for i in range(20):  # warm caches and numpy's code paths
        memory.search(channel, texts[i], now=now, speaker="u1")
    times: list[float] = []
    found = 0
    for i in range(queries):
        embedder.vector = query_vectors[i]
        start = time.perf_counter()
        hits = memory.search(channel, texts[i], now=now, speaker=f"u{i % 300}", limit=3)
        times.append((time.perf_counter() - start) * 1000)
        found += bool(hits)
    times.sort()
    result = {
        "facts": facts,
        "queries": queries,
        "p50_ms": round(times[len(times) // 2], 3),
        "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 3),
        "queries_with_hits": found,
    }
    out.write(json.dumps(result) + "\n")
    return result
