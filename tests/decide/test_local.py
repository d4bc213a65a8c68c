"""The local stage: every rule leaves its contribution, and clear cases are decided here."""

from __future__ import annotations

from kuuki.clock import VirtualClock
from kuuki.decide.build import build_judge
from kuuki.decide.local import QUESTION_DEBOUNCE_S, RECHECK_S
from kuuki.domain import ActionKind, DecisionTrace, Stage

from .conftest import Delivering, Room, msg, settings, trace


def rules(t: DecisionTrace) -> dict[str, float]:
    return {c.rule: c.points for c in t.contributions}


def judge(clock: VirtualClock, **kw: object) -> Delivering:
    return Delivering(build_judge(settings(**kw), None, clock))


async def test_mention_reply_and_name_call_are_answered_now(
    room: Room, clock: VirtualClock
) -> None:
    j = judge(clock)
    for m, rule, points in (
        (msg("m1", 0, "alice", "summary please", mentions=("Kuu",)), "addressed:mention", 100),
        (msg("m2", 60, "bob", "くうさん、これどう思う？"), "addressed:name", 80),
        (msg("m3", 120, "carol", "Kuu-san, are you there?"), "addressed:name", 80),
    ):
        t = trace(m)
        v = await j.judge(room.situation(m), t)
        assert (v.action, v.stage, v.defer_s) == (ActionKind.REPLY, Stage.ADDRESSED, None)
        assert rules(t)[rule] == points
    b = room.add(msg("b1", 130, "Kuu", "yes"))
    m = msg("m4", 140, "carol", "ok and then?", reply_to=b.id)
    t = trace(m)
    v = await j.judge(room.situation(m), t)
    assert v.action is ActionKind.REPLY and rules(t)["addressed:reply"] == 100


async def test_name_in_reference_is_not_a_call(room: Room, clock: VirtualClock) -> None:
    m = msg("m1", 0, "alice", "I asked Kuu yesterday about the offsite")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert v.action is ActionKind.NONE and not any(r.startswith("addressed") for r in rules(t))


async def test_open_question_is_debounced_and_rechecked(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "morning"))
    m = msg("m1", 60, "alice", "does anyone know where the VPN config lives?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert v.action is ActionKind.NONE
    assert v.defer_s == QUESTION_DEBOUNCE_S and v.recheck_s == RECHECK_S
    assert rules(t)["question"] == 20


async def test_unanswered_question_scores_on_recheck(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "morning"))
    m = msg("m1", 60, "alice", "does anyone know where the VPN config lives?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, at=240, recheck=True), t)
    assert rules(t)["open question unanswered"] == 45
    assert v.action is ActionKind.REPLY and v.stage is Stage.LOCAL


async def test_answered_question_is_left_alone_on_recheck(room: Room, clock: VirtualClock) -> None:
    m = room.add(msg("m1", 0, "alice", "does anyone know where the VPN config lives?"))
    room.add(msg("m2", 30, "bob", "on the wiki", reply_to="m1"))
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, at=180, recheck=True), t)
    assert v.action is ActionKind.NONE and v.reason == "answered by bob"
    assert t.features["answered_by"] == "m2"


async def test_question_to_someone_else_gets_no_bonus(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "hi"))
    for text in ("bob, did you push the hotfix?", "鈴木さん、資料できました？"):
        m = msg(f"q{len(room.recent)}", 60, "alice", text)
        t = trace(m)
        v = await judge(clock).judge(room.situation(m), t)
        assert rules(t)["question"] == 0 and rules(t)["talking to someone else"] < 0
        assert v.action is ActionKind.NONE and v.recheck_s is None


async def test_engagement_and_cooldown(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m1", 0, "alice", "Kuu, a good base image?"))
    room.add(msg("b1", 5, "Kuu", "alpine or distroless", reply_to="m1"))
    soon = msg("m2", 40, "alice", "ok, I'll think about it")
    t = trace(soon)
    v = await judge(clock).judge(room.situation(soon), t)
    assert rules(t)["cooldown"] == -50 and rules(t)["engagement"] == 40
    assert v.action is ActionKind.NONE
    later = msg("m3", 200, "alice", "and does it matter for python apps?")
    t = trace(later)
    v = await judge(clock).judge(room.situation(later, settled=True), t)
    assert "cooldown" not in rules(t) and rules(t)["engagement"] == 40
    assert rules(t)["keywords"] == 15
    assert v.action is ActionKind.REPLY


async def test_keywords_silence_and_no_mention(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "bye"))
    m = msg("m1", 900, "alice", "my docker build is slow today")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    r = rules(t)
    assert r["keywords"] == 15 and r["after silence"] == 10
    assert r["bot not mentioned lately"] == -10


