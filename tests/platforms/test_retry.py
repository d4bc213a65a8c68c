"""The retrier reads a channel back from where its loss began (kuuki.platforms.retry)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User, Visibility
from kuuki.platforms import retry
from kuuki.platforms.retry import Retrier


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_PAUSE_S", 0.01)


async def test_a_channel_is_read_from_the_last_message_taken_before_the_first_refusal() -> None:
    taken = {"general": "m5"}
    rounds: list[tuple[list[str], dict[str, str | None]]] = []
    fail = [True]
    done = asyncio.Event()

    async def catch_up(
        ids: Sequence[str], starts: Mapping[str, str | None], refused: Mapping[str, str]
    ) -> None:
        rounds.append((list(ids), dict(starts)))
        if fail[0]:
            fail[0] = False
            raise ConnectionRefusedError("the store is down")
        done.set()

    retrier = Retrier(catch_up, name="test", start_of=taken.get)
    retrier.missed(["general"])
    taken["general"] = "m9"  # live messages taken in after the outage: not the start
    retrier.missed(["general", "random"], starts={"random": None})
    assert retrier.owes("general") and not retrier.owes("elsewhere")
    await asyncio.wait_for(done.wait(), 5)
    await retrier.close()
    assert rounds[0] == (["general", "random"], {"general": "m5", "random": None})
    assert rounds[-1] == rounds[0]  # the failed round keeps the start of the first loss
    assert retrier.pending == frozenset()
    assert not retrier.owes("general")  # read back: its new events are taken in again

    # A later loss starts afresh from what was taken in by then.
    done.clear()
    retrier.missed(["general"])
    await asyncio.wait_for(done.wait(), 5)
    await retrier.close()
    assert rounds[-1] == (["general"], {"general": "m9"})


def _pending(channel: Channel, mid: int) -> ChatEvent:
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    m = Message(str(mid), channel.id, User("alice", "alice"), "hi", at)
    return ChatEvent(EventKind.POSTED, channel, str(mid), at, message=m)


def test_reading_back_starts_before_the_oldest_message_still_in_the_inbox() -> None:
    general = Channel("1", "general", Visibility.PUBLIC, "g", "discord")
    other = Channel("2", "other", Visibility.PUBLIC, "g", "discord")
    pending = [_pending(other, 10), _pending(general, 40), _pending(general, 30)]

    def start(last: str | None) -> str | None:
        return retry.start_point("1", last, pending,
                                 just_before=lambda mid: str(int(mid) - 1), order=int)

    assert start("50") == "29"  # stored past what is pending: from before the oldest
    assert start("20") == "20"
    # Nothing of the channel stored, its messages taken in still pending (handling lagged
    # when the store went down): not a first look at the newest messages, which skipped
    # those said between them and the newest.
    assert start(None) == "29"
    assert retry.start_point("3", None, pending, just_before=str, order=int) is None


async def test_a_channel_with_nothing_taken_in_is_read_from_its_first_refused_message() -> None:
    """Its first message refused (a channel new to the store): there is no message taken
    in to read after, so the adapter is told the first live message refused; a later one,
    refused while the channel is owed, does not move it, and one refused while a round
    reads (the first there) brings another round."""
    general = Channel("1", "general", Visibility.PUBLIC, "g", "discord")
    other = Channel("2", "other", Visibility.PUBLIC, "g", "discord")
    rounds: list[tuple[list[str], dict[str, str | None], dict[str, str]]] = []
    done = asyncio.Event()

    async def catch_up(
        ids: Sequence[str], starts: Mapping[str, str | None], refused: Mapping[str, str]
    ) -> None:
        rounds.append((list(ids), dict(starts), dict(refused)))
        if len(rounds) == 1:
            retrier.refused(_pending(other, 7), owed=True)  # its first: during the round
        else:
            done.set()

    retrier = Retrier(catch_up, name="test", start_of=lambda c: None)
    retrier.refused(_pending(general, 30))
    retrier.refused(_pending(general, 31), owed=True)  # later, refused while owed
    retrier.refused(replace(_pending(general, 20), backfill=True))  # history: no start
    retrier.missed(["2"])  # a channel that lost only events that are no message
    await asyncio.wait_for(done.wait(), 5)
    await retrier.close()
    assert rounds == [(["1", "2"], {}, {"1": "30"}), (["2"], {}, {"2": "7"})]
    assert not retrier.owes("1") and not retrier.owes("2")


async def test_a_channel_whose_work_the_store_failed_under_gets_a_round_and_owes_nothing() -> None:
    """The store failed while a channel's event (or caught-up marker) was handled: nothing
    was lost, so its live events are still taken in, and a round reopens it (the inbox
    queued again) and reads it back, tried again until the store answers."""
    calls: list[tuple[str, list[str]]] = []
    done = asyncio.Event()

    async def reopen(ids: Sequence[str]) -> None:
        calls.append(("reopen", list(ids)))
        if len(calls) == 1:
            raise ConnectionRefusedError("the store is down")

    async def catch_up(
        ids: Sequence[str], starts: Mapping[str, str | None], refused: Mapping[str, str]
    ) -> None:
        calls.append(("catch_up", list(ids)))
        assert starts == {} and refused == {}  # from the store's last message
        done.set()

    retrier = Retrier(catch_up, name="test", start_of=lambda c: "m5", reopen=reopen)
    retrier.left("general")
    assert not retrier.owes("general")
    assert retrier.pending == frozenset({"general"})
    await asyncio.wait_for(done.wait(), 5)
    await retrier.close()
    assert calls == [("reopen", ["general"]), ("reopen", ["general"]),
                     ("catch_up", ["general"])]
    assert retrier.pending == frozenset()


async def test_a_channel_due_again_after_every_round_waits_longer_each_time() -> None:
    """One event the store keeps failing under while its reads answer: each round ends
    with the channel due again, so the waits double (up to the cap) instead of reading
    the platform's history every second; a round that ends with nothing due resets them."""
    pauses: list[float] = []
    done, fifth = asyncio.Event(), asyncio.Event()

    async def catch_up(
        ids: Sequence[str], starts: Mapping[str, str | None], refused: Mapping[str, str]
    ) -> None:
        pauses.append(retrier.pause)
        if len(pauses) < 4:
            retrier.left("general")  # its work failed once more
        if len(pauses) >= 4:
            (done if len(pauses) == 4 else fifth).set()

    retrier = Retrier(catch_up, name="test", start_of=lambda c: None)
    retrier.left("general")
    await asyncio.wait_for(done.wait(), 5)
    assert pauses == [0.01, 0.02, 0.04, 0.08]
    retrier.left("general")  # later, after a round that left nothing due
    await asyncio.wait_for(fifth.wait(), 5)
    await retrier.close()
    assert pauses[4] == 0.01
