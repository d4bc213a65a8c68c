"""A store outage, the same on Discord and Slack: a mention whose commit was lost, one the
store failed under while it was handled, and owed answers whose caught-up marker met the
store down are each answered once the store is back, without a restart
(kuuki.platforms.retry, issue 24). What only one platform does is in
discord/test_discord_outage.py and slack/test_slack_outage.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.platforms import retry
from kuuki.settings import Settings
from kuuki.testing.conformance import PlatformDriver
from kuuki.testing.discord_server import DiscordDriver, DiscordServer
from kuuki.testing.faults import Fault
from kuuki.testing.outage import answered_once, faults_of, refused_for_good
from kuuki.testing.slack_driver import SlackDriver


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_PAUSE_S", 0.05)


@pytest.fixture(params=["discord", "slack"])
async def driver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PlatformDriver]:
    d: DiscordDriver | SlackDriver
    if request.param == "discord":
        d = DiscordDriver(DiscordServer(bot_name="Kuu"), faulty_store=True)
    else:
        d = SlackDriver(faulty_store=True)
    await d.start(
        replace(Settings(), store_url=f"sqlite:///{tmp_path}/o.sqlite3", catch_up_minutes=10)
    )
    if isinstance(d, SlackDriver):
        d.server.redeliver_after = 0.2  # Slack retries an unacknowledged event, then gives up
    d.app.engine.intake.patience_s = 0  # a commit that fails is refused at once
    try:
        yield d
    finally:
        await d.stop()


async def test_a_mention_whose_commit_was_lost_is_answered_without_a_restart(
    driver: PlatformDriver,
) -> None:
    """The connection broke after COMMIT: the mention is in the store's inbox, and the bot
    was told it was refused. Its redelivery (Slack) and its read-back are then "taken in
    before"; it waited for the next start."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    faults_of(driver).ambiguous = 1
    asked = await driver.say("alice", "is the build green?", mention_bot=True)
    await faults_of(driver).wait_refused()
    await answered_once(driver, asked, "Yes, the build is green.")


@pytest.mark.parametrize("adds", ["message_adds", "decision_adds"])
async def test_a_mention_whose_handling_the_store_failed_under_is_answered_once_it_is_back(
    driver: PlatformDriver, adds: str
) -> None:
    """The mention was taken in, and the database went away while it was handled: as it
    was recorded (``message_adds``: not yet decided) or once the answer was sent
    (``decision_adds``). It stayed in the inbox until the next start; now it is handled
    again once the store answers, answered once, and a restart answers nothing again."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Yes, the build is green.", purpose="reply")
    fault: Fault = getattr(faults_of(driver), adds)
    failed = fault.fail_once()
    asked = await driver.say("alice", "is the build green?", mention_bot=True)
    await faults_of(driver).goes_away_at(fault, failed)
    await answered_once(driver, asked, "Yes, the build is green.")
    await driver.restart()  # type: ignore[attr-defined]
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == ["Yes, the build is green."]
    assert len(await driver.app.store.browse.decisions_for(asked)) == 1
    assert await driver.app.store.inbox.pending_events() == []


async def test_owed_answers_are_given_when_the_caught_up_marker_met_the_store_down(
    driver: PlatformDriver,
) -> None:
    """A mention refused by an outage is read back once the store answers, and the store
    goes away again just as the caught-up marker asks what was already decided: the owed
    answer waited for another marker, which came only with another outage or a restart."""
    await driver.say("carol", "morning")
    await driver.settle()
    driver.llm.enqueue("Here now, sorry for the wait.", purpose="reply")
    store = faults_of(driver)
    store.down = True
    asked = await driver.say("alice", "anyone there?", mention_bot=True)
    await refused_for_good(driver)
    store.down = False
    await store.goes_away_at(store.marker_reads, store.marker_reads.fail_once())
    await answered_once(driver, asked, "Here now, sorry for the wait.")
