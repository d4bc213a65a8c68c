"""Slack events in, engine state out: real slack-bolt against the local Slack server."""

from __future__ import annotations

from kuuki.domain import Visibility
from kuuki.testing.slack_driver import SlackDriver


def _buffer(driver: SlackDriver, channel: str = "general") -> list[tuple[str, str, str]]:
    state = driver.app.engine.state(driver.channel_id(channel))
    assert state is not None
    return [(m.id, m.user.name, m.text) for m in state.buffer.recent()]


async def test_mention_arrives_twice_is_handled_once_and_answered(driver: SlackDriver) -> None:
    driver.llm.enqueue("Hello Alice!")
    mid = await driver.say("alice", "hi there", mention_bot=True)
    sent = await driver.wait_bot_messages(1)
    await driver.settle()
    assert [s.text for s in sent] == ["Hello Alice!"]
    assert sent[0].thread is None  # a top-level message gets a top-level answer
    persona = driver.app.settings.persona.name
    assert _buffer(driver) == [
        (mid, "alice", f"@{persona} hi there"),
        (sent[0].id, persona, "Hello Alice!"),
    ]
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    assert driver.server.bot_user_id in state.buffer.recent()[0].mentions
    # both deliveries (message + app_mention) and the bot's own echo were acked
    assert not driver.server.pending
    assert len(driver.server.acks) == 3


async def test_ids_become_names_before_anyone_reads_them(driver: SlackDriver) -> None:
    bob = driver.user_id("bob")
    random = driver.channel_id("random")
    mid = await driver.say(
        "alice", f"<@{bob}> look at <#{random}> &amp; <https://example.com|this> <!here>"
    )
    await driver.settle()
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    msg = state.buffer.recent()[-1]
    assert msg.id == mid
    assert msg.text == "@bob look at #random & this (https://example.com) @here"
    assert msg.mentions == (bob,)
    assert not driver.bot_messages  # a mention of someone else is not addressed to the bot


async def test_thread_reply_goes_into_the_thread(driver: SlackDriver) -> None:
    root = await driver.start_thread("alice", "planning the trip")
    await driver.say("bob", "I can drive", thread=root)
    driver.llm.enqueue("I'll bring snacks")
    mid = await driver.say("alice", "what do you think?", thread=root, mention_bot=True)
    sent = await driver.wait_bot_messages(1)
    await driver.settle()
    assert sent[0].thread == root
    assert f"{driver.channel_id()}:{sent[0].raw['thread_ts']}" == root
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    trigger = next(m for m in state.buffer.recent() if m.id == mid)
    assert trigger.thread == root and trigger.reply_to == root


async def test_replying_in_the_bots_thread_addresses_the_bot(driver: SlackDriver) -> None:
    driver.llm.enqueue("Morning!", "Sure, tea it is.")
    await driver.say("alice", "morning", mention_bot=True)
    [first] = await driver.wait_bot_messages(1)
    await driver.say("alice", "tea or coffee?", reply_to=first.id)
    sent = await driver.wait_bot_messages(2)
    assert sent[1].thread == first.id
    assert sent[1].text == "Sure, tea it is."


async def test_edit_delete_and_reaction_reach_buffer_and_store(driver: SlackDriver) -> None:
    mid = await driver.say("alice", "the meeting is at 3")
    gone = await driver.say("bob", "oops wrong channel")
    await driver.settle()
    await driver.edit(mid, "the meeting is at 4")
    await driver.delete(gone)
    await driver.react("bob", mid, "👍")
    await driver.settle()
    assert _buffer(driver) == [(mid, "alice", "the meeting is at 4")]
    store = driver.app.store
    stored = await store.messages.get_message(mid)
    assert stored.text == "the meeting is at 4" and stored.edited
    assert (await store.messages.get_message(gone)).deleted
    reactions = await store.messages.reactions(mid)
    assert [(u, e) for u, e, _ in reactions] == [(driver.user_id("bob"), "👍")]


async def test_other_bots_are_bots_and_own_echoes_are_ignored(driver: SlackDriver) -> None:
    driver.llm.enqueue("hi!")
    await driver.say("deploybot", "deployed v1.2", bot=True)
    await driver.say("alice", "hey", mention_bot=True)
    await driver.wait_bot_messages(1)
    await driver.settle()
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    users = [(m.user.name, m.user.is_bot) for m in state.buffer.recent()]
    persona = driver.app.settings.persona.name
    assert users == [("deploybot", True), ("alice", False), (persona, True)]
    assert len(driver.bot_messages) == 1  # the echo of its own post did not start anything


async def test_channel_kinds_map_to_visibility(driver: SlackDriver) -> None:
    await driver.say("alice", "psst", channel="private-ops")
    await driver.say("alice", "hello", channel="general")
    await driver.settle()
    private = driver.app.engine.state(driver.channel_id("private-ops"))
    public = driver.app.engine.state(driver.channel_id("general"))
    assert private is not None and public is not None
    assert private.channel.visibility is Visibility.PRIVATE
    assert public.channel.visibility is Visibility.PUBLIC
    assert private.channel.name == "private-ops"
    assert (public.channel.platform, public.channel.workspace) == ("slack", driver.server.team_id)
