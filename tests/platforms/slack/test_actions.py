"""What the bot sends to Slack: reactions by name, split replies, no crowd pings."""

from __future__ import annotations

import pytest

from kuuki.platforms.slack.emoji import from_slack_name, to_slack_name
from kuuki.platforms.slack.outbox import PART_LIMIT
from kuuki.testing import prose_lines
from kuuki.testing.slack_driver import SlackDriver


@pytest.mark.parametrize(
    ("emoji", "name"),
    [
        ("👀", "eyes"),
        ("😊", "blush"),
        ("👍", "+1"),
        ("🤔", "thinking_face"),
        ("✨", "sparkles"),
        ("💡", "bulb"),
        ("❤️", "heart"),
        (":tada:", "tada"),
        ("+1", "+1"),
    ],
)
def test_emoji_names(emoji: str, name: str) -> None:
    assert to_slack_name(emoji) == name


def test_unknown_emoji_is_refused_not_swapped() -> None:
    with pytest.raises(ValueError, match="no Slack reaction name"):
        to_slack_name("🦑")
    assert from_slack_name("+1::skin-tone-3") == "👍"
    assert from_slack_name("partyparrot") == ":partyparrot:"


async def test_reaction_uses_slack_names(driver: SlackDriver) -> None:
    driver.llm.enqueue("")  # no usable text: the responder falls back to a reaction
    mid = await driver.say("alice", "look at this idea", mention_bot=True)
    [emoji] = await driver.wait_bot_reactions(1)
    await driver.settle()
    [reaction] = driver.server.bot_reactions
    assert f"{reaction['channel']}:{reaction['ts']}" == mid  # scoped in kuuki, ts on Slack
    assert from_slack_name(reaction["name"]) == emoji
    assert emoji in driver.app.settings.persona.emoji
    calls = [c for c in driver.server.calls if c.method == "reactions.add"]
    assert len(calls) == 1 and ":" not in calls[0].args["name"]
    assert not driver.bot_messages


async def test_long_reply_is_split_on_boundaries_in_one_thread(driver: SlackDriver) -> None:
    root = await driver.start_thread("alice", "tell me everything")
    # one chat message of three long sentences (the responder keeps a few sentences only)
    text = " ".join(
        "item 0 " + ", ".join(prose_lines(120, 3, seed=k)).replace(".", "") + "." for k in range(3)
    )
    assert len(text) > 2 * PART_LIMIT
    driver.llm.enqueue(text)
    await driver.say("alice", "go on", thread=root, mention_bot=True)
    await driver.wait_bot_messages(3)
    await driver.settle()
    sent = driver.bot_messages
    assert all(len(s.text) <= driver.text_limit for s in sent)
    assert all(s.thread == root for s in sent)
    assert " ".join(s.text for s in sent).split() == text.split()
    assert all(s.text.startswith("item 0") and s.text.endswith(".") for s in sent)
    state = driver.app.engine.state(driver.channel_id())
    assert state is not None
    own = [m for m in state.buffer.recent() if m.user.is_bot]
    assert [m.id for m in own] == [sent[0].id] and own[0].text == text


async def test_no_crowd_pings_whatever_the_model_writes(driver: SlackDriver) -> None:
    driver.llm.enqueue("<!channel> <!here|here> <!everyone> @here @channel ping & <@U999>")
    await driver.say("alice", "announce it", mention_bot=True)
    [sent] = await driver.wait_bot_messages(1)
    await driver.settle()
    raw = sent.raw["text"]
    assert "<!" not in raw and "<@" not in raw
    assert not sent.mass_mentions_allowed
    assert "@here" not in sent.text and "@channel" not in sent.text
    [call] = [c for c in driver.server.calls if c.method == "chat.postMessage"]
    assert call.args["link_names"] in (False, "0", "false")
