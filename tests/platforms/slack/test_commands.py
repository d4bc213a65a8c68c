"""`/kuuki` through Slack's slash command envelope and response_url."""

from __future__ import annotations

from kuuki.testing.slack_driver import SlackDriver


async def test_status_is_answered_privately(driver: SlackDriver) -> None:
    text = await driver.slash("alice", "status")
    assert "Listening here: yes" in text
    [resp] = driver.server.responses
    assert resp["response_type"] == "ephemeral"
    await driver.settle()


async def test_quiet_needs_an_admin(driver: SlackDriver) -> None:
    refused = await driver.slash("alice", "quiet", "10")
    assert "Only members who can manage" in refused
    state = driver.app.engine.state(driver.channel_id())
    assert state is None or state.bot.quiet_until is None
    # the same user made admin since: permissions are looked up fresh, not cached
    accepted = await driver.slash("alice", "quiet", "10", can_manage=True)
    assert "quiet here for 10 minutes" in accepted
    assert driver.server.responses[-1]["response_type"] == "in_channel"
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None and state.bot.quiet_until is not None
    status = await driver.slash("bob", "status")
    assert "Quiet here until" in status


async def test_help_and_unknown_subcommands(driver: SlackDriver) -> None:
    assert (await driver.slash("alice", "")).startswith("Usage: /kuuki")
    assert "Unknown command 'dance'" in await driver.slash("alice", "dance")
    assert "forgot" in (await driver.slash("alice", "forget-me")).lower()
    assert "decided" in (await driver.slash("alice", "why")).lower()
