"""Each channel its own manners, on both local platforms: `[channels.policy.<channel>]`
read by the decision pipeline, and `/kuuki mode` shown, changed, kept across a restart and
refused to a member who cannot manage the channel."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from kuuki.clock import VirtualClock
from kuuki.domain import ActionKind, Decision
from kuuki.settings import Settings
from kuuki.settings.policy import policies
from kuuki.store import Store
from kuuki.testing.conformance import PlatformDriver
from kuuki.testing.discord_server import DiscordDriver
from kuuki.testing.slack_driver import SlackDriver

DRIVERS: dict[str, Callable[..., PlatformDriver]] = {
    "discord": DiscordDriver, "slack": SlackDriver,
}
TOKYO = ZoneInfo("Asia/Tokyo")


@pytest.fixture(params=sorted(DRIVERS))
def platform(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Bot:
    """A driver started with a channel policy table, and every decision it makes."""

    def __init__(self, driver: PlatformDriver) -> None:
        self.driver = driver
        self.decisions: list[Decision] = []
        self.listen()

    def listen(self) -> None:
        self.driver.app.engine.on_decision(self.decisions.append)

    def of(self, message_id: str) -> Decision:
        [d] = [d for d in self.decisions if d.message_id == message_id]
        return d

    def first(self, message_id: str) -> Decision:
        """The first decision about a message (a question to the room left to wait has a
        second, its re-check's)."""
        return next(d for d in self.decisions if d.message_id == message_id)


@pytest.fixture
def start(platform: str, tmp_path: Path) -> Callable[..., Any]:
    started: list[PlatformDriver] = []

    async def make(table: dict[str, Any], clock: VirtualClock | None = None,
                   **more: Any) -> Bot:
        settings = replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3",
                           channel_policy=policies("channels.policy", table), **more)
        d = DRIVERS[platform](clock=clock)
        started.append(d)
        await d.start(settings)
        return Bot(d)

    make.started = started  # type: ignore[attr-defined]
    return make


@pytest.fixture
async def bot_factory(start: Any) -> AsyncIterator[Any]:
    yield start
    for d in start.started:
        await d.stop()


async def test_asked_answers_a_mention_and_nothing_ambient(bot_factory: Any) -> None:
    bot = await bot_factory({"#general": {"mode": "asked"}})
    d = bot.driver
    d.llm.enqueue("Happy to help.")
    ambient = await d.say("alice", "does anyone know how to restart the build server?")
    await d.settle()
    asked = await d.say("bob", "can you help me with the deploy?", mention_bot=True)
    [reply] = await d.wait_bot_messages(1)
    await d.settle()
    assert reply.text == "Happy to help."
    assert bot.of(asked).action.kind is ActionKind.REPLY
    silent = bot.of(ambient)
    assert silent.action.kind is ActionKind.NONE
    rec = silent.trace.stage("channel policy")
    assert rec is not None and rec.outcome == "decide"
    assert rec.reason == "this channel: only when asked"
    assert len(d.bot_messages) == 1 and d.bot_reactions == []


async def test_quiet_hours_hold_across_midnight_in_the_channels_zone(bot_factory: Any) -> None:
    # 23:30 in Tokyo, the latest one before now (the platforms stamp messages in real time).
    now = datetime.now(TOKYO)
    night = now.replace(hour=23, minute=30, second=0, microsecond=0)
    if night > now:
        night -= timedelta(days=1)
    clock = VirtualClock(night.astimezone(UTC))
    bot = await bot_factory(
        {"general": {"quiet_hours": "23:00-07:00", "timezone": "Asia/Tokyo"}}, clock)
    d = bot.driver
    d.llm.enqueue("I'm here.")
    late = await d.say("alice", "does anyone know how to restart the build server?")
    await d.settle()
    asked = await d.say("bob", "are you awake?", mention_bot=True)
    await d.wait_bot_messages(1)
    await d.settle()
    await clock.advance(60 * 60)  # 00:30: past midnight, still quiet
    after_midnight = await d.say("carol", "does anyone know where the logs went?")
    await d.settle()
    await clock.advance(7 * 60 * 60)  # 07:30: the quiet hours are over
    morning = await d.say("dave", "does anyone know who owns the release?")
    await d.settle()
    await clock.advance(120)  # its burst settles
    await d.settle()

    for quiet in (late, after_midnight):
        rec = bot.of(quiet).trace.stage("channel policy")
        assert rec is not None and rec.outcome == "decide"
        assert rec.reason == "quiet hours here (23:00-07:00, Asia/Tokyo)"
    assert bot.of(asked).action.kind is ActionKind.REPLY
    rec = bot.first(morning).trace.stage("channel policy")
    assert rec is not None and rec.outcome == "pass"


async def test_readiness_and_keywords_reach_the_local_score(bot_factory: Any) -> None:
    clock = VirtualClock(datetime.now(UTC))
    bot = await bot_factory({"general": {"readiness": 25, "keywords": ["kubernetes"]}}, clock)
    d = bot.driver
    said = await d.say("alice", "our kubernetes cluster is slow again today")
    await d.settle()
    await clock.advance(120)  # its burst settles
    await d.settle()
    trace = bot.of(said).trace
    points = {c.rule: c.points for c in trace.contributions}
    assert points["channel readiness"] == 25
    assert "keywords" in points


