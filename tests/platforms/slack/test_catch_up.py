"""Restarting on Slack: channels and threads are read back from history, owed answers are
given once, acknowledged events survive, ids stay scoped to their channel (issue 11)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.settings import Settings
from kuuki.testing.slack_driver import SlackDriver


@pytest.fixture
async def driver(tmp_path: Path) -> AsyncIterator[SlackDriver]:
    d = SlackDriver()
    await d.start(
        replace(Settings(), store_url=f"sqlite:///{tmp_path}/s.sqlite3", catch_up_minutes=10)
    )
    try:
        yield d
    finally:
        await d.stop()


def _at(minutes_ago: float) -> str:
    return f"{time.time() - minutes_ago * 60:.6f}"


async def test_channels_and_threads_are_caught_up_after_a_restart(driver: SlackDriver) -> None:
    server = driver.server
    general = driver.channel_id()
    alice, bob = driver.user_id("alice"), driver.user_id("bob")
    # The last message the bot stored is 40 minutes old.
    first = {"type": "message", "user": alice, "text": "release thread", "ts": _at(40)}
    server.ws.messages[general].append(first)
    await server.emit(server.message_event(general, first))
    await driver.settle()
    root_ts = first["ts"]
    root = f"{general}:{root_ts}"
    mention = f"<@{server.bot_user_id}>"
    said: dict[str, str] = {}

    def meanwhile() -> None:
        # Said while the bot was down and never delivered to it (Slack gave up retrying).
        late = {"type": "message", "user": alice, "text": f"{mention} still on for friday?",
                "ts": _at(30)}  # 30 minutes ago: too late to answer now
        server.ws.messages[general].append(late)
        in_thread = server.user_message(bob, general, f"{mention} is the build done?",
                                        thread_ts=root_ts)
        top = server.user_message(bob, general, "ok, anyone?")
        said.update(late=f"{general}:{late['ts']}", thread=f"{general}:{in_thread['ts']}",
                    top=f"{general}:{top['ts']}")

    driver.llm.enqueue("The build finished ten minutes ago.")
    await driver.restart(meanwhile)
    await driver.settle()
    await driver.wait_bot_messages(1)
    await driver.settle()
    store = driver.app.store
    for mid in said.values():
        assert await store.messages.get_message(mid) is not None, mid
    [answer] = driver.bot_messages
    assert answer.text == "The build finished ten minutes ago."
    assert answer.thread == root  # answered where it was asked
    assert answer.raw["metadata"]["event_payload"]["reply_to"] == said["thread"].rpartition(":")[2]
    [late] = await store.browse.decisions_for(said["late"])
    assert late["action"] == "none" and "too late to answer" in late["reason"]
    replies = [c for c in server.calls if c.method == "conversations.replies"]
    assert replies and replies[0].args["ts"] == root_ts

    await driver.restart()  # nothing new: nothing answered twice
    await driver.settle()
    assert len(driver.bot_messages) == 1
    assert len(await driver.app.store.browse.decisions_for(said["thread"])) == 1


async def test_an_answer_posted_before_a_crash_is_read_back_as_answered(
    driver: SlackDriver,
) -> None:
    server = driver.server
    general = driver.channel_id()
    alice = driver.user_id("alice")
    await driver.say("alice", "hi all")
    await driver.settle()
    said: dict[str, str] = {}

    def meanwhile() -> None:
        asked = server.user_message(alice, general, f"<@{server.bot_user_id}> ping?")
        # the crash came after the bot posted its answer and before anything was stored
        reply = server.user_message(server.bot_user_id, general, "pong", bot_id=server.bot_id)
        reply["metadata"] = {"event_type": "kuuki_reply",
                             "event_payload": {"reply_to": asked["ts"]}}
        said["asked"] = f"{general}:{asked['ts']}"

    await driver.restart(meanwhile)
    await driver.settle()
    assert [m.text for m in driver.bot_messages] == ["pong"]  # not answered again
    [d] = await driver.app.store.browse.decisions_for(said["asked"])
    assert "answered before the restart" in d["reason"]


async def test_reading_back_starts_before_the_bots_own_answers(driver: SlackDriver) -> None:
    """A mention the store refused (an outage) can lie before an answer the bot sent and
    recorded afterwards, to a mention taken in earlier; after a crash, reading back from
    that answer skipped the refused mention for good."""
    server = driver.server
    general = driver.channel_id()
    driver.llm.enqueue("First answer.")
    asked = await driver.say("alice", "first question?", mention_bot=True)
    [first] = await driver.wait_bot_messages(1)
    await driver.settle()
    asked_ts, answer_ts = float(asked.rpartition(":")[2]), float(first.id.rpartition(":")[2])
    lost = server.user_message(driver.user_id("bob"), general,
                               f"<@{server.bot_user_id}> second question?")
    server.ws.messages[general].remove(lost)  # said between the two, never taken in
    lost["ts"] = f"{(asked_ts + answer_ts) / 2:.6f}"
    assert asked_ts < float(lost["ts"]) < answer_ts
    msgs = server.ws.messages[general]
    msgs.insert(msgs.index(first.raw), lost)

    driver.llm.enqueue("Second answer.")
    await driver.restart()
    await driver.wait_bot_messages(2)
    await driver.settle()
    lost_id = f"{general}:{lost['ts']}"
    assert await driver.app.store.messages.get_message(lost_id) is not None
    assert [m.text for m in driver.bot_messages] == ["First answer.", "Second answer."]
    assert driver.bot_messages[1].raw["metadata"]["event_payload"]["reply_to"] == lost["ts"]
    assert len(await driver.app.store.browse.decisions_for(lost_id)) == 1


async def test_the_same_ts_in_two_channels_is_two_messages(driver: SlackDriver) -> None:
    server = driver.server
    general, random = driver.channel_id(), driver.channel_id("random")
    alice = driver.user_id("alice")
    ts = server.next_ts()
    for channel, text in ((general, "in general"), (random, "in random")):
        msg = {"type": "message", "user": alice, "text": text, "ts": ts}
        server.ws.messages[channel].append(msg)
        await server.emit(server.message_event(channel, msg))
    await driver.settle()
    await driver.delete(f"{random}:{ts}", channel="random")
    await driver.settle()
    store = driver.app.store
    kept = await store.messages.get_message(f"{general}:{ts}")
    gone = await store.messages.get_message(f"{random}:{ts}")
    assert kept is not None and kept.text == "in general" and not kept.deleted
    assert gone is not None and gone.deleted


async def test_a_share_and_a_deleted_thread_root_read_back_as_they_read_live(
    driver: SlackDriver,
) -> None:
    """Issue 26: history rows go through the live path's mapping, so what was missed while
    the bot was down reads as it would have live: a share as the shared words, a thread root
    deleted meanwhile (its tombstone, in history and in its thread) as that root's deletion."""
    server = driver.server
    general = driver.channel_id()
    elsewhere = server.add_channel("elsewhere", member=False)
    source = server.user_message(driver.user_id("bob"), elsewhere, "the venue is booked")
    live = await driver.share("alice", f"{elsewhere}:{source['ts']}")
    root = await driver.start_thread("alice", "offsite plans")
    reply = await driver.say("bob", "count me in", thread=root)
    await driver.settle()
    said: dict[str, str] = {}

    def meanwhile() -> None:  # never delivered to the bot: only history tells
        missed = server.user_message(driver.user_id("carol"), general, "")
        missed["attachments"] = [server.shared(elsewhere, source)]
        said["share"] = f"{general}:{missed['ts']}"
        tombstoned = server.find_message(general, root.rpartition(":")[2])
        assert tombstoned is not None
        server.tombstone(general, tombstoned)

    await driver.restart(meanwhile)
    await driver.settle()
    store = driver.app.store
    shared_live, shared_back = await store.messages.get_message(live), await store.messages.get_message(
        said["share"])
    assert shared_live is not None and shared_back is not None
    assert shared_back.text == shared_live.text == "[shared message from bob]\n> the venue is booked"
    gone, kept = await store.messages.get_message(root), await store.messages.get_message(reply)
    assert gone is not None and gone.deleted  # not a post by Slackbot, not kept as it was
    assert kept is not None and not kept.deleted
    assert not [m for m in await store.messages.recent_messages(general, limit=50)
                if "This message was deleted." in m.text]
