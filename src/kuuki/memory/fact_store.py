"""Facts learned by reflection: stored once, merged when learned again, forgotten with time.

`FactMemory` keeps one `FactIndex` per source channel, loaded from the store at start and
kept in step with every write, so retrieval never touches the database. Searches for a
channel look only at indexes the privacy rule allows there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kuuki.domain import Channel, Visibility
from kuuki.embed import Embedder
from kuuki.memory.facts import MIN_RELEVANCE, FactHit, FactIndex, merge_sources
from kuuki.memory.keywords import keyword_set, keywords
from kuuki.memory.privacy import ChannelRegistry, may_show
from kuuki.store.records import FactRecord

log = logging.getLogger("kuuki.memory.facts")

FORGET_BELOW = 0.05


class FactStorePort(Protocol):
    """The part of the Store the fact memory uses."""

    async def add_fact(
        self,
        content: str,
        *,
        source_channel_id: str | None,
        source_user_ids: Sequence[str],
        keywords: Sequence[str] = (),
        embedding: Any = None,
        confidence: float = 1.0,
        shareable: bool = True,
        visibility: Visibility = Visibility.PRIVATE,
        workspace: str = "default",
        at: datetime | None = None,
    ) -> int: ...

    async def facts(
        self, *, workspace: str | None = None, shareable_only: bool = False
    ) -> list[FactRecord]: ...

    async def update_fact(
        self,
        fact_id: int,
        *,
        source_user_ids: Sequence[str],
        keywords: Sequence[str],
        confidence: float,
        created_at: datetime,
    ) -> None: ...

    async def delete_facts(self, fact_ids: Sequence[int]) -> int: ...


@dataclass(frozen=True, slots=True)
class NewFact:
    content: str
    source_user_ids: tuple[str, ...]
    keywords: tuple[str, ...]
    confidence: float
    shareable: bool


class FactMemory:
    """Every stored fact, indexed per source channel."""

    def __init__(
        self,
        store: FactStorePort,
        registry: ChannelRegistry,
        *,
        embedder: Embedder | None,
        half_life_days: float,
        max_per_channel: int,
    ) -> None:
        self.store = store
        self.registry = registry
        self.embedder = embedder
        self.half_life_days = half_life_days
        self.max_per_channel = max_per_channel
        self.dim = embedder.dim if embedder is not None else 512
        self._indexes: dict[str, FactIndex] = {}

    async def load(self) -> int:
        self._indexes.clear()
        facts = await self.store.facts()
        for f in facts:
            self._index(f.source_channel_id or "").add(f)
        for index in self._indexes.values():
            index.rebuild()
        return len(facts)

    def _index(self, channel_id: str) -> FactIndex:
        index = self._indexes.get(channel_id)
        if index is None:
            index = self._indexes[channel_id] = FactIndex(self.dim)
        return index

    def count(self, channel_id: str | None = None) -> int:
        if channel_id is not None:
            index = self._indexes.get(channel_id)
            return 0 if index is None else len(index)
        return sum(len(i) for i in self._indexes.values())

    def all_facts(self) -> list[FactRecord]:
        return [f for index in self._indexes.values() for f in index.facts]

    def embed(self, text: str) -> npt.NDArray[np.float32] | None:
        if self.embedder is None:
            return None
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    # --- writing -----------------------------------------------------------------------------

    async def add_many(self, channel: Channel, facts: Sequence[NewFact], at: datetime) -> int:
        """Store new facts from ``channel``; near-duplicates are merged. Returns how many new."""
        index = self._index(channel.id)
        added = 0
        vectors = (
            self.embedder.embed([f.content for f in facts])
            if self.embedder is not None and facts
            else None
        )
        for i, nf in enumerate(facts):
            vec = None if vectors is None else np.asarray(vectors[i], dtype=np.float32)
            kws = nf.keywords or tuple(keywords(nf.content, limit=8))
            dup = index.duplicate_of(nf.content, keyword_set(kws), vec)
            if dup is not None:
                await self._merge(index, dup, nf, kws, at)
                continue
            fact_id = await self.store.add_fact(
                nf.content,
                source_channel_id=channel.id,
                source_user_ids=nf.source_user_ids,
                keywords=kws,
                embedding=vec,
                confidence=nf.confidence,
                shareable=nf.shareable,
                visibility=channel.visibility,
                workspace=channel.workspace,
                at=at,
            )
            if not fact_id:  # refused: a source was forgotten meanwhile
                continue
            index.add(
                FactRecord(
                    id=fact_id,
                    content=nf.content,
                    source_channel_id=channel.id,
                    source_user_ids=tuple(nf.source_user_ids),
                    keywords=tuple(kws),
                    embedding=vec,
                    confidence=nf.confidence,
                    shareable=nf.shareable,
                    visibility=channel.visibility,
                    workspace=channel.workspace,
                    created_at=at,
                    last_used_at=None,
                )
            )
            index.rebuild()  # so the next fact of the batch can merge with this one
            added += 1
        await self._cap(channel.id, at)
        return added

    async def _merge(
        self, index: FactIndex, old: FactRecord, nf: NewFact, kws: Sequence[str], at: datetime
    ) -> None:
        # Hearing a fact again re-confirms it: fresher, at least as confident, more sources.
        merged = replace(
            old,
            source_user_ids=tuple(merge_sources(old.source_user_ids, nf.source_user_ids)),
            keywords=tuple(merge_sources(old.keywords, kws))[:16],
            confidence=max(old.confidence, nf.confidence),
            shareable=old.shareable and nf.shareable,
            created_at=max(old.created_at, at),
        )
        await self.store.update_fact(
            old.id,
            source_user_ids=merged.source_user_ids,
            keywords=merged.keywords,
            confidence=merged.confidence,
            created_at=merged.created_at,
        )
        index.replace(merged)
        index.rebuild()

    async def _cap(self, channel_id: str, now: datetime) -> None:
        index = self._index(channel_id)
        excess = len(index) - self.max_per_channel
        if excess > 0:
            drop = index.weakest(excess, now=now, half_life_days=self.half_life_days)
            await self.store.delete_facts(drop)
            index.remove(drop)
            index.rebuild()

    async def forget_decayed(self, now: datetime) -> int:
        """Delete facts whose confidence × decay fell below FORGET_BELOW."""
        removed = 0
        for index in self._indexes.values():
            drop = index.decayed(FORGET_BELOW, now=now, half_life_days=self.half_life_days)
            if drop:
                await self.store.delete_facts(drop)
                removed += index.remove(drop)
                index.rebuild()
        return removed

    # --- reading -----------------------------------------------------------------------------

    def search(
        self,
        channel: Channel,
        text: str,
        *,
        now: datetime,
        speaker: str | None = None,
        limit: int = 3,
        shareable_only: bool = False,
        exclude: set[int] | frozenset[int] = frozenset(),
        min_relevance: float | None = None,
    ) -> list[FactHit]:
        """The facts most related to ``text`` that may be shown in ``channel``."""
        query = keyword_set(keywords(text))
        vector = self.embed(text)
        hits: list[FactHit] = []
        for source_id, index in self._indexes.items():
            if not index.facts or not self._allowed(channel, source_id, index.facts[0]):
                continue
            found = index.search(
                query,
                vector,
                now=now,
                half_life_days=self.half_life_days,
                speaker=speaker,
                limit=limit,
                shareable_only=shareable_only,
                exclude=exclude,
                min_relevance=MIN_RELEVANCE if min_relevance is None else min_relevance,
            )
            # Belt and braces: every hit is checked on its own record as well.
            hits += [h for h in found if self._allowed(channel, source_id, h.fact)]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def _allowed(self, channel: Channel, source_id: str, fact: FactRecord) -> bool:
        return may_show(
            channel,
            source_channel_id=fact.source_channel_id or source_id or None,
            visibility=fact.visibility,
            workspace=fact.workspace,
            registry=self.registry,
        )

    def visible_in(self, channel: Channel) -> list[FactRecord]:
        """Every fact a prompt (or a memory panel) for ``channel`` may show."""
        return [
            f for source_id, index in self._indexes.items() for f in index.facts
            if self._allowed(channel, source_id, f)
        ]

    def about_user(self, user_id: str) -> list[FactRecord]:
        return [f for f in self.all_facts() if user_id in f.source_user_ids]
