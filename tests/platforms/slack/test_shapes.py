"""What Slack sends beyond plain text, end to end (issue 26): the local Slack sends shares,
app posts, a deleted thread root's tombstone, dates, user groups and bare files through the
real slack-bolt client; the tests read what the bot stored, kept and asked its model."""

from __future__ import annotations

from kuuki.testing.slack_driver import SlackDriver


def _texts(driver: SlackDriver, channel: str = "general") -> dict[str, str]:
    state = driver.app.engine.state(driver.channel_id(channel))
    assert state is not None
    return {m.id: m.text for m in state.buffer.recent()}


async def test_a_forwarded_question_for_the_bot_is_read_and_answered(driver: SlackDriver) -> None:
    server = driver.server
    elsewhere = server.add_channel("elsewhere", member=False)  # the bot never saw it
    asked = server.user_message(driver.user_id("bob"), elsewhere,
                                f"<@{server.bot_user_id}> is the deploy still at 5pm?")
    driver.llm.enqueue("Yes, still 5pm.")
    mid = await driver.share("alice", f"{elsewhere}:{asked['ts']}")  # no comment of her own
    [answer] = await driver.wait_bot_messages(1)
    await driver.settle()
    persona = driver.app.settings.persona.name
    read = f"[shared message from bob]\n> @{persona} is the deploy still at 5pm?"
    stored = await driver.app.store.messages.get_message(mid)
    assert stored is not None and stored.text == read and stored.user.name == "alice"
    assert server.bot_user_id in stored.mentions  # a mention inside a share is a mention
    assert answer.text == "Yes, still 5pm." and answer.channel == "general"
    # the model read who forwarded what (the bot's own name is left out of what it reads)
    assert "alice: [shared message from bob]\n> is the deploy still at 5pm?" in (
        driver.llm.prompts("reply")[-1])


async def test_a_comment_on_a_share_and_an_app_post_read_as_people_see_them(
    driver: SlackDriver,
) -> None:
    said = await driver.say("bob", "the freeze starts on <!date^1392734382^{date}|Feb 18>")
    shared = await driver.share("alice", said, "heads up <!subteam^"
                                f"{driver.server.add_usergroup('release-team')}>")
    posted = await driver.app_post("GitHub", [{
        "pretext": "Issue created by <https://github.com/ldub|ldub>",
        "title": "<https://github.com/o/r/issues/2|#2 flaky test>", "text": "fails on CI",
        "fallback": "[o/r] Issue opened by ldub"}])
    upload = await driver.share_file("carol", "plan.pdf")
    await driver.settle()
    assert _texts(driver) == {
        said: "the freeze starts on Feb 18",
        shared: "heads up @release-team\n[shared message from bob]\n"
                "> the freeze starts on Feb 18",
        posted: "Issue created by ldub (https://github.com/ldub)\n"
                "#2 flaky test (https://github.com/o/r/issues/2)\nfails on CI",
        upload: "[file: plan.pdf]",
    }
    stored = await driver.app.store.messages.get_message(posted)
    assert stored is not None and stored.user.name == "GitHub" and stored.user.is_bot
    assert not driver.bot_messages  # none of it addressed the bot


async def test_a_deleted_thread_root_leaves_the_store_and_its_replies_stay(
    driver: SlackDriver,
) -> None:
    root = await driver.start_thread("alice", "planning the offsite")
    reply = await driver.say("bob", "I can book the venue", thread=root)
    await driver.settle()
    await driver.delete(root)  # it has a reply: Slack keeps a tombstone in its place
    await driver.settle()
    shown = driver.server.find_message(driver.channel_id(), root.rpartition(":")[2])
    assert shown is not None and shown["subtype"] == "tombstone"  # what history shows now
    gone = await driver.app.store.messages.get_message(root)
    assert gone is not None and gone.deleted and gone.text == ""
    kept = await driver.app.store.messages.get_message(reply)
    assert kept is not None and not kept.deleted and kept.thread == root
    assert _texts(driver) == {reply: "I can book the venue"}  # no "This message was deleted."
