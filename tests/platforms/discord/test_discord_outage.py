"""A store outage on Discord: Discord never delivers an event again, so what the store
refused is read back from the channel's history once it answers; every message read back
that was never decided is decided — a mention is answered once, the channel's first
message included (kuuki.platforms.retry, issue 24)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.platforms import retry
from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordDriver, DiscordServer
from kuuki.testing.faults import FaultyStore

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


def faults(driver: DiscordDriver) -> FaultyStore:
    assert driver.faults is not None
    return driver.faults


async def answered_once(driver: DiscordDriver, asked: str, text: str) -> None:
    """``asked`` got exactly one reply, ``text``, is stored and has one decision."""
    await driver.wait_bot_messages(1)
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == [text]
    [reply] = driver.server.bot_messages
    assert (reply.get("message_reference") or {}).get("message_id") in (None, asked)
    store = driver.app.store
    assert await store.get_message(asked) is not None
    [decision] = await store.decisions_for(asked)
    assert decision["action"] == "reply"
    assert await store.pending_events() == []


async def test_a_channels_first_message_refused_by_an_outage_is_answered_once(
    driver: DiscordDriver,
) -> None:
    """The channel is new to the store; its first message, a mention, is refused, and the
    channel keeps talking while the store is down. Read as a channel never seen (its
    newest 50 messages), the mention and the ten after it were skipped for good."""
    store = driver.app.store
    assert await store.channels() == []
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    faults(driver).down = True
    asked = await driver.say("alice", "anyone there?", mention_bot=True)
    await faults(driver).wait_refused()
    chatter = [await driver.say("bob", f"chatter {i} meanwhile") for i in range(CHATTER)]
    await driver.server.sync()
    await driver.client.idle()  # every one of them refused, none stored
    assert await store.get_message(chatter[-1]) is None
    faults(driver).down = False
    await answered_once(driver, asked, "Here now, sorry for the wait.")
    stored = await store.messages_by_ids([asked, *chatter])
    assert len(stored) == 1 + CHATTER  # said during the outage, each stored once


async def test_a_mention_whose_commit_was_lost_is_answered_without_a_restart(
    driver: DiscordDriver,
) -> None:
    """The connection broke after COMMIT: the mention is in the store's inbox, and the bot
    was told it was refused. Reading it back then finds it "taken in before"; it waited
    for the next start."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    faults(driver).ambiguous = 1
    asked = await driver.say("alice", "is the build green?", mention_bot=True)
    await faults(driver).wait_refused()
    await answered_once(driver, asked, "Yes, the build is green.")
