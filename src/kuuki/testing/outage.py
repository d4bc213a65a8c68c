"""What the outage tests of both platforms check and wait for (tests/platforms/*outage*):
a driver whose bot runs on a `FaultyStore` (``faulty_store=True``)."""

from __future__ import annotations

from kuuki.platforms.slack.mapping import ts_of
from kuuki.testing.conformance import PlatformDriver
from kuuki.testing.faults import FaultyStore


def faults_of(driver: PlatformDriver) -> FaultyStore:
    """The driver's faulty store (it was started with ``faulty_store=True``)."""
    faults = getattr(driver, "faults", None)
    assert isinstance(faults, FaultyStore), f"{driver.name}'s driver has no faulty store"
    return faults


async def refused_for_good(driver: PlatformDriver, envelopes: int = 2) -> None:
    """Until the store has refused a commit and the platform will not deliver it again:
    on Slack once it gave up on the ``envelopes`` refused (redelivery), on Discord (which
    never delivers again) at once. Only reading the channel back can bring them in now."""
    await faults_of(driver).wait_refused()
    if driver.name == "slack":
        server = driver.server  # type: ignore[attr-defined]
        await server.wait_for(lambda: len(server.given_up) >= envelopes)


async def answered_once(driver: PlatformDriver, asked: str, text: str) -> None:
    """``asked`` got exactly one reply, ``text``, linked to it, is stored and has one
    decision, and nothing is left in the inbox (it was all decided)."""
    [answer, *_] = await driver.wait_bot_messages(1)
    await faults_of(driver).wait_handled()
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == [text]
    if driver.name == "slack":  # the outbox's metadata names the message answered
        assert answer.raw["metadata"]["event_payload"]["reply_to"] == ts_of(asked)
    else:  # a reference to it, or a plain message when it was the latest
        assert answer.reply_to in (None, asked)
    store = driver.app.store
    assert await store.messages.get_message(asked) is not None
    [decision] = await store.browse.decisions_for(asked)
    assert decision["action"] == "reply"
    assert await store.inbox.pending_events() == []
