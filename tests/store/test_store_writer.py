"""The write-behind batcher: flushing, read-your-writes, triggers, failures, close.

The writer's delay runs on a virtual clock (nothing is flushed by time unless the test
moves it) and its commits fail on command (kuuki.testing.faults.FaultyStore)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from storekit import GENERAL, T0, decision, msg

from kuuki.clock import VirtualClock
from kuuki.errors import StoreError
from kuuki.store import Store
from kuuki.store.schema import DecisionRow, MessageRow, ProcessedEventRow
from kuuki.testing.faults import FaultyStore


async def count(store: Store, model: Any) -> int:
    async with store.engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(model)) or 0)


@pytest.fixture
async def slow_store(store_url: str) -> Any:
    """A store whose writer only flushes when asked (or when 10 items queue up): its
    delay is on a clock that never moves."""
    s = await FaultyStore.open(store_url, batch_size=10, batch_delay=0.05,
                               clock=VirtualClock())
    try:
        yield s
    finally:
        await s.close()


async def test_flush_writes_everything_in_one_go(slow_store: Store) -> None:
    w = slow_store.writer
    for i in range(4):  # 9 items: just under the batch size of 10
        m = msg(f"m{i}", minutes=i)
        assert await w.mark_event(f"ev{i}", T0)
        await w.add_message(m)
        await w.add_message(m)  # duplicate in the queue
    await w.add_decision(decision(msg("m0")))
    assert len(w) == 9
    assert await count(slow_store, MessageRow) == 0
    assert await w.flush() == 4
    assert len(w) == 0 and w.stats.flushes == 1
    assert await count(slow_store, MessageRow) == 4
    assert await count(slow_store, ProcessedEventRow) == 4
    assert await count(slow_store, DecisionRow) == 1
    assert await w.flush() == 0  # nothing left


async def test_already_stored_ids_are_ignored_on_flush(slow_store: Store) -> None:
    await slow_store.messages.add_message(msg("m1", "stored"))
    await slow_store.writer.add_message(msg("m1", "again"))
    await slow_store.writer.add_message(msg("m2"))
    assert await slow_store.writer.flush() == 1
    got = await slow_store.messages.get_message("m1")
    assert got is not None and got.text == "stored"


async def test_reads_see_pending_writes(slow_store: Store) -> None:
    await slow_store.messages.add_message(msg("m0", "stored"))
    w = slow_store.writer
    for i in range(1, 4):
        await w.add_message(msg(f"m{i}", f"pending {i}", minutes=i))
    await w.add_message(msg("gone", deleted=True, minutes=9))
    assert await slow_store.messages.get_message("m2") == msg("m2", "pending 2", minutes=2)
    recent = await slow_store.messages.recent_messages(GENERAL.id, limit=3)
    assert [m.id for m in recent] == ["m1", "m2", "m3"]
    assert await count(slow_store, MessageRow) == 1  # still only the stored one
    # Reads that depend on queued rows flush first.
    await w.add_decision(decision(msg("m3")))
    got = await slow_store.browse.decision_for("m3")
    assert got is not None and got["message_id"] == "m3"
    assert await slow_store.messages.edit_message("m1", "edited")
    edited = await slow_store.messages.get_message("m1")
    assert edited is not None and edited.edited and edited.text == "edited"


async def test_full_batch_flushes_without_being_asked(slow_store: FaultyStore) -> None:
    for i in range(9):
        await slow_store.writer.add_message(msg(f"m{i}", minutes=i))
    assert slow_store.writes.passed == 0  # not full yet
    await slow_store.writer.add_message(msg("m9", minutes=9))
    await slow_store.writes.wait(passed=1)  # the tenth started a commit in the background
    assert await count(slow_store, MessageRow) == 10
    for i in range(10, 50):  # a burst: producers wait once 4 batches are queued
        await slow_store.writer.add_message(msg(f"m{i}", minutes=i))
    await slow_store.writer.flush()
    assert await count(slow_store, MessageRow) == 50


async def test_timer_flushes_after_the_delay(store_url: str) -> None:
    clock = VirtualClock()
    s = await Store.open(store_url, batch_size=1000, batch_delay=0.05, clock=clock)
    try:
        await s.writer.add_message(msg("m1"))
        await clock.advance(0.04)
        assert await count(s, MessageRow) == 0 and len(s.writer) == 1
        await clock.advance(0.01)  # the delay has passed: written (the clock waits for it)
        assert await count(s, MessageRow) == 1 and len(s.writer) == 0
    finally:
        await s.close()


async def test_close_flushes_and_then_refuses(store_url: str) -> None:
    s = await Store.open(store_url, batch_size=100, batch_delay=60)
    await s.writer.add_message(msg("m1"))
    await s.writer.add_decision(decision(msg("m1")))
    await s.close()
    with pytest.raises(StoreError, match="closed"):
        await s.writer.add_message(msg("m2"))
    s2 = await Store.open(store_url)
    try:
        assert await s2.messages.get_message("m1") == msg("m1")
        assert await s2.browse.decision_for("m1") is not None
    finally:
        await s2.close()
    s3 = await Store.open(store_url)
    await s3.close()
    with pytest.raises(StoreError, match="closed"):
        _ = s3.writer


async def test_failed_batch_is_kept_and_retried(slow_store: FaultyStore) -> None:
    slow_store.writes.fail(times=1, error=RuntimeError("disk on fire"))
    await slow_store.writer.add_message(msg("m1"))
    with pytest.raises(StoreError, match="disk on fire"):
        await slow_store.writer.flush()
    assert len(slow_store.writer) == 1 and slow_store.writer.stats.failures == 1
    assert await slow_store.messages.get_message("m1") == msg("m1")  # still visible while queued
    await slow_store.writer.add_message(msg("m2", minutes=1))
    assert await slow_store.writer.flush() == 2
    assert (slow_store.writes.failed, slow_store.writes.passed) == (1, 1)
    assert [m.id for m in await slow_store.messages.recent_messages(GENERAL.id)] == ["m1", "m2"]


async def test_timed_flush_failure_retries_in_background(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = VirtualClock()
    s = await FaultyStore.open(store_url, batch_size=1000, batch_delay=0.02, clock=clock)
    try:
        s.writes.fail(times=1, error=RuntimeError("transient"))
        await s.writer.add_message(msg("m1"))
        await clock.advance(0.02)  # the timed flush fails: logged, retried after 0.04 s
        assert s.writer.stats.failures == 1 and "transient" in caplog.text
        assert await count(s, MessageRow) == 0 and len(s.writer) == 1
        await clock.advance(0.03)
        assert await count(s, MessageRow) == 0
        await clock.advance(0.01)
        assert await count(s, MessageRow) == 1 and len(s.writer) == 0
        assert (s.writes.failed, s.writes.passed) == (1, 1)
    finally:
        await s.close()
