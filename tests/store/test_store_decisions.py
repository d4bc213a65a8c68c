"""Decisions with their trace JSON, and processed-event de-duplication."""

from __future__ import annotations

from datetime import timedelta

from storekit import GENERAL, T0, decision, msg

from kuuki.domain import ActionKind, Stage
from kuuki.store import Store


async def test_decision_round_trip_with_trace(store: Store) -> None:
    m = msg("m1", "@kuuki what time is it?", thread="t1")
    d = decision(m)
    await store.messages.save_decision(d)
    got = await store.browse.decision_for("m1")
    assert got is not None
    assert got["message_id"] == "m1" and got["channel_id"] == GENERAL.id
    assert got["action"] == "reply" and got["action_text"] == "sure!"
    assert got["thread"] == "t1" and got["reply_to"] == "m1" and got["emoji"] is None
    assert got["stage"] == "llm" and got["reason"] == "addressed directly"
    assert got["score"] == 3.25 and got["llm_calls"] == 1
    assert got["decided_at"] == d.decided_at
    expected = d.trace.to_dict()
    expected["llm_calls"][0]["prompt"] = "p\ufffdq\ufffd"  # NUL and lone surrogate cleaned
    assert got["trace"] == expected
    assert await store.browse.decision_for("nope") is None


async def test_latest_decision_per_channel_and_overall(store: Store) -> None:
    assert await store.browse.latest_decision() is None
    a = decision(msg("m1"), kind=ActionKind.NONE, stage=Stage.LOCAL)
    b = decision(msg("m2", channel="c-2", minutes=1), kind=ActionKind.REACT)
    c = decision(msg("m1"), kind=ActionKind.REPLY, minutes=5)  # reconsidered later
    await store.messages.save_decisions([a, b, c])
    await store.messages.save_decisions([])
    latest = await store.browse.latest_decision()
    assert latest is not None and latest["message_id"] == "m1" and latest["action"] == "reply"
    in_c2 = await store.browse.latest_decision("c-2")
    assert in_c2 is not None and in_c2["action"] == "react" and in_c2["emoji"] == "👍"
    for_m1 = await store.browse.decision_for("m1")
    assert for_m1 is not None and for_m1["action"] == "reply"


async def test_event_dedupe(store: Store) -> None:
    assert await store.inbox.mark_event("ev-1", T0)
    assert not await store.inbox.mark_event("ev-1", T0 + timedelta(seconds=1))
    assert await store.inbox.mark_event("ev-2", T0)
    assert await store.writer.mark_event("ev-3", T0)
    assert not await store.writer.mark_event("ev-3", T0)
    assert not await store.inbox.mark_event("ev-3", T0)  # pending in the writer counts as seen
    assert not await store.writer.mark_event("ev-1", T0)


async def test_taken_in_names_the_ids_already_stored_in_the_order_asked(store: Store) -> None:
    assert await store.inbox.taken_in(["ev-1", "ev-2"]) == []
    assert await store.inbox.mark_event("ev-2", T0)
    assert await store.writer.mark_event("ev-4", T0)  # still in the writer: counts
    many = [f"x-{i}" for i in range(1200)]  # more than one IN (...) chunk
    assert await store.inbox.taken_in(["ev-4", "ev-1", *many, "ev-2", "ev-2"]) == ["ev-4", "ev-2"]


async def test_event_dedupe_beyond_the_memory_cache(store_url: str) -> None:
    s = await Store.open(store_url, event_cache_size=2)
    try:
        for i in range(6):
            assert await s.inbox.mark_event(f"ev-{i}", T0 + timedelta(seconds=i))
    finally:
        await s.close()
    s = await Store.open(store_url, event_cache_size=2)
    try:
        # Only the newest two ids are cached; older ones must come from the database.
        assert not await s.inbox.mark_event("ev-0", T0)
        assert not await s.writer.mark_event("ev-1", T0)
        assert await s.writer.mark_event("ev-new", T0)
        assert not await s.writer.mark_event("ev-new", T0)
        await s.writer.flush()
        assert await s.inbox.prune_events(T0 + timedelta(seconds=3)) == 4  # ev-0..2, ev-new
        assert await s.inbox.mark_event("ev-0", T0)  # forgotten, so new again
    finally:
        await s.close()
