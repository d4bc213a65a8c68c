"""The LLM stage: only for the unclear band, seed fail-safes, caches and the breaker."""

from __future__ import annotations

from datetime import timedelta

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.rules import OPEN_QUESTION
from kuuki.domain import ActionKind, DecisionTrace, Message, Stage
from kuuki.testing.llm import ScriptedLLM

from ..conftest import DOWN, Delivering, Room, judge_llm, msg, settings, trace

YES = {
    "should_respond": True,
    "response_type": "reply",
    "reason": "nobody answered",
    "confidence": 0.9,
}


def band_room() -> tuple[Room, Message]:
    """A keyword question to the room: the seat term, "question to the room" (OPEN_QUESTION) and
    "keywords" +15, inside the (20, 80) band unless the seat model is sure either way."""
    room = Room()
    room.add(msg("m0", 0, "bob", "morning"))
    m = msg("m1", 60, "alice", "does anyone know a good python profiler?")
    return room, m


def in_band(t: DecisionTrace) -> None:
    terms = {c.rule: c.points for c in t.contributions}
    assert terms["question to the room"] == OPEN_QUESTION and terms["keywords"] == 15
    assert t.score == terms["seat model"] + OPEN_QUESTION + 15 and 20 < t.score < 80, "not in the unclear band"


def make(clock: VirtualClock, llm: ScriptedLLM, **kw: object) -> Delivering:
    return Delivering(build_judge(settings(**kw), llm, clock))


async def test_clear_cases_never_reach_the_model(clock: VirtualClock) -> None:
    llm = judge_llm()
    j = make(clock, llm)
    room = Room()
    for m in (
        msg("m1", 0, "alice", "Kuu, hi!"),
        msg("m2", 60, "bob", "ok"),
        msg("m3", 120, "carol", "bob, did you push?"),
    ):
        await j.judge(room.situation(m, settled=True), trace(m))
    assert llm.history == []


async def test_band_asks_the_judge_with_one_system_prompt(clock: VirtualClock) -> None:
    llm = judge_llm(YES)
    j = make(clock, llm)
    room, m = band_room()
    t = trace(m)
    v = await j.judge(room.situation(m, at=72, settled=True), t)
    assert (v.action, v.stage) == (ActionKind.REPLY, Stage.LLM)
    assert llm.purposes == ["judge"]
    messages, schema = llm.history[0].messages, llm.history[0].json_schema
    assert [x.role for x in messages] == ["system"]
    prompt = messages[0].content
    # persona first, the target conversation last, then the time and the criteria
    assert prompt.index("You are Kuu") < prompt.index("a good python profiler")
    assert prompt.index("a good python profiler") < prompt.index("Current time")
    assert "should_respond" in prompt and schema is not None
    assert [c.purpose for c in t.llm_calls] == ["judge"]
    assert t.features["llm_judgment"]["should_respond"] is True


async def test_judgment_is_cached_until_something_new_is_said(clock: VirtualClock) -> None:
    no = {"should_respond": False, "response_type": "none", "reason": "wait", "confidence": 0.9}
    llm = judge_llm(no, no)
    j = make(clock, llm)
    room, m = band_room()
    t = trace(m)
    await j.judge(room.situation(m, at=72, settled=True), t)
    in_band(t)
    assert len(llm.history) == 1 and t.features["judge_cache"] == "miss"
    t = trace(m)
    await j.judge(room.situation(m, at=100, settled=True), t)
    assert len(llm.history) == 1 and t.features["judge_cache"] == "hit"
    # the asker adds to the question: something new in the conversation, asked again
    room.add(msg("m2", 110, "alice", "for python async code, if that matters"))
    t = trace(m)
    await j.judge(room.situation(m, at=122, settled=True), t)
    in_band(t)
    assert len(llm.history) == 2 and t.features["judge_cache"] == "miss"


async def test_unusable_answer_means_silence(clock: VirtualClock) -> None:
    for bad in (
        "not json at all",
        {"should_respond": "yes"},
        {"should_respond": True, "response_type": "shout", "reason": "", "confidence": 3},
    ):
        llm = judge_llm(bad)
        room, m = band_room()
        v = await make(clock, llm).judge(room.situation(m, at=72, settled=True), trace(m))
        assert (v.action, v.stage) == (ActionKind.NONE, Stage.LLM)
        assert v.reason == "judge answer unusable"


async def test_breaker_opens_and_the_local_stage_decides(clock: VirtualClock) -> None:
    llm = judge_llm(DOWN, DOWN, DOWN)
    j = make(clock, llm)
    for _ in range(3):
        room, m = band_room()
        await j.judge(room.situation(m, at=72, settled=True), trace(m))
    assert len(llm.history) == 3
    room, m = band_room()
    t = trace(m)
    v = await j.judge(room.situation(m, at=72, settled=True), t)
    assert len(llm.history) == 3
    assert v.stage is Stage.LOCAL
    assert any("circuit open" in s for s in t.steps)
    assert t.features["breaker"].startswith("open")
    await clock.advance(600)
    llm.enqueue(YES)
    room, m = band_room()
    v = await j.judge(room.situation(m, at=72, settled=True), trace(m))
    assert v.stage is Stage.LLM and len(llm.history) == 4


