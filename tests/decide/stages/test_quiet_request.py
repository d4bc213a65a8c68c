"""A request to stay out of the channel, said to the bot in words (issue 25): honoured
like `/kuuki quiet` for the time asked, an hour when none is given."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from tests.engine.test_core import ALICE, BOB, GENERAL, Harness, make

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.stages.quiet_request import asks_for_quiet, quiet_minutes
from kuuki.domain import ActionKind, Message, Stage
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import ScriptedLLM

NAMES = ("Kuu", "くう", "クウ")


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("Kuu, can you stay out of this channel for an hour?", 60),
        ("hey bot, please be quiet for 30 minutes", 30),
        ("kuu, stop talking here for now", 60),
        ("Kuu, be quiet for 2 hours, please", 120),
        ("kuu please go quiet for half an hour", 30),
        ("kuu, shut up for 3 days", 24 * 60),  # capped at a day
        ("くう、ちょっと黙ってて", 60),
        ("くうは1時間静かにしてて", 60),
        ("しばらくくうは発言しないで", 60),
        ("30分ほど静かにしてください", 30),
        ("くう、1時間半静かにしてて", 90),
        ("くう、三時間黙ってて", 180),
        ("くう、半日黙ってて", 12 * 60),
    ],
)
def test_requests_and_their_durations(text: str, minutes: float) -> None:
    assert asks_for_quiet(text, NAMES), text
    assert quiet_minutes(text) == minutes, text


@pytest.mark.parametrize(
    "text",
    [
        "tell Bob to be quiet",
        "Kuu, tell Bob to be quiet",
        "be quiet, Bob",
        "Bob, be quiet",
        "Kuu was quiet yesterday",
        "why did you stay quiet, kuu?",
        "くうが黙ってた",
        "くうが黙ってて助かった",
        "ボブに黙ってって言って",
        "kuu, what do you think?",
        "静かな場所がいい",
    ],
)
def test_reports_and_requests_about_others_are_not_requests(text: str) -> None:
    assert not asks_for_quiet(text, NAMES), text


async def _harness(tmp_path: Path, persona: Persona) -> Harness:
    clock = VirtualClock()
    s = Settings(persona=persona)
    return await make(tmp_path, llm=ScriptedLLM(default="sure"), settings=s,
                      judge=build_judge(s, None, clock), clock=clock)


async def test_a_request_quiets_the_channel_like_the_command(tmp_path: Path) -> None:
    h = await _harness(tmp_path, Persona(name="Kuu", keywords=("docker",)))
    try:
        asked_at = h.clock.now()
        mid = await h.say(ALICE, "Kuu, can you stay out of this channel for an hour?")
        ack = h.last()
        assert ack.message_id == mid and ack.action.kind is ActionKind.REACT
        assert ack.action.emoji == "👍"
        stage = ack.trace.stage("quiet request")
        assert stage is not None and stage.facts == {"quiet_s": 3600.0, "to_bot": "name"}
        until = asked_at + timedelta(hours=1)
        assert ack.trace.features["quiet_until"] == until.isoformat()
        assert h.app.engine.status(GENERAL)["quiet_until"] == until.isoformat()
        # an open question to the room, in the bot's area: silent, re-check included
        q = await h.say(BOB, "does anyone know how to keep the docker build cache?")
        await h.clock.advance(240)
        await h.app.engine.idle()
        about_q = [d for d in h.decisions if d.message_id == q]
        assert about_q and all(d.action.kind is ActionKind.NONE for d in about_q)
        assert about_q[-1].reason == "asked to be quiet here"
        # proactive talk too
        wake = Message("w1", GENERAL.id, BOB, "anyone climbing fuji?", h.clock.now())
        proactive = await h.app.engine.propose(GENERAL, wake, topic="Fuji", score=90,
                                               reason="proactive: fact 1")
        assert proactive is not None and proactive.action.kind is ActionKind.NONE
        assert proactive.reason == "asked to be quiet here"
        # addressed: answered
        await h.say(BOB, "@Kuu which base image do we use?", mentions=("Kuu",))
        assert h.last().action.kind is ActionKind.REPLY
        # the hour is up
        await h.clock.advance(3600)
        assert h.app.engine.status(GENERAL)["quiet_until"] is None
    finally:
        await h.app.close()


async def test_the_persona_emoji_and_a_japanese_request(tmp_path: Path) -> None:
    h = await _harness(tmp_path, Persona(name="くう", aliases=("Kuu",), emoji=("🐱", "✨")))
    try:
        await h.say(ALICE, "30分ほど静かにしてください", mentions=("くう",))
        ack = h.last()
        assert (ack.action.kind, ack.action.emoji) == (ActionKind.REACT, "🐱")
        assert ack.stage is Stage.ADDRESSED
        until = h.clock.now() + timedelta(minutes=30)
        assert h.app.engine.status(GENERAL)["quiet_until"] == until.isoformat()
    finally:
        await h.app.close()


async def test_a_request_about_someone_else_does_nothing(tmp_path: Path) -> None:
    h = await _harness(tmp_path, Persona(name="Kuu"))
    try:
        await h.say(ALICE, "Kuu, tell Bob to be quiet")
        await h.say(BOB, "be quiet, Alice")
        await h.say(ALICE, "I think Kuu was quiet yesterday")
        assert all(d.trace.stage("quiet request") is None
                   or d.trace.stage("quiet request").outcome == "pass" for d in h.decisions)
        assert not any(d.action.kind is ActionKind.REACT and d.reason.startswith("asked")
                       for d in h.decisions)
        assert h.app.engine.status(GENERAL)["quiet_until"] is None
    finally:
        await h.app.close()
