"""The Discord adapter against the local Discord: what only Discord has, beyond the shared
conformance scenarios (tests/platforms/test_conformance.py)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.domain import Decision, Visibility
from kuuki.settings import Settings
from kuuki.testing import prose_lines
from kuuki.testing.discord_server import DiscordDriver, DiscordServer

MESSAGE_CONTENT_INTENT = 1 << 15
GUILD_MESSAGES_INTENT = 1 << 9


@pytest.fixture
def decisions(driver: DiscordDriver) -> list[Decision]:
    seen: list[Decision] = []
    driver.app.engine.on_decision(seen.append)
    return seen


def buffered_ids(driver: DiscordDriver, channel_id: str) -> list[str]:
    state = driver.app.engine.state(channel_id)
    return [m.id for m in state.buffer.recent()] if state else []


async def test_start_up_talks_to_the_local_server_only_through_the_seams(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    calls = [(r.method, r.path) for r in server.requests]
    assert calls[:2] == [("GET", "/users/@me"), ("GET", "/oauth2/applications/@me")]
    assert ("GET", "/gateway/bot") in calls
    [put] = [r for r in server.requests if r.method == "PUT"]
    assert put.path == f"/applications/{server.app_id}/commands"
    [group] = put.body
    assert group["name"] == "kuuki"
    subs = {o["name"]: o for o in group["options"]}
    assert set(subs) == {"status", "why", "quiet", "mode", "memory", "forget-me", "remember-me"}
    assert subs["quiet"]["options"][0] | {"min_value": 0} == subs["quiet"]["options"][0]

    [query] = server.gateway_queries
    assert query["encoding"] == "json" and query["v"] == "10"
    [identify] = [f for f in server.received if f["op"] == 2]
    intents = identify["d"]["intents"]
    assert intents & MESSAGE_CONTENT_INTENT and intents & GUILD_MESSAGES_INTENT
    assert str(server.bot_user["id"]) in driver.app.engine.bot_user_ids


async def test_resume_replays_what_was_missed_and_overlap_is_handled_once(
    driver: DiscordDriver, server: DiscordServer, decisions: list[Decision]
) -> None:
    driver.llm.enqueue("first answer", "second answer")
    early = await driver.say("alice", "Kuu, are you awake?", mention_bot=True)
    await driver.wait_bot_messages(1)
    await driver.settle()

    server.resume_overlap = 1_000  # the resume re-sends everything since READY
    await driver.drop_connection()
    missed = [
        await driver.say("bob", "meanwhile, the build is green"),
        await driver.say("carol", "what do you say?", mention_bot=True),
    ]
    assert not server.connected
    await driver.wait_connected()
    await driver.wait_bot_messages(2)
    await driver.settle()

    assert (server.identifies, server.resumes) == (1, 1)
    assert [m.text for m in driver.bot_messages] == ["first answer", "second answer"]
    ids = buffered_ids(driver, driver.channel_id())
    for mid in [early, *missed]:
        assert ids.count(mid) == 1
    assert [len([d for d in decisions if d.message_id == m]) for m in (early, missed[1])] == [1, 1]


async def test_channels_map_to_visibility_and_workspace(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    secret = await server.open_channel("secret", private=True)
    driver.llm.enqueue("psst", "hello in private")
    await driver.say("alice", "hi there", channel="secret", mention_bot=True)
    dm = server.dm_channel("alice")
    await server.post("alice", dm["id"], "hello Kuu")
    await driver.wait_bot_messages(2)
    await driver.settle()

    private = driver.app.engine.state(secret["id"])
    assert private is not None
    assert private.channel.visibility is Visibility.PRIVATE
    assert private.channel.workspace == server.guild_id
    assert private.channel.platform == "discord"
    direct = driver.app.engine.state(dm["id"])
    assert direct is not None and direct.channel.visibility is Visibility.DM
    general = driver.app.engine.state(driver.channel_id())
    assert general is None or general.channel.visibility is Visibility.PUBLIC
    assert {m.raw["channel_id"] for m in driver.bot_messages} == {secret["id"], dm["id"]}


async def test_denied_channels_cost_no_fetch_and_unknown_ones_are_fetched_once(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    hidden = server.text_channel("hidden")  # the client has never heard of either
    other = server.text_channel("other")
    engine = driver.app.engine
    engine.config = replace(engine.config, channel_deny=(hidden["id"],))
    driver.llm.enqueue("found you")
    await driver.say("alice", "anyone?", channel="hidden", mention_bot=True)
    await driver.say("alice", "anyone here?", channel="other", mention_bot=True)
    await driver.say("bob", "still here", channel="other")
    await driver.wait_bot_messages(1)
    await driver.settle()

    fetched = [r.path for r in server.requests if r.method == "GET" and "/channels/" in r.path]
    assert fetched == [f"/channels/{other['id']}"]
    assert engine.state(hidden["id"]) is None
    assert [m.raw["channel_id"] for m in driver.bot_messages] == [other["id"]]


async def test_a_thread_follows_its_parents_deny_entry(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    await server.open_channel("secret")
    engine = driver.app.engine
    engine.config = replace(engine.config, channel_deny=("secret",))
    thread = await driver.start_thread("alice", "private plans", channel="secret")
    await driver.say("bob", "what do you think?", thread=thread, mention_bot=True)
    await driver.settle()
    assert engine.state(thread) is None
    assert driver.bot_messages == []


async def test_reply_reference_only_when_other_messages_came_between(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    driver.llm.enqueue("right away", "sure, bob")
    first = await driver.say("alice", "can you check the logs?", mention_bot=True)
    [plain] = await driver.wait_bot_messages(1)
    assert plain.reply_to is None  # nothing came between: a plain message reads right
    assert plain.raw["allowed_mentions"]["parse"] == ["users"]
    assert first

    server.hold_typing = asyncio.Event()  # the bot is "typing" until released
    asked = await driver.say("bob", "and the metrics?", mention_bot=True)
    await server.wait_for(lambda: len(server.typing) == 2)
    await driver.say("alice", "thanks!")
    await server.sync()
    server.hold_typing.set()
    second = (await driver.wait_bot_messages(2))[1]
    assert second.reply_to == asked
    assert second.raw["allowed_mentions"] == {"parse": ["users"], "replied_user": True}


async def test_role_mentions_and_replies_to_any_part_address_the_bot(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    driver.llm.enqueue("\n".join(prose_lines(80, 6)))
    await driver.say("alice", f"<@&{server.bot_role_id}> what is the plan?")
    parts = await driver.wait_bot_messages(2)
    await driver.settle()
    parts = driver.bot_messages
    assert len(parts) >= 2
    driver.llm.enqueue("Yes, that one.")
    await driver.say("bob", "about this step?", reply_to=parts[-1].id)
    msgs = await driver.wait_bot_messages(len(parts) + 1)
    assert msgs[-1].text == "Yes, that one."


async def test_own_echoes_and_reactions_are_ignored_other_bots_marked(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    # An empty answer and an empty retry: the guard's fallback, a reaction.
    driver.llm.enqueue("", "", "hi!")
    target = await driver.say("alice", "good morning Kuu", mention_bot=True)
    await driver.wait_bot_reactions(1)
    await driver.say("alice", "how are you, Kuu?", mention_bot=True)
    [msg] = await driver.wait_bot_messages(1)
    other_bot = await driver.say("helperbot", "beep: deploy finished", bot=True)
    await driver.settle()

    ids = buffered_ids(driver, driver.channel_id())
    assert ids.count(msg.id) == 1, "the gateway echo of the bot's own message is not re-added"
    # The bot's own reaction is stored once, by the engine as it sent it (catching up after
    # a crash reads it as "answered"); the gateway's echo of it is not recorded again.
    reactions = await driver.app.store.messages.reactions(target)
    assert [(who, emoji) for who, emoji, _ in reactions] == [("Kuu", "👀")]
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    assert next(m for m in state.buffer.recent() if m.id == other_bot).user.is_bot


async def test_malformed_dispatches_are_logged_and_skipped(
    driver: DiscordDriver, server: DiscordServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kuuki.discord"):
        await driver.send_malformed()
        await driver.settle()
    skipped = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert any("MESSAGE_CREATE" in s for s in skipped)
    assert any("MESSAGE_REACTION_ADD" in s for s in skipped)
    assert server.identifies == 1 and server.resumes == 0, "no reconnect was needed"
    driver.llm.enqueue("all good")
    await driver.say("alice", "still there?", mention_bot=True)
    assert [m.text for m in await driver.wait_bot_messages(1)] == ["all good"]


async def test_run_discord_refuses_a_foreign_outbox_and_a_missing_token(tmp_path: Path) -> None:
    from kuuki.app import build_app
    from kuuki.clock import RealClock
    from kuuki.errors import ConfigError
    from kuuki.platforms.discord import DiscordOutbox, run_discord
    from kuuki.testing import RecordingOutbox
    from kuuki.testing.llm import ScriptedLLM

    settings = replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3")
    clock = RealClock()
    foreign = await build_app(
        settings,
        clock=clock,
        outbox=RecordingOutbox(clock, None),
        llm=ScriptedLLM(),
        judge_llm=None,
        embedder=None,
    )
    try:
        with pytest.raises(TypeError):
            await run_discord(foreign, "token")
    finally:
        await foreign.close()
    app = await build_app(
        settings, clock=clock, outbox=DiscordOutbox(), llm=None, judge_llm=None, embedder=None
    )
    try:
        with pytest.raises(ConfigError):
            await run_discord(app, "")
    finally:
        await app.close()


@pytest.mark.parametrize("problem", ["token", "intent"])
async def test_login_problems_become_clear_errors(
    problem: str, server: DiscordServer, tmp_path: Path
) -> None:
    from discord.http import Route

    from kuuki.app import build_app
    from kuuki.clock import RealClock
    from kuuki.errors import KuukiError
    from kuuki.platforms.discord import DiscordOutbox, run_discord

    await server.start()
    server.message_content_allowed = problem != "intent"
    token = "wrong" if problem == "token" else server.token
    old, Route.BASE = Route.BASE, server.api_base
    settings = replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3")
    app = await build_app(
        settings,
        clock=RealClock(),
        outbox=DiscordOutbox(),
        llm=None,
        judge_llm=None,
        embedder=None,
    )
    try:
        with pytest.raises(KuukiError, match="token" if problem == "token" else "MESSAGE CONTENT"):
            await asyncio.wait_for(run_discord(app, token), 10)
    finally:
        Route.BASE = old
        await app.close()
        await server.close()
