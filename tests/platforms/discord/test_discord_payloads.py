"""Payloads Discord really sends, from its documentation and from captures others made,
run through the real discord.py client and kuuki's mapping (issue 26).

Each file in tests/platforms/payloads/discord/ names its source and what kuuki must make
of it (`expect`). Ids that must be the local server's are placeholders: ``{channel}``,
``{guild}``, ``{bot}`` and ``{thread}`` (a thread the client was never told about).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kuuki.domain import ChatEvent, EventKind
from kuuki.testing.discord_server import DiscordDriver, DiscordServer

PAYLOADS = Path(__file__).parents[1] / "payloads" / "discord"
FIXTURES = sorted(PAYLOADS.glob("*.json"))


def substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, real in ids.items():
            value = value.replace(key, real)
        return value
    if isinstance(value, list):
        return [substitute(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ids) for k, v in value.items()}
    return value


def summary(event: ChatEvent, bot_id: str) -> dict[str, Any]:
    """What kuuki made of a payload, in the terms of a fixture's ``expect``."""
    if event.kind is EventKind.POSTED:
        msg = event.message
        assert msg is not None
        return {"kind": "posted", "text": msg.text, "mentions_bot": bot_id in msg.mentions,
                "reply_to": msg.reply_to, "thread": msg.thread is not None,
                "user_is_bot": msg.user.is_bot}
    out: dict[str, Any] = {"kind": event.kind.value, "target": event.target_id}
    if event.kind is EventKind.EDITED:
        out["text"] = event.text
    if event.kind is EventKind.REACTION_ADDED:
        out["emoji"] = event.emoji
    return out


def recording(driver: DiscordDriver) -> list[ChatEvent]:
    """Every event the client hands to the engine from now on."""
    seen: list[ChatEvent] = []
    engine = driver.app.engine
    submit: Callable[[ChatEvent], Awaitable[bool]] = engine.submit

    def record(event: ChatEvent) -> Awaitable[bool]:
        seen.append(event)
        return submit(event)

    engine.submit = record  # type: ignore[method-assign]
    return seen


async def local_ids(driver: DiscordDriver, server: DiscordServer, raw: str) -> dict[str, str]:
    ids = {"{channel}": driver.channel_id(), "{guild}": server.guild_id,
           "{bot}": server.bot_user["id"]}
    if "{thread}" in raw:
        root = await driver.say("alice", "the nightly build broke again")
        await server.create_thread(driver.channel_id(), root, "nightly", announce=False)
        ids["{thread}"] = root
    return ids


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
async def test_a_payload_maps_as_the_platform_documents_it(
    path: Path, driver: DiscordDriver, server: DiscordServer
) -> None:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    assert fixture["source"].startswith("https://"), "every fixture names where it is from"
    payload = substitute(fixture["payload"], await local_ids(driver, server, path.read_text()))
    await driver.settle()
    seen = recording(driver)
    if fixture["event"] == "MESSAGE_CREATE":
        await server.deliver(payload)
    else:
        await server.dispatch(fixture["event"], payload)
    await driver.settle()

    expect = fixture["expect"]
    if expect["kind"] == "none":
        assert seen == []
        return
    [event] = seen
    got = summary(event, server.bot_user["id"])
    assert {k: got.get(k) for k in expect} == expect


# -- what the bot does with them, through the real client ------------------------------------


