"""Restarting on Discord: what was said while the bot was away is read back from the
channel's history, answered once if still owed, and never handled twice (issue 11)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordDriver, DiscordServer


@pytest.fixture
async def driver(server: DiscordServer, tmp_path: Path) -> AsyncIterator[DiscordDriver]:
    d = DiscordDriver(server)
    settings = replace(
        Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3", catch_up_minutes=10
    )
    await d.start(settings)
    try:
        yield d
    finally:
        await d.stop()


async def decisions_for(driver: DiscordDriver, mid: str) -> list[dict[str, object]]:
    return await driver.app.store.browse.decisions_for(mid)


async def test_what_was_said_while_away_is_read_back_and_owed_answers_given_once(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    general = driver.channel_id()
    await server.post("alice", general, "morning all", ago_s=40 * 60)
    await driver.settle()
    said: dict[str, str] = {}

    async def meanwhile() -> None:
        said["late"] = (await server.post(
            "bob", general, f"<@{server.bot_user['id']}> did the deploy work?", ago_s=20 * 60
        ))["id"]
        said["chat"] = (await server.post("carol", general, "lunch?", ago_s=5 * 60))["id"]
        said["owed"] = (await server.post(
            "dave", general, f"<@{server.bot_user['id']}> can you check the logs?", ago_s=60
        ))["id"]

    driver.llm.enqueue("Sure, checking the logs now.")
    await driver.restart(meanwhile)
    await driver.wait_bot_messages(1)
    await driver.settle()

    stored = {m.id for m in await driver.app.store.messages.recent_messages(general, limit=50)}
    assert set(said.values()) <= stored  # everything said meanwhile is in the store
    [answer] = driver.bot_messages
    assert answer.text == "Sure, checking the logs now."
    [owed] = await decisions_for(driver, said["owed"])
    assert owed["action"] == "reply"
    assert "missed while the bot was away" in owed["trace"]["steps"][0]
    [late] = await decisions_for(driver, said["late"])
    assert late["action"] == "none" and "too late to answer" in str(late["reason"])
    assert await decisions_for(driver, said["chat"]) == []  # not addressed: recorded only
    reads = [q for cid, q in server.history_reads if cid == general]
    assert reads and "after" in reads[-1]  # from the last message stored, not from the start

    # A second restart reads nothing new and answers nothing again.
    await driver.restart()
    await driver.settle()
    assert len(driver.bot_messages) == 1
    assert len(await decisions_for(driver, said["owed"])) == 1


async def test_an_answer_sent_before_a_crash_is_not_sent_again(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    """The bot answered, but the crash came before its decision reached the store: the
    answer is in the channel's history, so catching up knows it was answered."""
    general = driver.channel_id()
    await driver.say("alice", "hello everyone")
    await driver.settle()

    async def meanwhile() -> None:
        asked = await server.post("bob", general, f"<@{server.bot_user['id']}> ping?")
        # what a crash right after sending leaves: the reply on Discord, nothing stored
        plain = server.message_payload(general, server.bot_user, "pong!")
        server.messages[plain["id"]] = plain
        reacted = await server.post("carol", general, f"<@{server.bot_user['id']}> thanks!")
        server.bot_reactions.append((general, reacted["id"], "😊"))
        said.update(asked=asked["id"], reacted=reacted["id"])

    said: dict[str, str] = {}
    await driver.restart(meanwhile)
    await driver.settle()
    assert driver.bot_messages == []  # nothing posted by this run
    assert server.bot_reactions == [(general, said["reacted"], "😊")]  # nor reacted again
    for key in ("asked", "reacted"):
        [d] = await decisions_for(driver, said[key])
        assert d["action"] == "none" and "answered before the restart" in str(d["reason"])


