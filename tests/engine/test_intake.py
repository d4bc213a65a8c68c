"""The intake's refusals keep each channel gap-free (kuuki.engine.intake, issue 11)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from kuuki.domain import Channel, ChatEvent, EventKind, Message, User
from kuuki.engine.intake import Intake
from kuuki.errors import IntakeUnavailable
from kuuki.testing.faulty_store import FlakyInbox

A, B = Channel("a", "a"), Channel("b", "b")
T0 = datetime(2026, 1, 5, 10, tzinfo=UTC)


def posted(channel: Channel, mid: str) -> ChatEvent:
    m = Message(mid, channel.id, User("u", "u"), "hi", T0)
    return ChatEvent(EventKind.POSTED, channel, mid, T0, message=m)


async def test_once_an_event_is_refused_later_ones_of_its_channel_are_too_until_reopened(
) -> None:
    inbox = FlakyInbox()
    intake = Intake(inbox, lambda events: None, patience_s=0.05)
    intake.close_on_refusal = True
    old = intake.submit(posted(A, "a1"))
    await asyncio.sleep(0.06)  # a1's patience runs out while the store is down
    young_a, young_b = intake.submit(posted(A, "a2")), intake.submit(posted(B, "b1"))
    with pytest.raises(IntakeUnavailable):
        await old
    with pytest.raises(IntakeUnavailable):
        await young_a  # refused with a1, though its own patience had not run out
    with pytest.raises(IntakeUnavailable):
        await intake.submit(posted(A, "a3"))  # the channel stays closed
    inbox.down = False
    assert await young_b is True  # another channel is not held
    intake.reopen(["a"])  # the adapter reads the channel back
    assert await intake.submit(posted(A, "a4")) is True
    assert inbox.stored == ["b1", "a4"]


async def test_the_submitter_resumes_first_and_finds_its_events_delivered() -> None:
    # The platform is woken ahead of the channel work its events start, so the next
    # events are submitted (and committed) while the engine works; and by then what was
    # acknowledged is already queued.
    inbox = FlakyInbox(down=False)
    work: asyncio.Queue[ChatEvent] = asyncio.Queue()
    order: list[str] = []

    def deliver(events: list[ChatEvent]) -> None:
        for e in events:
            work.put_nowait(e)

    async def channel() -> None:
        await work.get()
        order.append("channel")

    worker = asyncio.create_task(channel())
    await asyncio.sleep(0)  # the channel waits on its queue, as the engine's do
    intake = Intake(inbox, deliver)
    assert await intake.submit(posted(A, "a1")) is True
    order.append("platform")
    assert work.qsize() == 1  # delivered before the platform resumed
    await worker
    assert order == ["platform", "channel"]