async def test_burst_and_one_to_one(room: Room, clock: VirtualClock) -> None:
    for i in range(10):
        room.add(msg(f"x{i}", i * 4, "alice" if i % 2 else "bob", f"line {i} of our chat"))
    m = msg("m1", 42, "alice", "so are we leaving friday?")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    assert rules(t)["burst"] == -10 and rules(t)["one-to-one exchange"] == -20


async def test_decay_lowers_the_score(room: Room, clock: VirtualClock) -> None:
    long = "this is a fairly long message about the deployment we did this morning"
    for i, text in enumerate((long, long, long, "ok", "yep")):
        room.add(msg(f"x{i}", i * 20, ["alice", "bob", "carol"][i % 3], text))
    m = msg("m1", 120, "carol", "k")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    assert rules(t)["conversation decaying"] == -15


async def test_presence_penalty(room: Room, clock: VirtualClock) -> None:
    for i in range(6):
        room.add(msg(f"x{i}", i * 5, "Kuu" if i % 2 else "alice", f"line {i}"))
    m = msg("m1", 100, "bob", "what is everyone reading these days?")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    assert rules(t)["presence"] == -30


async def test_loop_guard_and_other_bots(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "alice", "hi"))
    room.add(msg("x1", 10, "deploybot", "deploy done", bot=True))
    room.add(msg("b1", 12, "Kuu", "noted"))
    m = msg("x2", 20, "deploybot", "Kuu, deploy #43 done", bot=True)
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert v.action is ActionKind.NONE and v.stage is Stage.FILTERED
    loop = t.stage("filter")
    assert loop is not None and loop.outcome == "decide" and loop.facts["bot_turns"] == 2
    other = Room()
    other.add(msg("m0", 0, "alice", "hi"))
    m = msg("x1", 300, "deploybot", "does anyone want the changelog?", bot=True)
    t = trace(m)
    await judge(clock).judge(other.situation(m), t)
    assert rules(t)["author is a bot"] == -30


async def test_per_user_rate_limit(room: Room, clock: VirtualClock) -> None:
    j = judge(clock)
    actions = []
    for i in range(8):
        m = msg(f"m{i}", i * 30, "alice", f"Kuu, fact number {i}?")
        actions.append((await j.judge(room.situation(m), trace(m))).action)
    assert actions[:6] == [ActionKind.REPLY] * 6
    assert actions[6:] == [ActionKind.REACT] * 2


async def test_ending_vetoes_and_conflict_never_gets_an_emoji(
    room: Room, clock: VirtualClock
) -> None:
    j = judge(clock)
    m = msg("m1", 0, "alice", "thanks all, I'm heading off now, see you tomorrow!")
    t = trace(m)
    v = await j.judge(room.situation(m), t)
    assert v.action is ActionKind.NONE and rules(t)["state:ending"] == -100
    fight = Room()
    fight.add(msg("m1", 0, "alice", "Kuu, docker or podman?"))
    fight.add(msg("b1", 5, "Kuu", "docker, probably", reply_to="m1"))
    fight.add(msg("m2", 150, "bob", "this is ridiculous, you never listen"))
    m = msg("m3", 170, "alice", "stop blaming me, docker was fine!!")
    t = trace(m)
    v = await j.judge(fight.situation(m, settled=True), t)
    assert t.features["state"]["state"] == "conflict"
    assert v.action not in (ActionKind.REACT, ActionKind.ACK)
    m = msg("m4", 200, "bob", "Kuu, who is right?")
    v = await j.judge(fight.situation(m), trace(m))
    assert v.action is ActionKind.REPLY


async def test_good_news_gets_a_reaction(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "bye"))
    room.add(msg("m1", 1200, "alice", "guess what"))
    m = msg("m2", 1204, "alice", "finally got the docker build under a minute!")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, settled=True), t)
    assert rules(t)["good news"] == 50
    assert v.action is ActionKind.REACT and v.emoji


async def test_diversity_off_means_full_replies(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "bye"))
    m = msg("m1", 1200, "alice", "finally got the docker build under a minute!")
    v = await judge(clock, RESPONSE_DIVERSITY_ENABLED=False).judge(
        room.situation(m, settled=True), trace(m)
    )
    assert v.action is ActionKind.REPLY


async def test_settled_pass_rescores_instead_of_adding_up(room: Room, clock: VirtualClock) -> None:
    j = judge(clock)
    m = msg("m1", 0, "alice", "does anyone know a good python profiler?")
    t = trace(m)
    first = await j.judge(room.situation(m), t)
    second = await j.judge(room.situation(m, at=12, settled=True), t)
    assert first.score == second.score
    assert sum(1 for c in t.contributions if c.rule == "question") == 1


async def test_a_quip_in_a_burst_is_not_an_open_question(room: Room, clock: VirtualClock) -> None:
    for i in range(9):
        room.add(msg(f"x{i}", i * 5, ["alice", "bob", "carol"][i % 3], f"haha {i}"))
    m = msg("m1", 46, "dave", "ref was blind?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert rules(t)["question"] == 0 and v.recheck_s is None
