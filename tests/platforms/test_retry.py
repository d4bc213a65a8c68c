"""The retrier reads a channel back from where its loss began (kuuki.platforms.retry)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

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

    async def catch_up(ids: Sequence[str], starts: Mapping[str, str | None]) -> None:
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
