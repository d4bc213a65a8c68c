"""Memories, facts with embeddings, the proactive ledger, and forgetting a user."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from storekit import ANN, BOB, GENERAL, T0

from kuuki.domain import Visibility
from kuuki.store import Store


async def test_memory_set_get_replace(store: Store) -> None:
    await store.memories.set_memory(
        "channel",
        GENERAL.id,
        "summary",
        {"text": "planning the offsite", "topics": ["offsite"]},
        visibility=Visibility.PUBLIC,
        workspace="acme",
        source_channel_id=GENERAL.id,
        source_user_ids=[ANN.id, BOB.id],
        at=T0,
    )
    mem = await store.memories.get_memory("channel", GENERAL.id, "summary")
    assert mem is not None
    assert mem.content == {"text": "planning the offsite", "topics": ["offsite"]}
    assert mem.visibility is Visibility.PUBLIC and mem.workspace == "acme"
    assert mem.source_user_ids == (ANN.id, BOB.id) and mem.updated_at == T0
    await store.memories.set_memory("channel", GENERAL.id, "summary", "replaced", at=T0 + timedelta(1))
    mem = await store.memories.get_memory("channel", GENERAL.id, "summary")
    assert mem is not None and mem.content == "replaced"
    assert mem.visibility is Visibility.PRIVATE  # the fail-closed default
    assert len(await store.memories.memories("channel")) == 1


async def test_memories_listing_and_delete(store: Store) -> None:
    await store.memories.set_memory("user", ANN.id, "profile", {"likes": ["tea"]}, at=T0)
    await store.memories.set_memory("user", ANN.id, "short_term", [1, 2, 3], at=T0 + timedelta(1))
    await store.memories.set_memory("user", BOB.id, "profile", {"likes": []}, at=T0 + timedelta(2))
    await store.memories.set_memory("thread", "t1", "summary", 42, at=T0)
    assert [m.kind for m in await store.memories.memories("user", ANN.id)] == ["profile", "short_term"]
    assert [m.scope_id for m in await store.memories.memories("user", kind="profile")] == [ANN.id, BOB.id]
    assert (await store.memories.memories("thread"))[0].content == 42
    assert await store.memories.delete_memory("user", ANN.id, "short_term")
    assert not await store.memories.delete_memory("user", ANN.id, "short_term")
    assert await store.memories.get_memory("user", ANN.id, "short_term") is None
    with pytest.raises(ValueError, match="scope 'galaxy'"):
        await store.memories.memories("galaxy")


async def test_facts_with_embeddings_and_ledger(store: Store) -> None:
    vec = np.linspace(-1, 1, 512, dtype=np.float64)
    fid = await store.facts.add_fact(
        "Ann's birthday is in May",
        source_channel_id=GENERAL.id,
        source_user_ids=[ANN.id],
        keywords=["birthday", "may"],
        embedding=vec,
        confidence=0.8,
        shareable=False,
        visibility=Visibility.PUBLIC,
        workspace="acme",
        at=T0,
    )
    other = await store.facts.add_fact("no vector", source_channel_id=None, source_user_ids=[], at=T0)
    facts = await store.facts.facts(workspace="acme")
    assert [f.id for f in facts] == [fid]
    fact = facts[0]
    assert fact.embedding is not None and fact.embedding.dtype == np.float32
    assert np.allclose(fact.embedding, vec.astype(np.float32))
    assert fact.keywords == ("birthday", "may") and not fact.shareable
    assert fact.confidence == pytest.approx(0.8) and fact.last_used_at is None
    assert [f.id for f in await store.facts.facts(shareable_only=True)] == [other]
    await store.facts.touch_fact(fid, T0 + timedelta(hours=1))
    assert (await store.facts.facts(workspace="acme"))[0].last_used_at == T0 + timedelta(hours=1)
    await store.facts.record_proactive(fid, GENERAL.id, T0)
    await store.facts.record_proactive(fid, GENERAL.id, T0 + timedelta(hours=2))
    assert await store.facts.proactive_count(GENERAL.id, T0 + timedelta(hours=1)) == 1
    assert await store.facts.proactive_count(GENERAL.id, T0, fact_id=fid) == 2
    assert await store.facts.proactive_count(GENERAL.id, T0, fact_id=other) == 0


async def test_forget_user_drops_what_is_theirs_or_quotes_them(store: Store) -> None:
    await store.memories.set_memory("user", ANN.id, "profile", {"likes": ["tea"]})
    await store.memories.set_memory("user", ANN.id, "short_term", ["x"])
    await store.memories.set_memory("channel", "c1", "summary", "ann talked", source_user_ids=[ANN.id])
    await store.memories.set_memory("channel", "c2", "summary", "both", source_user_ids=[ANN.id, BOB.id])
    await store.memories.set_memory("user", BOB.id, "profile", {"likes": ["ann-related"]})
    await store.memories.set_memory("channel", "c3", "summary", "nobody", source_user_ids=[])
    ann_fact = await store.facts.add_fact("ann only", source_channel_id="c1", source_user_ids=[ANN.id])
    await store.facts.add_fact("both", source_channel_id="c1", source_user_ids=[BOB.id, ANN.id])
    bob = await store.facts.add_fact("bob only", source_channel_id="c1", source_user_ids=[BOB.id])
    await store.facts.record_proactive(ann_fact, "c1", T0)

    gone = await store.forgetting.forget_user(ANN.id)
    # her 2 user memories, the c1 and the shared c2 summary; her fact and the shared one
    assert (gone.memories, gone.facts, gone.messages, gone.total) == (4, 2, 0, 6)
    assert await store.memories.memories("user", ANN.id) == []
    assert await store.memories.get_memory("channel", "c1", "summary") is None
    assert await store.memories.get_memory("channel", "c2", "summary") is None
    assert await store.memories.get_memory("user", BOB.id, "profile") is not None
    assert await store.memories.get_memory("channel", "c3", "summary") is not None
    assert [f.id for f in await store.facts.facts()] == [bob]
    assert await store.facts.proactive_count("c1", T0) == 0  # ledger rows went with the fact
    assert (await store.forgetting.forget_user(ANN.id)).total == 0
    assert set(await store.forgetting.forgotten_users()) == {ANN.id}
