"""The intake's refusals keep each channel gap-free (kuuki.engine.intake, issue 11)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from kuuki.clock import VirtualClock
from kuuki.domain import Channel, ChatEvent, EventKind, Message, User
from kuuki.engine.intake import Intake
from kuuki.errors import IntakeUnavailable
from kuuki.testing.faults import FlakyInbox

A, B = Channel("a", "a"), Channel("b", "b")
T0 = datetime(2026, 1, 5, 10, tzinfo=UTC)


def posted(channel: Channel, mid: str) -> ChatEvent:
    m = Message(mid, channel.id, User("u", "u"), "hi", T0)
    return ChatEvent(EventKind.POSTED, channel, mid, T0, message=m)


async def test_once_an_event_is_refused_later_ones_of_its_channel_are_too_until_reopened(
) -> None:
    # The patience runs on a virtual clock: each retry happens when the test moves it.
    clock = VirtualClock()
    inbox = FlakyInbox()
    inbox.admits.fail()  # the store is down
    intake = Intake(inbox, lambda events: None, patience_s=0.04, clock=clock)
    intake.close_on_refusal = True
    old = intake.submit(posted(A, "a1"))
    await inbox.admits.wait(failed=1)  # tried at once, retried 0.05 s later
    await clock.advance(0.03)
    young_a, young_b = intake.submit(posted(A, "a2")), intake.submit(posted(B, "b1"))
    await clock.advance(0.02)  # the retry fails: a1's patience has run out, not a2's
    assert inbox.admits.failed == 2
    assert isinstance(old.exception(), IntakeUnavailable)
    # refused with a1, though its own patience had not run out
    assert isinstance(young_a.exception(), IntakeUnavailable)
    a3 = intake.submit(posted(A, "a3"))
    assert isinstance(a3.exception(), IntakeUnavailable)  # at once: the channel is closed
    assert not young_b.done()  # another channel is not held: b1 waits for the next try
    inbox.admits.heal()
    await clock.advance(0.1)  # the backoff doubled
    assert young_b.result() is True
    intake.reopen(["a"])  # the adapter reads the channel back
    assert await intake.submit(posted(A, "a4")) is True
    assert inbox.stored == ["b1", "a4"]
    assert inbox.admits.failed == 2


async def test_the_submitter_resumes_first_and_finds_its_events_delivered() -> None:
    # The platform is woken ahead of the channel work its events start, so the next
    # events are submitted (and committed) while the engine works; and by then what was
    # acknowledged is already queued.
    inbox = FlakyInbox()
    work: asyncio.Queue[ChatEvent] = asyncio.Queue()
    order: list[str] = []

    def deliver(events: list[ChatEvent]) -> None:
        for e in events:
            work.put_nowait(e)

    waiting = asyncio.Event()

    async def channel() -> None:
        waiting.set()
        await work.get()
        order.append("channel")

    worker = asyncio.create_task(channel())
    await waiting.wait()  # the channel waits on its queue, as the engine's do
    intake = Intake(inbox, deliver)
    assert await intake.submit(posted(A, "a1")) is True
    order.append("platform")
    assert work.qsize() == 1  # delivered before the platform resumed
    await worker
    assert order == ["platform", "channel"]