async def test_kuuki_mode_is_shown_to_anyone_changed_by_managers_and_kept(
    bot_factory: Any,
) -> None:
    bot = await bot_factory({"general": {"mode": "member"}})
    d = bot.driver
    shown = await d.slash("alice", "mode")
    assert "mode: member" in shown
    refused = await d.slash("alice", "mode", "asked")
    assert "Only members who can manage this channel" in refused
    assert "mode: member" in await d.slash("bob", "mode")
    bad = await d.slash("alice", "mode", "readiness=90", can_manage=True)
    assert bad.startswith("Not changed: readiness: expected a whole number")
    done = await d.slash("alice", "mode", "asked quiet_hours=22:00-06:00", can_manage=False)
    assert "Only members" in done
    done = await d.slash("alice", "mode", "mode=asked quiet_hours=22:00-06:00 timezone=UTC",
                         can_manage=True)
    assert "mode: asked" in done and "quiet_hours: 22:00-06:00" in done

    await d.restart()  # type: ignore[attr-defined]
    bot.listen()
    after = await d.slash("bob", "mode")
    assert "mode: asked" in after and "quiet_hours: 22:00-06:00" in after
    ambient = await d.say("carol", "does anyone know how to restart the build server?")
    await d.settle()
    rec = bot.of(ambient).trace.stage("channel policy")
    assert rec is not None and rec.outcome == "decide"


async def test_a_change_is_one_row_in_the_store(bot_factory: Any, tmp_path: Path) -> None:
    bot = await bot_factory({})
    d = bot.driver
    await d.slash("alice", "mode", "listen", can_manage=True)
    await d.slash("alice", "mode", "proactive=off", can_manage=True)
    store = await Store.open(f"sqlite:///{tmp_path}/x.sqlite3")
    try:
        [row] = await store.policies.all()
    finally:
        await store.close()
    assert row.channel_id == d.channel_id("general")  # type: ignore[attr-defined]
    assert row.values == {"mode": "listen", "proactive": "off"}
    reset = await d.slash("alice", "mode", "reset", can_manage=True)
    assert "mode: member" in reset


async def test_a_channels_own_system_prompt_writes_its_replies(bot_factory: Any) -> None:
    prompt = "You are {name}, the support desk's patient helper. Answer in one sentence."
    bot = await bot_factory({"general": {"system_prompt": prompt}})
    d = bot.driver
    d.llm.enqueue("Restart it from the dashboard.")
    await d.say("alice", "how do I restart the build server?", mention_bot=True)
    await d.wait_bot_messages(1)
    await d.settle()
    [call] = [c for c in d.llm.history if c.purpose == "reply"]
    assert "You are Kuu, the support desk's patient helper." in call.prompt
    assert "a friendly regular member of this chat" not in call.prompt


async def test_a_listen_channel_posts_nothing_and_records_everything(bot_factory: Any) -> None:
    clock = VirtualClock(datetime.now(UTC))
    bot = await bot_factory({"general": {"mode": "listen"}}, clock)
    d = bot.driver
    d.llm.enqueue("Restart it from the dashboard.")
    asked = await d.say("alice", "how do I restart the build server?", mention_bot=True)
    ambient = await d.say("bob", "lunch anyone?")
    await d.settle()
    await clock.advance(120)  # the ambient burst settles
    await d.settle()
    would = bot.of(asked)
    assert would.shadow and would.action.kind is ActionKind.REPLY
    assert would.action.text == "Restart it from the dashboard."  # written, not sent
    assert d.bot_messages == [] and d.bot_reactions == []
    for said in (asked, ambient):  # every decision stored, marked as listening only
        row = await d.app.store.browse.decision_for(said)
        assert row is not None and row["trace"]["features"]["shadow"] is True


async def test_listen_by_kuuki_mode_and_the_whole_bot_by_shadow(bot_factory: Any) -> None:
    bot = await bot_factory({})
    d = bot.driver
    await d.slash("alice", "mode", "listen", can_manage=True)
    d.llm.enqueue("Hello!")
    asked = await d.say("alice", "are you there?", mention_bot=True)
    await d.settle()
    assert bot.of(asked).shadow and d.bot_messages == []
    await d.slash("alice", "mode", "member", can_manage=True)
    d.llm.enqueue("Yes, here.")
    again = await d.say("alice", "and now?", mention_bot=True)
    [reply] = await d.wait_bot_messages(1)
    await d.settle()
    assert reply.text == "Yes, here." and not bot.of(again).shadow


async def test_the_whole_bot_listens_with_shadow(bot_factory: Any) -> None:
    """`kuuki run --shadow` sets KUUKI_SHADOW: every channel listens, whatever its policy."""
    bot = await bot_factory({"general": {"mode": "member"}}, shadow=True)
    d = bot.driver
    d.llm.enqueue("Here!")
    asked = await d.say("alice", "are you there?", mention_bot=True)
    await d.settle()
    assert bot.of(asked).shadow and bot.of(asked).action.text == "Here!"
    assert d.bot_messages == [] and d.bot_reactions == []
