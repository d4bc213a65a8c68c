"""The faults tests use (kuuki.testing.faults): they fail exactly as told, and the counts
a test waits on are the calls' own."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User
from kuuki.errors import StoreError
from kuuki.testing.faults import Fault, FaultyStore, FlakyInbox

GENERAL = Channel("general", "general")
T0 = datetime(2026, 1, 5, 10, tzinfo=UTC)


def posted(mid: str) -> ChatEvent:
    m = Message(mid, GENERAL.id, User("u1", "ann"), "hi", T0)
    return ChatEvent(EventKind.POSTED, GENERAL, mid, T0, message=m)


async def test_a_fault_fails_the_calls_it_was_told_to_then_lets_them_through() -> None:
    fault = Fault("a call")
    fault.check()  # nothing fails until told
    fault.fail(times=2, error=RuntimeError("disk on fire"))
    for _ in range(2):
        with pytest.raises(RuntimeError, match="disk on fire"):
            fault.check()
    fault.check()
    fault.fail()  # until healed
    for _ in range(3):
        with pytest.raises(ConnectionRefusedError, match="a call: the database is down"):
            fault.check()
    assert fault.failing
    fault.heal()
    fault.check()
    assert (fault.failed, fault.failing) == (5, False)
    with pytest.raises(ValueError, match="times must be at least 1"):
        fault.fail(times=0)


async def test_waiting_on_a_fault_ends_at_the_count_or_says_what_never_came() -> None:
    fault = Fault("a call")

    async def two_calls() -> None:  # run after the waiter is waiting
        fault.went_through()
        fault.went_through()

    await asyncio.gather(fault.wait(passed=2), two_calls())
    with pytest.raises(AssertionError, match="waited for 0 failed and 3 passed calls, saw 0 and 2"):
        await fault.wait(passed=3, give_up_s=0)
    with pytest.raises(AssertionError, match="waited for 1 failed and 0 passed calls, saw 0 and 2"):
        await fault.wait(failed=1, give_up_s=0)


async def test_a_faulty_store_refuses_commits_and_stores_nothing_of_them(tmp_path: Path) -> None:
    store = await FaultyStore.open(f"sqlite:///{tmp_path / 'k.sqlite3'}")
    try:
        store.admits.fail(times=1)
        with pytest.raises(ConnectionRefusedError):
            await store.inbox.admit_events([posted("m1")])
        assert await store.inbox.admit_events([posted("m1")]) == {"m1"}
        store.writes.fail(times=1)
        event = posted("m1")
        assert event.message is not None
        await store.writer.add_message(event.message)
        with pytest.raises(Exception, match="the database is down"):
            await store.writer.flush()
        assert len(store.writer) == 1  # kept for the next commit
        assert await store.writer.flush() == 1
        assert (store.admits.failed, store.admits.passed) == (1, 1)
        assert (store.writes.failed, store.writes.passed) == (1, 1)
    finally:
        await store.close()


async def test_a_flaky_inbox_takes_an_id_in_once() -> None:
    inbox = FlakyInbox()
    assert await inbox.admit_events([posted("a"), posted("b"), posted("a")]) == {"a", "b"}
    inbox.admits.fail(times=1)
    with pytest.raises(ConnectionRefusedError):
        await inbox.admit_events([posted("c")])
    assert await inbox.admit_events([posted("b"), posted("c")]) == {"c"}
    assert inbox.stored == ["a", "b", "c"]


async def test_the_engines_adds_fail_as_a_full_backlogs_flush_does(tmp_path: Path) -> None:
    """A failed add raises StoreError and keeps its row queued; the marker's reads fail on
    their own fault and with ``down``; `wait_handled` ends once the inbox is handled."""
    store = await FaultyStore.open(f"sqlite:///{tmp_path / 'k.sqlite3'}")
    try:
        event = posted("m1")
        assert event.message is not None
        store.message_adds.fail(times=1)
        with pytest.raises(StoreError, match="batched write failed: ConnectionRefusedError"):
            await store.writer.add_message(event.message)
        assert len(store.writer) == 1  # queued all the same
        await store.writer.add_message(event.message)
        assert (store.message_adds.failed, store.message_adds.passed) == (1, 1)
        assert store.decision_adds.failed == 0
        store.marker_reads.fail(times=1)
        with pytest.raises(ConnectionRefusedError):
            await store.history.decided(["m1"])
        assert await store.history.decided(["m1"]) == set()
        store.down = True
        with pytest.raises(StoreError, match="the database is unreachable"):
            await store.history.answered(["m1"], ["bot"])
        store.down = False
        assert await store.inbox.admit_events([event]) == {"m1"}
        with pytest.raises(AssertionError, match=r"not handled: \['m1'\]"):
            await store.wait_handled(give_up_s=0)
        handling = asyncio.ensure_future(store.wait_handled())
        await store.writer.handled("m1")
        await store.writer.flush()
        await handling
    finally:
        await store.close()
