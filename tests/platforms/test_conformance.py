"""The same bot behaviour on every platform: real clients against local fake servers.

Each scenario talks to a `PlatformDriver` (kuuki.testing.conformance). Both drivers are
imported here: a driver that is missing or fails to import is an error, never a skip.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.domain import Decision, Message
from kuuki.platforms.slack.mapping import MAX_TEXT as SLACK_MAX_TEXT
from kuuki.settings import Settings
from kuuki.testing import prose_lines
from kuuki.testing.conformance import PlatformDriver
from kuuki.testing.discord_server import DiscordDriver
from kuuki.testing.slack_driver import SlackDriver
from kuuki.text.safety import CUT_MARK, INCOMING_LIMIT

DRIVERS: dict[str, type[PlatformDriver]] = {"discord": DiscordDriver, "slack": SlackDriver}
# An id of the platform's own shape that no test ever posts.
NEVER_SEEN = {"discord": "123456789012345678", "slack": "1000000000.000001"}
# A paste longer than the engine keeps but one both platforms deliver (Slack's mapping
# refuses texts over its MAX_TEXT as malformed): the engine must cut it, not refuse it.
# Numbered words, so a cut that kept the wrong part shows.
OVERSIZED = " ".join(f"w{i:05d}" for i in range(4_300))


@pytest.fixture(params=sorted(DRIVERS))
async def driver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PlatformDriver]:
    cls = DRIVERS[request.param]
    settings = replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3")
    d: PlatformDriver = cls()
    await d.start(settings)
    try:
        yield d
    finally:
        await d.stop()


@pytest.fixture
def decisions(driver: PlatformDriver) -> list[Decision]:
    seen: list[Decision] = []
    driver.app.engine.on_decision(seen.append)
    return seen


def buffer(driver: PlatformDriver, channel: str) -> dict[str, Message]:
    state = driver.app.engine.state(channel)
    assert state is not None, f"the engine never saw channel {channel}"
    return {m.id: m for m in state.buffer.recent()}


def decided(decisions: list[Decision], message_id: str) -> list[Decision]:
    return [d for d in decisions if d.message_id == message_id]


async def test_addressed_message_gets_a_reply(driver: PlatformDriver) -> None:
    driver.llm.enqueue("Sure, happy to help!", "Still here.")
    asked = await driver.say("alice", "can you help me with the deploy?", mention_bot=True)
    [reply] = await driver.wait_bot_messages(1)
    assert reply.text == "Sure, happy to help!"
    assert reply.channel == "general"

    # A platform reply to the bot's message addresses it too.
    await driver.say("bob", "and are you still around?", reply_to=reply.id)
    second = (await driver.wait_bot_messages(2))[1]
    assert second.text == "Still here."
    await driver.settle()
    seen = buffer(driver, driver.channel_id())
    assert asked in seen and reply.id in seen, "both sides of the exchange are in the buffer"
    assert seen[reply.id].user.is_bot
    assert len(driver.bot_messages) == 2


async def test_two_people_talking_get_no_interruption(
    driver: PlatformDriver, decisions: list[Decision]
) -> None:
    ids = [
        await driver.say("alice", "did you finish the quarterly report?"),
        await driver.say("bob", "yes, sent it to finance this morning"),
        await driver.say("alice", "great, thanks a lot"),
    ]
    await driver.settle()
    assert driver.bot_messages == [] and driver.bot_reactions == []
    assert driver.llm.calls == 0
    assert [d.action.kind.value for i in ids for d in decided(decisions, i)] == ["none"] * 3
    assert set(ids) <= set(buffer(driver, driver.channel_id()))


async def test_reactions_both_ways(driver: PlatformDriver) -> None:
    # Nothing usable from the model → the bot reacts instead of posting an empty reply.
    driver.llm.enqueue("")
    await driver.say("alice", "I just shipped the release!", mention_bot=True)
    [emoji] = await driver.wait_bot_reactions(1)
    assert emoji
    assert driver.bot_messages == []

    # A person's reaction to the bot's message is stored, and answered by nothing.
    driver.llm.enqueue("Congratulations!")
    await driver.say("bob", "say something nice to alice", mention_bot=True)
    [msg] = await driver.wait_bot_messages(1)
    await driver.react("alice", msg.id, "🎉")
    await driver.settle()
    stored = await driver.app.store.messages.reactions(msg.id)
    assert [e for _, e, _ in stored] in (["🎉"], ["tada"]), stored
    assert len(driver.bot_messages) == 1 and len(driver.bot_reactions) == 1


async def test_addressed_message_in_a_thread_is_answered_in_the_thread(
    driver: PlatformDriver,
) -> None:
    thread = await driver.start_thread("alice", "planning the team offsite")
    driver.llm.enqueue("Count me in for the hike.")
    await driver.say("bob", "what do you think?", thread=thread, mention_bot=True)
    [reply] = await driver.wait_bot_messages(1)
    assert reply.thread == thread
    assert reply.text == "Count me in for the hike."


async def test_edits_and_deletes_reach_buffer_and_store(driver: PlatformDriver) -> None:
    cid = driver.channel_id()
    first = await driver.say("alice", "the meeting is at 3pm")
    second = await driver.say("bob", "ok, see you then")
    await driver.settle()
    await driver.edit(first, "the meeting is at 4pm")
    await driver.settle()
    assert buffer(driver, cid)[first].text == "the meeting is at 4pm"
    await driver.app.writer.flush()
    stored = await driver.app.store.messages.get_message(first)
    assert stored is not None and stored.text == "the meeting is at 4pm"

    await driver.delete(second)
    await driver.delete(NEVER_SEEN[driver.name])  # harmless
    await driver.settle()
    assert second not in buffer(driver, cid)
    gone = await driver.app.store.messages.get_message(second)
    assert gone is None or gone.deleted
    assert driver.bot_messages == []


async def test_long_reply_is_split_within_the_platform_limit(driver: PlatformDriver) -> None:
    # One paragraph of lines without sentence ends: the responder keeps it whole (it trims
    # paragraphs and sentence counts), so the platform split is what is under test.
    lines = prose_lines(100, 9)
    long_text = "\n".join(lines)
    assert len(long_text) > 5000
    driver.llm.enqueue(long_text)
    await driver.say("alice", "give me the whole checklist", mention_bot=True)
    await driver.wait_bot_messages(1)
    await driver.settle()
    parts = driver.bot_messages
    assert len(parts) >= max(2, math.ceil(len(long_text) / driver.text_limit))
    assert all(len(p.text) <= driver.text_limit for p in parts)
    sent_lines = [line for p in parts for line in p.text.split("\n")]
    assert sent_lines == lines, "split on line boundaries, nothing lost or repeated"


async def test_no_mass_mentions_ever(driver: PlatformDriver) -> None:
    driver.llm.enqueue("Hey @everyone and @here, also <@&123456789012345678>: lunch is ready!")
    await driver.say("alice", "announce lunch please", mention_bot=True)
    [msg] = await driver.wait_bot_messages(1)
    assert not re.search(r"@(everyone|here)\b", msg.text)
    assert "<@&" not in msg.text and "<!" not in msg.text
    assert "lunch is ready" in msg.text
    assert not msg.mass_mentions_allowed


async def test_slash_commands_and_quiet_permission(
    driver: PlatformDriver, decisions: list[Decision]
) -> None:
    status = await driver.slash("alice", "status")
    assert "Listening here: yes" in status
    # The memory layer answers (a stranger: nothing remembered yet).
    assert "I don't remember anything about you." in await driver.slash("alice", "memory")
    assert "Done: I forgot" in await driver.slash("alice", "forget-me")
    assert "from now on I may remember" in await driver.slash("alice", "remember-me")
    assert "You were not forgotten" in await driver.slash("alice", "remember-me")
    assert await driver.slash("alice", "why")

    refused = await driver.slash("alice", "quiet", "30")
    assert "Only members who can manage" in refused
    accepted = await driver.slash("carol", "quiet", "30", can_manage=True)
    assert "stay quiet here for 30 minutes" in accepted

    ambient = await driver.say("alice", "anyone up for lunch?")
    driver.llm.enqueue("I'm here if you need me.")
    await driver.say("bob", "are you still listening?", mention_bot=True)
    [reply] = await driver.wait_bot_messages(1)
    await driver.settle()
    assert reply.text == "I'm here if you need me."
    [quiet] = decided(decisions, ambient)
    assert quiet.reason == "asked to be quiet here"
    assert "Quiet here until" in await driver.slash("alice", "status")


async def test_reconnect_loses_nothing_and_doubles_nothing(
    driver: PlatformDriver, decisions: list[Decision]
) -> None:
    before = await driver.say("alice", "morning all")
    await driver.settle()
    await driver.drop_connection()
    driver.llm.enqueue("Yes, I'm back.")
    while_down = [
        await driver.say("bob", "is the bot there?", mention_bot=True),
        await driver.say("alice", "it seems quiet today"),
    ]
    await driver.wait_connected()
    await driver.wait_bot_messages(1)
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == ["Yes, I'm back."]
    assert len(decided(decisions, while_down[0])) == 1
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    ids = [m.id for m in state.buffer.recent()]
    for mid in [before, *while_down]:
        assert ids.count(mid) == 1, f"{mid} handled {ids.count(mid)} times"


async def test_malformed_payloads_are_skipped_and_the_adapter_carries_on(
    driver: PlatformDriver, decisions: list[Decision]
) -> None:
    assert INCOMING_LIMIT < len(OVERSIZED) <= SLACK_MAX_TEXT
    await driver.send_malformed()
    await driver.settle()
    pasted = await driver.say("mallory", OVERSIZED)
    driver.llm.enqueue("Still standing.")
    await driver.say("alice", "are you ok after that?", mention_bot=True)
    [msg] = await driver.wait_bot_messages(1)
    assert msg.text == "Still standing."
    await driver.settle()

    cut = OVERSIZED[:INCOMING_LIMIT] + CUT_MARK
    seen = buffer(driver, driver.channel_id())
    assert pasted in seen, "the long paste was cut, not refused"
    assert seen[pasted].text == cut
    await driver.app.writer.flush()
    stored = await driver.app.store.messages.get_message(pasted)
    assert stored is not None and stored.text == cut
    # Whatever else was long (Discord's malformed batch posts a 100,000-character text;
    # Slack's 200,000 is over its limit and refused) was cut the same way.
    huge = [m.text for m in seen.values() if len(m.text) > INCOMING_LIMIT]
    assert huge and all(
        len(t) == INCOMING_LIMIT + len(CUT_MARK) and t.endswith(CUT_MARK) for t in huge
    ), [len(t) for t in huge]
