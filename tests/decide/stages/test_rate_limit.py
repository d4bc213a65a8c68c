"""The per-person limit on calls tells a flood from a conversation: a person asking the
bot one thing after another, waiting for each answer, gets answers; a run of bare pings
and mentions of many people at once stay limited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.engine.test_core import ALICE, Harness, make

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.stages.addressed import ADDRESSED_LIMIT
from kuuki.domain import ActionKind
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import ScriptedLLM

QUESTIONS = [
    "Kuu, do I just copy paste the 12 lines under point 8?",
    "Kuu, what about line 11, it has a sudo in it",
    "Kuu, and do I run that as root or as my user?",
    "Kuu, it says permission denied on /etc/fstab now",
    "Kuu, ok that worked, should I reboot before the next step?",
    "Kuu, after the reboot the wifi icon is gone, is that expected?",
    "Kuu, where do I find the network manager log?",
    "Kuu, it mentions a firmware file missing, which package has it?",
    "Kuu, installed it, do I need to reload the module?",
]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    clock = VirtualClock()
    s = Settings(persona=Persona(name="Kuu"))
    harness = await make(tmp_path, llm=ScriptedLLM(default="try this"), settings=s,
                         judge=build_judge(s, None, clock), clock=clock)
    yield harness
    await harness.app.close()


async def test_a_person_asking_one_thing_after_another_gets_answers(h: Harness) -> None:
    for text in QUESTIONS:
        await h.say(ALICE, text)
        assert h.last().action.kind is ActionKind.REPLY, h.last().reason
        await h.clock.advance(40)
    assert len(QUESTIONS) > ADDRESSED_LIMIT + 1
    late = h.last().trace
    assert late.stage("rate limit") is not None
    assert late.stage("rate limit").facts["conversation"]
    assert any("not a flood" in step for step in late.steps)


async def test_bare_pings_stay_limited(h: Harness) -> None:
    reasons = []
    for ping in ("hi", "yo", "", "ok", "hm", "ah", "oi", "eh", "uh"):
        await h.say(ALICE, f"@Kuu {ping}", mentions=("Kuu",))
        reasons.append(h.last().reason)
        await h.clock.advance(15)  # past the ping burst's 10 s: each one answered alone
    limited = "rate limited: react only"
    assert limited not in reasons[:ADDRESSED_LIMIT]
    assert reasons[ADDRESSED_LIMIT:] == [limited] * 3


async def test_mentions_of_many_people_at_once_stay_limited(h: Harness) -> None:
    kinds = []
    for n, text in enumerate(QUESTIONS):
        await h.say(ALICE, text.replace("Kuu,", "@Kuu @bob @carol @dave"),
                    mentions=("Kuu", "bob", "carol", "dave"), mid=f"mass{n}")
        kinds.append(h.last().action.kind)
        await h.clock.advance(40)
    assert kinds[:ADDRESSED_LIMIT] == [ActionKind.REPLY] * ADDRESSED_LIMIT
    assert set(kinds[ADDRESSED_LIMIT:]) == {ActionKind.REACT}
    assert h.last().reason == "rate limited: react only"


async def test_a_person_firing_questions_without_waiting_is_limited(h: Harness) -> None:
    kinds = []
    for text in QUESTIONS:
        await h.say(ALICE, text)
        kinds.append(h.last().action.kind)
        await h.clock.advance(12)  # four calls a minute: faster than anyone reads answers
    assert ActionKind.REACT in kinds[ADDRESSED_LIMIT:]
