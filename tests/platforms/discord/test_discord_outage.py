"""A store outage on Discord: Discord never delivers an event again, so what the store
refused is read back from the channel's history once it answers; every message read back
that was never decided is decided — a mention is answered once, the channel's first
message included; what the store failed under mid-way (an event taken in, the caught-up
marker) is handled once it answers, without a restart (kuuki.platforms.retry, issue 24)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.platforms import retry
from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordDriver, DiscordServer
from kuuki.testing.outage import answered_once, faults_of

CHATTER = 60  # more than a first look's newest 50


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_PAUSE_S", 0.05)


@pytest.fixture
async def server() -> DiscordServer:
    return DiscordServer(bot_name="Kuu")


@pytest.fixture
async def driver(server: DiscordServer, tmp_path: Path) -> AsyncIterator[DiscordDriver]:
    d = DiscordDriver(server, faulty_store=True)
    await d.start(
        replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3", catch_up_minutes=10)
    )
    d.app.engine.intake.patience_s = 0  # a commit that fails is refused at once
    try:
        yield d
    finally:
        await d.stop()


async def test_a_channels_first_message_refused_by_an_outage_is_answered_once(
    driver: DiscordDriver,
) -> None:
    """The channel is new to the store; its first message, a mention, is refused, and the
    channel keeps talking while the store is down. Read as a channel never seen (its
    newest 50 messages), the mention and the ten after it were skipped for good."""
    store = driver.app.store
    assert await store.roster.channels() == []
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    faults_of(driver).down = True
    asked = await driver.say("alice", "anyone there?", mention_bot=True)
    await faults_of(driver).wait_refused()
    chatter = [await driver.say("bob", f"chatter {i} meanwhile") for i in range(CHATTER)]
    await driver.server.sync()
    await driver.client.idle()  # every one of them refused, none stored
    assert await store.messages.get_message(chatter[-1]) is None
    faults_of(driver).down = False
    await answered_once(driver, asked, "Here now, sorry for the wait.")
    stored = await store.history.messages_by_ids([asked, *chatter])
    assert len(stored) == 1 + CHATTER  # said during the outage, each stored once


async def test_what_a_caught_up_marker_left_undecided_when_the_store_went_away_stays_owed(
    driver: DiscordDriver,
) -> None:
    """Two mentions refused by an outage are read back; the store goes away again as the
    caught-up marker stores the first one's decision (its answer sent). The second was
    then marked handled undecided, as plain history, and never answered: now it stays
    owed and is answered once the store is back, and the first is not answered again."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    driver.llm.enqueue("On Friday.", purpose="reply")
    faults_of(driver).down = True
    first = await driver.say("alice", "is the build green?", mention_bot=True)
    second = await driver.say("bob", "when is the release?", mention_bot=True)
    await faults_of(driver).wait_refused()
    await driver.server.sync()
    await driver.client.idle()  # both refused, none stored
    store = driver.app.store
    assert await store.history.messages_by_ids([first, second]) == []
    faulty = faults_of(driver)
    faulty.down = False
    await faults_of(driver).goes_away_at(faulty.decision_adds, faulty.decision_adds.fail_once())
    await driver.wait_bot_messages(2)
    await faults_of(driver).wait_handled()
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == ["Yes, the build is green.", "On Friday."]
    replies = [(m.get("message_reference") or {}).get("message_id")
               for m in driver.server.bot_messages]
    assert replies[0] == first and replies[1] in (None, second)
    for asked in (first, second):
        [decision] = await store.browse.decisions_for(asked)
        assert decision["action"] == "reply"