async def test_rules_mode_and_no_llm_never_call(clock: VirtualClock) -> None:
    llm = judge_llm(YES)
    room, m = band_room()
    t = trace(m)
    v = await make(clock, llm, judge_mode="rules").judge(room.situation(m, at=72, settled=True), t)
    assert llm.history == [] and v.stage is Stage.LOCAL
    assert any("judge mode rules" in s for s in t.steps)


async def test_llm_mode_sends_every_settled_message(clock: VirtualClock) -> None:
    llm = judge_llm()
    room = Room()
    m = msg("m1", 0, "alice", "ok")
    t = trace(m)
    first = await make(clock, llm, judge_mode="llm").judge(room.situation(m), t)
    assert first.defer_s is not None  # even a low score waits for the burst in llm mode
    await make(clock, llm, judge_mode="llm").judge(room.situation(m, at=30, settled=True), t)
    assert llm.purposes == ["judge"]


async def test_minimum_interval_blocks_before_any_call(clock: VirtualClock) -> None:
    llm = judge_llm(YES)
    j = make(clock, llm)
    room, m = band_room()
    v = await j.judge(room.situation(m, at=72, settled=True), trace(m))
    assert v.action is ActionKind.REPLY
    other = Room()
    other.add(msg("x0", 0, "dave", "hello"))
    q = msg("x1", 300, "erin", "is anyone here good with python packaging?")
    t = trace(q)
    v = await j.judge(other.situation(q, at=312, settled=True), t)
    assert v.action is ActionKind.NONE and "minimum interval" in v.reason
    assert len(llm.history) == 1


async def test_same_conversation_then_situation_changed(clock: VirtualClock) -> None:
    """After the interval: no tracker, so the model is asked; its errors use the fail-safes."""
    llm = judge_llm(YES)
    j = make(clock, llm, EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES=1)
    room, m = band_room()
    await j.judge(room.situation(m, at=72, settled=True), trace(m))
    room.add(msg("m2", 200, "bob", "I use py-spy mostly"))
    q = msg("m3", 400, "carol", "does anyone know if py-spy works with python 3.12?")
    llm.enqueue(DOWN, DOWN, YES)  # same? error → SAME; changed? error → CHANGED; judge
    t = trace(q)
    v = await j.judge(room.situation(q, at=412, settled=True), t)
    assert llm.purposes[1:] == ["same_conversation", "situation_changed", "judge"]
    assert any("fail-safe SAME" in s for s in t.steps)
    assert any("fail-safe CHANGED" in s for s in t.steps)
    assert v.action is ActionKind.REPLY


async def test_unchanged_situation_is_left_alone(clock: VirtualClock) -> None:
    llm = judge_llm(YES)
    j = make(clock, llm, EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES=1)
    room, m = band_room()
    await j.judge(room.situation(m, at=72, settled=True), trace(m))
    q = msg("m3", 400, "carol", "does anyone else know a python profiler?")
    llm.enqueue({"answer": "SAME"}, {"answer": "UNCHANGED"})
    v = await j.judge(room.situation(q, at=412, settled=True), trace(q))
    assert v.action is ActionKind.NONE and v.stage is Stage.LLM
    assert llm.purposes[1:] == ["same_conversation", "situation_changed"]
    # the answers are cached for five minutes
    await clock.advance(timedelta(minutes=1).total_seconds())
    await j.judge(room.situation(q, at=470, settled=True), trace(q))
    assert len(llm.history) == 3


async def test_state_model_only_when_the_classifier_is_unsure(clock: VirtualClock) -> None:
    llm = judge_llm({"state": "ENDING"})
    j = make(clock, llm)
    room = Room()
    room.add(msg("m0", 0, "alice", "that's not the point"))  # a weak cue, two messages back
    room.add(msg("m1", 20, "alice", "hmm"))
    m = msg("m2", 60, "alice", "does anyone know a good python profiler?")
    t = trace(m)
    v = await j.judge(room.situation(m, at=72, settled=True), t)
    assert t.features["state"]["confidence"] < 0.6
    assert llm.purposes == ["state"]
    assert t.features["state_llm"] == "ending" and v.action is ActionKind.NONE
    sure = Room()
    m = msg("m1", 0, "alice", "does anyone know a good python profiler?")
    await j.judge(sure.situation(m, at=12, settled=True), trace(m))
    assert llm.purposes[1:] == ["judge"]  # a sure classifier: no state call


async def test_call_budget_bounds_a_busy_channel(clock: VirtualClock) -> None:
    no = {"should_respond": False, "response_type": "none", "reason": "wait", "confidence": 0.1}
    llm = judge_llm()
    llm.defaults["judge"] = no
    j = make(clock, llm)
    room = Room()
    room.add(msg("m0", 0, "bob", "morning"))
    judged = []
    for i in range(6):
        q = msg(f"q{i}", 10 + i, "alice", f"does anyone know a good python tool number {i}?")
        t = trace(q)
        judged.append((await j.judge(room.situation(q, at=30 + i, settled=True), t), t))
    assert len(llm.history) == 4  # the bucket holds four calls
    # the fifth finds the budget spent and the local stage decides it (speaking or not;
    # if it spoke, the sixth meets the intervention interval before any call)
    fifth, t5 = judged[4]
    assert t5.features["llm_budget"] == "spent" and fifth.stage is Stage.LOCAL
