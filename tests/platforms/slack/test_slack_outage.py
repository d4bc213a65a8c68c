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
from kuuki.settings import Settings
from kuuki.testing.outage import answered_once, faults_of, refused_for_good
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


async def outlast_slacks_retries(driver: SlackDriver, envelopes: int) -> None:
    """The store stays down until Slack has given up on the ``envelopes`` refused."""
    await refused_for_good(driver, envelopes)
    faults_of(driver).down = False


async def test_a_channels_first_message_refused_by_an_outage_is_answered_once(
    driver: SlackDriver,
) -> None:
    """The channel is new to the store: its first message, a mention, is refused. Read back
    as a channel never seen (a first look) it was recorded as history, never judged."""
    store = driver.app.store
    assert await store.roster.channels() == []  # the start-up look found the channel empty
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    faults_of(driver).down = True
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
    faults_of(driver).down = True
    asked = await driver.say("alice", "can you check them?", mention_bot=True,
                             thread=f"{general}:{root['ts']}")
    await outlast_slacks_retries(driver, 2)
    await answered_once(driver, asked, "The notes look fine.")
    [answer] = driver.bot_messages
    assert answer.thread == f"{general}:{root['ts']}"
