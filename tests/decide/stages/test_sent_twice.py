"""A message sent twice before the bot answered gets one answer (issue 25)."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_core import ALICE, BOB, Harness, make

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.stages.sent_twice import same_text
from kuuki.domain import ActionKind, User
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import ScriptedLLM

CAROL = User("carol", "carol")
QUESTION = "does anyone know how to keep the docker build cache after a restart?"


async def _harness(tmp_path: Path) -> Harness:
    clock = VirtualClock()
    s = Settings(persona=Persona(name="Kuu", keywords=("docker",)))
    return await make(tmp_path, llm=ScriptedLLM(default="a cache mount"), settings=s,
                      judge=build_judge(s, None, clock), clock=clock)


def test_copies_differ_only_in_case_width_spaces_and_punctuation() -> None:
    assert same_text("@Kuu how do I cache pip?") == same_text("@kuu  how do I cache pip??")
    assert same_text("くうさん、ロゴの件は？") == same_text("くうさん ロゴの件は？？")
    assert same_text("ＡＢＣ１２３!") == same_text("abc123")
    assert same_text("cache pip") != same_text("cache npm")


async def test_a_mention_sent_twice_gets_one_reply(tmp_path: Path) -> None:
    h = await _harness(tmp_path)
    try:
        first = await h.say(ALICE, "@Kuu how do I cache pip installs in docker?",
                            mentions=("Kuu",))
        await h.clock.advance(3)
        again = await h.say(ALICE, "@Kuu how do I cache pip installs in docker??",
                            mentions=("Kuu",))
        await h.clock.advance(60)
        await h.app.engine.idle()
        replies = [d for d in h.decisions if d.action.kind is ActionKind.REPLY]
        assert [d.message_id for d in replies] == [first]
        double = next(d for d in h.decisions if d.message_id == again)
        assert double.action.kind is ActionKind.NONE
        assert double.reason == f"sent twice: same as {first}"
        stage = double.trace.stage("sent twice")
        assert stage is not None and stage.facts["duplicate_of"] == first
        assert stage.facts["pending"] is False  # the first was answered already
    finally:
        await h.app.close()


async def test_an_open_question_sent_twice_is_answered_once_as_the_original(
    tmp_path: Path,
) -> None:
    h = await _harness(tmp_path)
    try:
        await h.say(ALICE, "morning all")
        await h.clock.advance(60)
        await h.say(BOB, "morning")
        await h.clock.advance(60)
        first = await h.say(CAROL, QUESTION)
        await h.clock.advance(4)
        again = await h.say(CAROL, QUESTION)
        double = h.last()
        assert double.message_id == again and double.action.kind is ActionKind.NONE
        stage = double.trace.stage("sent twice")
        assert stage is not None and stage.facts["duplicate_of"] == first
        assert stage.facts["pending"] is True  # the original's burst was still settling
        await h.clock.advance(300)
        await h.app.engine.idle()
        about_first = [d for d in h.decisions if d.message_id == first]
        # the double did not supersede the original: it settled, then was answered
        assert "superseded" not in [d.reason for d in about_first]
        assert about_first[-1].action.kind is ActionKind.REPLY
        about_again = [d for d in h.decisions if d.message_id == again]
        assert [d.action.kind for d in about_again] == [ActionKind.NONE]
        assert sum(d.action.kind is ActionKind.REPLY for d in h.decisions) == 1
    finally:
        await h.app.close()


async def test_not_a_double_other_person_too_late_or_after_a_failed_answer(
    tmp_path: Path,
) -> None:
    h = await _harness(tmp_path)
    try:
        text = "@Kuu which base image do we use?"
        await h.say(ALICE, text, mentions=("Kuu",))
        await h.clock.advance(3)
        await h.say(BOB, text, mentions=("Kuu",))  # another person asking the same
        assert h.last().action.kind is ActionKind.REPLY
        await h.clock.advance(180)
        await h.say(ALICE, text, mentions=("Kuu",))  # past the two minutes
        assert h.last().action.kind is ActionKind.REPLY
        await h.clock.advance(180)
        h.outbox.fail_with = ConnectionError("platform down")
        await h.say(CAROL, text, mentions=("Kuu",))  # its answer never arrived
        h.outbox.fail_with = None
        await h.clock.advance(3)
        await h.say(CAROL, text, mentions=("Kuu",))
        assert h.last().action.kind is ActionKind.REPLY
        assert h.last().trace.stage("sent twice").outcome == "pass"  # type: ignore[union-attr]
    finally:
        await h.app.close()
