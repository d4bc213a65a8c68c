"""Socket Mode: acks, reconnects without loss or duplicates, malformed payloads skipped."""

from __future__ import annotations

import logging

import pytest

from kuuki.testing.slack_driver import SlackDriver


def _ids(driver: SlackDriver) -> list[str]:
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    return [m.id for m in state.buffer.recent() if not m.user.is_bot]


async def test_events_said_while_away_arrive_once_after_reconnect(driver: SlackDriver) -> None:
    before = await driver.say("alice", "before the drop")
    await driver.settle()
    opened = driver.server.connections_opened
    await driver.drop_connection()
    away = [await driver.say("bob", f"while away {i}") for i in range(3)]
    assert not driver.server.connected and len(driver.server.pending) == 3
    await driver.wait_connected()
    await driver.settle()
    assert driver.server.connections_opened == opened + 1
    assert [c.method for c in driver.server.calls].count("apps.connections.open") == opened + 1
    assert _ids(driver) == [before, *away]
    driver.llm.enqueue("still here")
    await driver.say("alice", "you there?", mention_bot=True)
    assert [m.text for m in await driver.wait_bot_messages(1)] == ["still here"]


@pytest.mark.parametrize("reason", ["refresh_requested", "link_disabled"])
async def test_disconnect_message_reconnects_and_redelivery_is_deduped(
    driver: SlackDriver, reason: str
) -> None:
    first = await driver.say("alice", "one")
    await driver.settle()
    # Slack redelivers what it believes unacked: replay an already-handled event too.
    handled = driver.app.engine.handled
    replay = driver.server.event_envelope(
        driver.server.message_event(
            driver.channel_id(),
            driver.server.find_message(driver.channel_id(), first.rpartition(":")[2]) or {},
        )
    )
    await driver.server.disconnect(reason)
    await driver.server.deliver(replay)
    second = await driver.say("bob", "two")
    await driver.wait_connected()
    await driver.settle()
    assert driver.server.connections_opened == 2
    assert _ids(driver) == [first, second]
    assert driver.app.engine.handled == handled + 1
    assert replay.ack is not None


async def test_malformed_payloads_are_logged_and_skipped(
    driver: SlackDriver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kuuki.slack")
    await driver.send_malformed()
    await driver.settle()
    skipped = [r.getMessage() for r in caplog.records if "skipped slack" in r.getMessage()]
    kinds = " ".join(skipped)
    for kind in ("message payload", "kuuki_unknown_event", "reaction_added", "events_api"):
        assert kind in kinds
    assert any("200000 characters" in s for s in skipped)
    assert _ids_or_empty(driver) == []
    driver.llm.enqueue("all good")
    await driver.say("alice", "still alive?", mention_bot=True)
    assert [m.text for m in await driver.wait_bot_messages(1)] == ["all good"]


def _ids_or_empty(driver: SlackDriver) -> list[str]:
    state = driver.app.engine.state(driver.channel_id())
    return [] if state is None else [m.id for m in state.buffer.recent()]