async def test_a_forwarded_question_to_the_bot_is_read_and_answered(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    await server.open_channel("ops")
    original = await driver.say("alice", "is the deploy window still 17:00?", channel="ops")
    await driver.settle()
    driver.llm.enqueue("Yes, 17:00.")
    forward = await driver.forward("bob", original, dm=True)  # "forward it to the bot"
    [answer] = await driver.wait_bot_messages(1)
    assert answer.text == "Yes, 17:00."
    stored = await driver.app.store.messages.get_message(forward)
    assert stored is not None and stored.user.name == "bob"
    assert stored.text == "[forwarded message]\n> is the deploy window still 17:00?"
    [prompt] = driver.llm.prompts("reply")
    assert "> is the deploy window still 17:00?" in prompt


async def test_a_forward_that_mentions_the_bot_addresses_it(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    await server.open_channel("ops")
    driver.llm.enqueue("Looking.", "On it.")
    original = await driver.say("alice", "can you check the backups?", channel="ops",
                                mention_bot=True)
    await driver.wait_bot_messages(1)
    forward = await driver.forward("bob", original)
    answer = (await driver.wait_bot_messages(2))[1]
    assert answer.channel == "general" and answer.text == "On it."
    stored = await driver.app.store.messages.get_message(forward)
    assert stored is not None and server.bot_user["id"] in stored.mentions


async def test_a_reply_that_pings_the_bot_about_a_message_it_no_longer_holds_is_answered(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    general = driver.channel_id()
    old = await server.post("Kuu", general, "I'll look into it after lunch.", ago_s=3 * 86400)
    old["author"] = server.bot_user  # the bot's, from before this store existed
    driver.llm.enqueue("Not yet, sorry.")
    await driver.say("alice", "did you get to it?", reply_to=old["id"], ping=True)
    [answer] = await driver.wait_bot_messages(1)
    assert answer.text == "Not yet, sorry."


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
async def test_a_reply_in_a_thread_under_the_bots_post_is_addressed(
    cached: bool, driver: DiscordDriver, server: DiscordServer
) -> None:
    driver.llm.enqueue("The nightly build runs at 02:00.")
    await driver.say("alice", "when does the nightly build run?", mention_bot=True)
    [post] = await driver.wait_bot_messages(1)
    await driver.settle()
    await server.create_thread(driver.channel_id(), post.id, "nightly", announce=cached)
    driver.llm.enqueue("It takes about 40 minutes.")
    asked = await driver.say("alice", "and how long does it take?", thread=post.id)
    answer = (await driver.wait_bot_messages(2))[1]
    assert answer.thread == post.id and answer.text == "It takes about 40 minutes."
    stored = await driver.app.store.messages.get_message(asked)
    assert stored is not None and stored.thread == post.id


async def test_a_crosspost_is_not_a_reply_and_names_its_channel(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    mid = await driver.crosspost("v2.0 is out! Details in #releases")
    await driver.settle()
    stored = await driver.app.store.messages.get_message(mid)
    assert stored is not None
    assert (stored.text, stored.reply_to) == ("v2.0 is out! Details in #releases", None)
    assert stored.user.is_bot  # a webhook's post


async def test_files_and_voice_messages_leave_a_note(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    picture = await driver.send_files("alice", ["graph.png", "raw.csv"], "numbers for May")
    voice = await driver.send_files("bob", [], voice_s=75.2)
    await driver.settle()
    texts = {m.id: m.text for m in await driver.app.store.messages.recent_messages(driver.channel_id())}
    assert texts[picture] == "numbers for May [file: graph.png] [file: raw.csv]"
    assert texts[voice] == "[voice message 1:15]"


async def test_history_read_back_maps_the_same_shapes_as_the_gateway(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    from kuuki.platforms.discord import DiscordOutbox
    from kuuki.platforms.discord.rest import DiscordRest

    general = driver.channel_id()
    root = await driver.say("alice", "the nightly build broke again")
    await server.create_thread(general, root, "nightly", announce=False)
    await driver.say("bob", "looking", thread=root)  # the store knows the thread
    await driver.settle()
    said: dict[str, str] = {}

    async def meanwhile() -> None:  # said while the bot was down: read back at start-up
        said["forward"] = await driver.forward("carol", root)
        said["thread"] = await driver.say("dave", "still broken?", thread=root)
        said["crosspost"] = await driver.crosspost("v2 is out, see #releases")
        said["voice"] = await driver.send_files("erin", [], voice_s=5)

    await driver.restart(meanwhile)
    await driver.settle()
    store = driver.app.store
    got = {k: await store.messages.get_message(v) for k, v in said.items()}
    assert {k: (m.text if m else None) for k, m in got.items()} == {
        "forward": "[forwarded message]\n> the nightly build broke again",
        "thread": "still broken?",
        "crosspost": "v2 is out, see #releases",
        "voice": "[voice message 0:05]",
    }
    assert got["thread"] is not None and got["thread"].thread == root
    assert got["crosspost"] is not None and got["crosspost"].reply_to is None

    # A scale-out worker taking the thread over reads it through REST alone, with a client
    # that caches no guild (kuuki.platforms.discord.rest).
    late = server.message_payload(root, server.user("frank"), "anyone?")
    plain = server.message_payload(general, server.user("grace"), "lunch at noon")
    for m in (late, plain):
        server.messages[m["id"]] = m  # in the history; no gateway delivered them
    channels = {c.id: c for c in await store.roster.channels()}
    worker = DiscordRest(driver.app, server.token, DiscordOutbox())
    await worker.start()
    try:
        assert await worker.read_back(channels[root], []) == 1
        assert await worker.read_back(channels[general], []) == 1
    finally:
        await worker.close()
    taken = await store.messages.get_message(late["id"])
    assert taken is not None and taken.thread == root
    taken = await store.messages.get_message(plain["id"])
    assert taken is not None and taken.thread is None
