"""A store outage on Slack: what the store refused is read back once it answers, and every
message read back that was never decided is decided — a mention is answered once, the
channel's first message included; what the store failed under mid-way (an event taken in,
the caught-up marker) is handled once it answers, without a restart (kuuki.platforms.retry,
issue 24)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.platforms import retry
from kuuki.platforms.slack.mapping import ts_of
from kuuki.settings import Settings
from kuuki.testing.faults import Fault, FaultyStore
from kuuki.testing.slack_driver import SlackDriver


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_PAUSE_S", 0.05)


@pytest.fixture
async def driver(tmp_path: Path) -> AsyncIterator[SlackDriver]:
    d = SlackDriver(faulty_store=True)
    await d.start(
        replace(Settings(), store_url=f"sqlite:///{tmp_path}/s.sqlite3", catch_up_minutes=10)
    )
    d.server.redeliver_after = 0.2  # Slack retries an unacknowledged event, then gives up
    d.app.engine.intake.patience_s = 0  # a commit that fails is refused at once
    try:
        yield d
    finally:
        await d.stop()


def faults(driver: SlackDriver) -> FaultyStore:
    assert driver.faults is not None
    return driver.faults


async def slack_gave_up(driver: SlackDriver, envelopes: int) -> None:
    """Wait until the store refused and Slack has given up on the ``envelopes`` refused:
    only reading the channel back can bring them in now."""
    await faults(driver).wait_refused()
    server = driver.server
    await server.wait_for(lambda: len(server.given_up) >= envelopes)


async def outlast_slacks_retries(driver: SlackDriver, envelopes: int) -> None:
    """The store stays down until Slack has given up on the ``envelopes`` refused."""
    await slack_gave_up(driver, envelopes)
    faults(driver).down = False




async def answered_once(driver: SlackDriver, asked: str, text: str) -> None:
    """``asked`` got exactly one reply, ``text``, is stored and has one decision."""
    [answer] = await driver.wait_bot_messages(1)
    await faults(driver).wait_handled()  # nothing left in the inbox: it was all decided
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == [text]
    assert answer.raw["metadata"]["event_payload"]["reply_to"] == ts_of(asked)
    store = driver.app.store
    assert await store.get_message(asked) is not None
    [decision] = await store.decisions_for(asked)
    assert decision["action"] == "reply"
    assert await store.pending_events() == []


async def test_a_channels_first_message_refused_by_an_outage_is_answered_once(
    driver: SlackDriver,
) -> None:
    """The channel is new to the store: its first message, a mention, is refused. Read back
    as a channel never seen (a first look) it was recorded as history, never judged."""
    store = driver.app.store
    assert await store.channels() == []  # the start-up look found the channel empty
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    faults(driver).down = True
    asked = await driver.say("alice", "anyone there?", mention_bot=True)
    await outlast_slacks_retries(driver, 2)  # `message` and `app_mention`
    await answered_once(driver, asked, "Here now, sorry for the wait.")


async def test_a_first_message_in_a_thread_refused_by_an_outage_is_answered_once(
    driver: SlackDriver,
) -> None:
    """The channel's first message reaches the bot in a thread whose root it never saw
    (said before it joined, as when someone calls it into a thread): reading the channel
    from the refused message finds top-level messages only, so the thread is read too."""
    general = driver.channel_id()
    root = driver.server.user_message(driver.user_id("bob"), general, "release notes")
    driver.llm.enqueue("The notes look fine.", purpose="reply")
    faults(driver).down = True
    asked = await driver.say("alice", "can you check them?", mention_bot=True,
                             thread=f"{general}:{root['ts']}")
    await outlast_slacks_retries(driver, 2)
    await answered_once(driver, asked, "The notes look fine.")
    [answer] = driver.bot_messages
    assert answer.thread == f"{general}:{root['ts']}"


async def test_a_mention_whose_commit_was_lost_is_answered_without_a_restart(
    driver: SlackDriver,
) -> None:
    """The connection broke after COMMIT: the mention is in the store's inbox, and the bot
    was told it was refused. Its redelivery and its read-back are then "taken in before";
    it waited for the next start."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    faults(driver).ambiguous = 1
    asked = await driver.say("alice", "is the build green?", mention_bot=True)
    await faults(driver).wait_refused()
    await answered_once(driver, asked, "Yes, the build is green.")


@pytest.mark.parametrize("adds", ["message_adds", "decision_adds"])
async def test_a_mention_whose_handling_the_store_failed_under_is_answered_once_it_is_back(
    driver: SlackDriver, adds: str
) -> None:
    """The mention was taken in, and the database went away while it was handled: as it
    was recorded (``message_adds``: not yet decided) or once the answer was sent
    (``decision_adds``). It stayed in the inbox until the next start; now it is handled
    again once the store answers, answered once, and a restart answers nothing again."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    fault: Fault = getattr(faults(driver), adds)
    failed = fault.fail_once()
    asked = await driver.say("alice", "is the build green?", mention_bot=True)
    await faults(driver).goes_away_at(fault, failed)
    await answered_once(driver, asked, "Yes, the build is green.")
    await driver.restart()
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == ["Yes, the build is green."]
    assert len(await driver.app.store.decisions_for(asked)) == 1
    assert await driver.app.store.pending_events() == []


async def test_owed_answers_are_given_when_the_caught_up_marker_met_the_store_down(
    driver: SlackDriver,
) -> None:
    """A mention refused by an outage is read back once the store answers, and the store
    goes away again just as the caught-up marker asks what was already decided: the owed
    answer waited for another marker, which came only with another outage or a restart."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    faults(driver).down = True
    asked = await driver.say("alice", "anyone there?", mention_bot=True)
    await slack_gave_up(driver, 2)
    store = faults(driver)
    store.down = False
    await faults(driver).goes_away_at(store.marker_reads, store.marker_reads.fail_once())
    await answered_once(driver, asked, "Here now, sorry for the wait.")
