"""The engine running the decision pipeline: what is remembered after a send, and the
stages' results in the stored trace (issue 12)."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_core import ALICE, BOB, GENERAL, make

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.rules import OPEN_QUESTION
from kuuki.domain import ActionKind, Stage, User
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import ScriptedLLM

CAROL = User("carol", "carol")


async def test_an_intervention_is_remembered_only_once_it_was_sent(tmp_path: Path) -> None:
    clock = VirtualClock()
    s = Settings(persona=Persona(name="Kuu", keywords=("docker",)))
    pipeline = build_judge(s, None, clock)
    h = await make(tmp_path, llm=ScriptedLLM(default="a cache mount"), settings=s,
                   judge=pipeline, clock=clock)
    history = pipeline.stage("intervention policy").policy.history
    try:
        await h.say(ALICE, "morning all")
        await h.clock.advance(60)
        await h.say(BOB, "morning")
        await h.clock.advance(60)
        h.outbox.fail_with = ConnectionError("platform down")
        await h.say(CAROL, "does anyone know how to keep the docker build cache after a restart?")
        await h.clock.advance(240)
        await h.app.engine.idle()
        spoke = [d for d in h.decisions if d.judged is not ActionKind.NONE]
        assert spoke and spoke[-1].stage is Stage.LOCAL
        assert any("platform down" in e for e in spoke[-1].trace.errors)
        assert history.last(GENERAL.id, h.clock.now()) is None  # never delivered
        h.outbox.fail_with = None
        # four minutes later, inside the 10-minute interval a delivered intervention sets
        await h.say(CAROL, "does anyone know why docker compose ignores my .env file?")
        await h.clock.advance(240)
        await h.app.engine.idle()
        last = history.last(GENERAL.id, h.clock.now())
        assert last is not None and last.message_id == h.decisions[-1].message_id
        # an unanswered keyword question to the room: OPEN_QUESTION + 15 + 45 on its re-check, the
        # local stage's "speak" (80) whatever the seat model adds
        terms = {c.rule: c.points for c in h.decisions[-1].trace.contributions}
        assert terms["question to the room"] == OPEN_QUESTION and terms["keywords"] == 15
        assert terms["open question unanswered"] == 45
        assert terms["seat model"] == h.decisions[-1].trace.features["seat"]["score"]
        # Every stage that ran left its result in the trace, in order, ending in a decision.
        stages = h.decisions[-1].trace.stages
        assert [r.name for r in stages][:3] == ["own", "filter", "quiet"]
        assert stages[-1].outcome == "decide" and stages[-1].action == "reply"
    finally:
        await h.app.close()


async def test_a_held_ping_stays_owed_in_the_inbox_until_its_burst_is_answered(
    tmp_path: Path,
) -> None:
    """A ping held as part of a burst is not done until the burst is answered: a crash
    during the hold leaves its event in the inbox, owed after the restart."""
    clock = VirtualClock()
    s = Settings(persona=Persona(name="Kuu"))
    h = await make(tmp_path, llm=ScriptedLLM(default="here!"), settings=s,
                   judge=build_judge(s, None, clock), clock=clock)
    try:
        await h.say(ALICE, "@Kuu hi", mentions=("Kuu",))
        assert h.decisions[-1].action.kind is ActionKind.REPLY
        await h.clock.advance(2)
        first = await h.say(ALICE, "@Kuu hello?", mentions=("Kuu",))
        await h.clock.advance(2)
        second = await h.say(ALICE, "@Kuu what's a good docker base image?", mentions=("Kuu",))
        await h.app.writer.flush()
        # the first held ping was superseded by the second (decided, so done); the second
        # is held and owed
        assert [e.event_id for e in await h.app.store.inbox.pending_events()] == [second]
        assert [d.reason for d in h.decisions if d.message_id == first] == ["superseded"]
        await h.clock.advance(10)
        await h.app.engine.idle()
        answer = h.decisions[-1]
        assert answer.message_id == second and answer.action.kind is ActionKind.REPLY
        assert answer.trace.stage("ping burst") is not None
        await h.app.writer.flush()
        assert await h.app.store.inbox.pending_events() == []
    finally:
        await h.app.close()


async def test_proactive_talk_meets_quiet_and_the_intervention_interval() -> None:
    from datetime import timedelta

    from kuuki.decide.types import Case, Pass, Proposal
    from kuuki.domain import Action, Decision

    from .conftest import Room, msg, trace

    s = Settings(persona=Persona(name="Kuu"))
    pipeline = build_judge(s, None, VirtualClock())
    room = Room()
    wake = msg("m1", 0, "alice", "anyone climbing fuji this year?")
    proposal = Proposal("Bob climbed Fuji last summer.", 60, "proactive: fact 1", wake.ts)

    def case(at: float) -> Case:
        situation = room.situation(wake, at=at)
        return Case(situation, Pass.PROACTIVE, trace(wake), proposal=proposal)

    room.bot.quiet_until = wake.ts + timedelta(minutes=30)
    quiet = case(20)
    v = await pipeline.decide(quiet)
    assert v.action is ActionKind.NONE and v.reason == "asked to be quiet here"
    assert [r.name for r in quiet.trace.stages] == ["quiet"]
    room.bot.quiet_until = None
    spoken = case(20)
    v = await pipeline.decide(spoken)
    assert v.action is ActionKind.REPLY and v.stage is Stage.PROACTIVE
    assert (v.task, v.topic) == ("proactive", "Bob climbed Fuji last summer.")
    action = Action(ActionKind.REPLY, "general", wake.id, text="By the way…")
    pipeline.sent(spoken, Decision(wake.id, "general", action, v.stage, v.score, v.reason,
                                   spoken.situation.now, spoken.trace))
    again = case(20 + 5 * 60)  # five minutes later: inside the 10-minute interval
    v = await pipeline.decide(again)
    assert v.action is ActionKind.NONE
    assert v.reason == "minimum interval since the last intervention"
    policy = again.trace.stage("intervention policy")
    assert policy is not None and policy.facts["since_last_min"] == 5.0