async def test_an_event_taken_in_but_not_handled_is_handled_after_a_restart(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    """What the inbox held at the crash (accepted, not yet handled) is handled at start."""
    general = driver.channel_id()
    await driver.say("alice", "first")
    await driver.settle()
    event = None

    async def meanwhile() -> None:
        nonlocal event
        from kuuki.domain import ChatEvent, EventKind, Message, User
        from kuuki.store import Store

        msg = await server.post("erin", general, f"<@{server.bot_user['id']}> you there?")
        store = await Store.open(driver.store_url)
        try:
            channel = (await store.roster.get_channel(general))
            assert channel is not None
            m = Message(msg["id"], general, User(server.user("erin")["id"], "erin"),
                        "@Kuu you there?", driver.app.clock.now(),
                        mentions=(str(server.bot_user["id"]),))
            event = ChatEvent(EventKind.POSTED, channel, m.id, m.ts, message=m)
            assert await store.inbox.admit_events([event]) == {m.id}
            assert [e.event_id for e in await store.inbox.pending_events()] == [m.id]
        finally:
            await store.close()

    driver.llm.enqueue("Yes, here!")
    await driver.restart(meanwhile)
    await driver.wait_bot_messages(1)
    await driver.settle()
    assert event is not None
    assert [m.text for m in driver.bot_messages] == ["Yes, here!"]
    assert await driver.app.store.inbox.pending_events() == []
    assert len(await decisions_for(driver, event.event_id)) == 1


async def test_a_plain_answer_overtaken_by_a_message_still_counts_as_answering(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    """The outbox sends a plain message when what it answers is the latest it saw, but
    another message can reach Discord first: read back after a crash, the plain answer
    follows that message. It answered the addressed message before it, not the chatter."""
    general = driver.channel_id()
    await driver.say("alice", "hello everyone")
    await driver.settle()
    said: dict[str, str] = {}

    async def meanwhile() -> None:
        asked = await server.post("bob", general, f"<@{server.bot_user['id']}> ping?")
        overtook = await server.post("carol", general, "lunch at noon")
        plain = server.message_payload(general, server.bot_user, "pong!")  # no reference
        server.messages[plain["id"]] = plain
        said.update(asked=asked["id"], overtook=overtook["id"])

    await driver.restart(meanwhile)
    await driver.settle()
    assert driver.bot_messages == []  # not answered a second time
    [d] = await decisions_for(driver, said["asked"])
    assert d["action"] == "none" and "answered before the restart" in str(d["reason"])
    assert await decisions_for(driver, said["overtook"]) == []



async def test_an_answer_recorded_nowhere_before_later_stored_messages_is_read_back(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    """A store outage then a crash: the bot answered a message, the answer's records were
    lost, yet later messages reached the store. The message is still in the inbox, so
    reading back starts just before it, not after the last message stored."""
    from kuuki.domain import ChatEvent, EventKind, Message, User
    from kuuki.store import Store

    general = driver.channel_id()
    await driver.say("alice", "hello everyone")
    await driver.settle()
    said: dict[str, str] = {}

    async def meanwhile() -> None:
        asked = await server.post("bob", general, f"<@{server.bot_user['id']}> ping?")
        answer = server.message_payload(general, server.bot_user, "pong!", reference=asked["id"])
        server.messages[answer["id"]] = answer
        later = await server.post("carol", general, "lunch at noon")
        store = await Store.open(driver.store_url)
        try:
            channel = await store.roster.get_channel(general)
            assert channel is not None
            bob = User(str(asked["author"]["id"]), "bob")
            m = Message(asked["id"], general, bob, asked["content"], driver.app.clock.now(),
                        mentions=(str(server.bot_user["id"]),))
            assert await store.inbox.admit_events(
                [ChatEvent(EventKind.POSTED, channel, m.id, m.ts, message=m)]
            ) == {m.id}  # taken in, never handled
            carol = User(str(later["author"]["id"]), "carol")
            await store.writer.add_message(
                Message(later["id"], general, carol, later["content"], driver.app.clock.now())
            )
            await store.writer.flush()  # ...while a later message did reach the store
        finally:
            await store.close()
        said.update(asked=asked["id"])

    await driver.restart(meanwhile)
    await driver.settle()
    assert driver.bot_messages == []  # not answered a second time
    [d] = await decisions_for(driver, said["asked"])
    assert d["action"] == "none" and "answered before the restart" in str(d["reason"])
