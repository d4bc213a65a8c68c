"""The local stage: the seat model's term and every policy term in the trace, and the clear
cases decided here. The models' weights are retrained; these tests assert what the stage
does with their output (the seat term is 100×p, a policy term's points), never a p itself.
The policy's terms one by one, on pinned readings: test_rules.py."""

from __future__ import annotations

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.response_type import ACK_AT
from kuuki.decide.rules import OPEN_QUESTION
from kuuki.decide.stages.common import RECHECK_S
from kuuki.decide.stages.debounce import QUESTION_DEBOUNCE_S
from kuuki.domain import ActionKind, DecisionTrace, Stage

from ..conftest import Delivering, Room, msg, settings, trace

EXPLICIT = ("addressed:mention", "addressed:reply", "addressed:name", "addressed:dm",
            "addressed:thread")


def rules(t: DecisionTrace) -> dict[str, float]:
    return {c.rule: c.points for c in t.contributions}


def judge(clock: VirtualClock, **kw: object) -> Delivering:
    return Delivering(build_judge(settings(**kw), None, clock))


def seat_term(t: DecisionTrace) -> float:
    """The seat model's term, checked against the model's output kept in the trace (0 when
    the models were not run: the bot is not part of the talk and the message asks
    nothing)."""
    points = rules(t)["seat model"]
    if "seat" not in t.features:
        detail = next(c.detail for c in t.contributions if c.rule == "seat model")
        assert points == 0 and detail.startswith("not run") and "addressee" not in t.features
        return points
    seat = t.features["seat"]
    assert points == seat["score"] and abs(points - 100 * seat["p"]) <= 0.1
    return points


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
        # addressed or not, both models read the message and the trace keeps what they said
        assert "seat model" not in rules(t) and {"p", "short", "score"} <= set(t.features["seat"])
        # the explicit call decides; the model's view is kept beside it, the bot a candidate
        assert "Kuu" in t.features["addressee"]["candidates"]
    b = room.add(msg("b1", 130, "Kuu", "yes"))
    m = msg("m4", 140, "carol", "ok and then?", reply_to=b.id)
    t = trace(m)
    v = await j.judge(room.situation(m), t)
    assert v.action is ActionKind.REPLY and rules(t)["addressed:reply"] == 100


async def test_name_in_reference_is_not_a_call(room: Room, clock: VirtualClock) -> None:
    """"I asked Kuu yesterday" names the bot without calling it: no explicit addressing,
    and nothing is said (read by context, a remark that names the bot is about it)."""
    m = msg("m1", 0, "alice", "I asked Kuu yesterday about the offsite")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert v.action is ActionKind.NONE
    assert not set(EXPLICIT) & set(rules(t))
    assert t.features.get("addressed") in (None, "context")


async def test_open_question_is_debounced_and_rechecked(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "morning"))
    m = msg("m1", 60, "alice", "does anyone know where the VPN config lives?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert v.action is ActionKind.NONE
    assert v.defer_s == QUESTION_DEBOUNCE_S and v.recheck_s == RECHECK_S
    assert rules(t)["question to the room"] == OPEN_QUESTION
    assert t.features["addressee"]["to"] == "the room"
    assert t.score == seat_term(t) + OPEN_QUESTION


async def test_unanswered_question_scores_on_recheck(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "morning"))
    m = msg("m1", 60, "alice", "does anyone know where the VPN config lives?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, at=240, recheck=True), t)
    assert rules(t)["open question unanswered"] == 45 and rules(t)["question to the room"] == OPEN_QUESTION
    assert t.score == seat_term(t) + OPEN_QUESTION + 45
    assert v.action is ActionKind.REPLY and v.stage is Stage.LOCAL


async def test_answered_question_is_left_alone_on_recheck(room: Room, clock: VirtualClock) -> None:
    m = room.add(msg("m1", 0, "alice", "does anyone know where the VPN config lives?"))
    room.add(msg("m2", 30, "bob", "on the wiki", reply_to="m1"))
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, at=180, recheck=True), t)
    assert v.action is ActionKind.NONE and v.reason == "answered by bob"
    assert t.features["answered_by"] == "m2"


async def test_question_to_a_named_person_is_not_for_the_room(
    room: Room, clock: VirtualClock
) -> None:
    """What the one-to-one and "talking to someone else" weights did: a question put to a
    person by name is theirs: no "question to the room", no re-check, silence."""
    room.add(msg("m0", 0, "bob", "hi"))
    room.add(msg("m1", 20, "鈴木", "おはようございます"))
    for text, person in (("bob, did you push the hotfix?", "bob"),
                         ("鈴木さん、資料できました？", "鈴木")):
        m = msg(f"q{len(room.recent)}", 60, "alice", text)
        t = trace(m)
        v = await judge(clock).judge(room.situation(m), t)
        assert t.features["addressee"]["to"] == person
        assert "question to the room" not in rules(t) and t.score == seat_term(t)
        assert v.action is ActionKind.NONE and v.recheck_s is None


async def test_keywords_and_the_seat_term(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "bob", "bye"))
    m = msg("m1", 900, "alice", "my docker build is slow today")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    assert rules(t)["keywords"] == 15
    assert next(c.detail for c in t.contributions if c.rule == "keywords") == "docker"
    assert t.score == seat_term(t) + 15
    # the weights the models replaced are gone from the trace
    for gone in ("after silence", "bot not mentioned lately", "burst", "one-to-one exchange",
                 "conversation decaying", "engagement"):
        assert gone not in rules(t)
    other = msg("m2", 960, "alice", "my build is slow today")
    t = trace(other)
    await judge(clock).judge(room.situation(other), t)
    assert "keywords" not in rules(t)
    # once the bot is part of the talk, the models read every message
    room.add(msg("b1", 970, "Kuu", "slow how? cold cache?"))
    later = msg("m3", 990, "alice", "my build is slow today")
    t = trace(later)
    await judge(clock).judge(room.situation(later), t)
    assert {"addressee", "seat"} <= set(t.features)


async def test_a_dying_exchange_is_read_by_the_seat_model_alone(
    room: Room, clock: VirtualClock
) -> None:
    """"k" at the end of a dying exchange (the old decay and burst weights): no policy term
    raises it, the score is the seat model's alone, and the bot stays silent."""
    long = "this is a fairly long message about the deployment we did this morning"
    for i, text in enumerate((long, long, long, "ok", "yep")):
        room.add(msg(f"x{i}", i * 20, ["alice", "bob", "carol"][i % 3], text))
    m = msg("m1", 120, "carol", "k")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert set(rules(t)) == {"seat model"} and t.score == seat_term(t)
    assert v.action is ActionKind.NONE


async def test_cooldown_after_the_bot_spoke(room: Room, clock: VirtualClock) -> None:
    room.add(msg("m0", 0, "dave", "morning"))
    room.add(msg("m1", 5, "bob", "anyone tried the new docker release?"))
    room.add(msg("b1", 10, "Kuu", "yes, the build cache got faster"))
    j = judge(clock)
    soon = msg("m2", 60, "carol", "dave, are you coming to the standup?")
    t = trace(soon)
    await j.judge(room.situation(soon), t)
    assert rules(t)["cooldown"] == -50
    later = msg("m3", 200, "carol", "dave, are you still coming to the standup?")
    t = trace(later)
    await j.judge(room.situation(later), t)
    assert "cooldown" not in rules(t)


async def test_presence_penalty(room: Room, clock: VirtualClock) -> None:
    """Against the bot's fair share among the people talking: tying the most talkative
    member of three is some presence, writing more than everyone else together is much,
    and writing a third of a three-person chat is none."""
    for i in range(6):
        room.add(msg(f"x{i}", i * 5, "Kuu" if i % 2 else "alice", f"line {i}"))
    m = msg("m1", 100, "bob", "what is everyone reading these days?")
    t = trace(m)
    await judge(clock).judge(room.situation(m), t)
    assert rules(t)["presence"] == -10  # 3 of 7, as much as alice
    more = Room()
    for i, who in enumerate(["alice", "Kuu", "Kuu", "bob", "Kuu", "Kuu"]):
        more.add(msg(f"y{i}", i * 5, who, f"line {i}"))
    t = trace(m)
    await judge(clock).judge(more.situation(m), t)
    assert rules(t)["presence"] == -30  # 4 of 7: more than both others together
    fair = Room()
    for i, who in enumerate(["alice", "bob", "Kuu", "alice", "bob", "Kuu", "alice", "Kuu"]):
        fair.add(msg(f"z{i}", i * 5, who, f"line {i}"))
    t = trace(m)
    await judge(clock).judge(fair.situation(m), t)
    assert "presence" not in rules(t)  # 3 of 9 in a three-person chat: its share


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
    assert "question to the room" not in rules(t)  # a bot's question is not the room's


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


async def test_good_news_at_the_end_of_a_run_gets_a_reaction(
    room: Room, clock: VirtualClock
) -> None:
    room.add(msg("m1", 1200, "alice", "guess what"))
    m = msg("m2", 1204, "alice", "finally got the docker build under a minute!")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, settled=True), t)
    assert rules(t)["good news"] == 30 and "breaks a silence" not in rules(t)
    assert t.score == seat_term(t) + 30 + 15
    # an emoji, or a short word when the seat model leans to speaking (seed 002's table)
    assert v.action is (ActionKind.REACT if t.score < ACK_AT else ActionKind.ACK)


async def test_good_news_shared_after_a_silence_gets_a_word(
    room: Room, clock: VirtualClock
) -> None:
    room.add(msg("m0", 0, "bob", "bye"))
    m = msg("m1", 1200, "alice", "finally got the docker build under a minute!")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, settled=True), t)
    assert rules(t)["good news"] == 50 and rules(t)["breaks a silence"] == 10
    assert t.score == seat_term(t) + 50 + 10 + 15
    assert v.action in (ActionKind.ACK, ActionKind.REPLY)


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
    for rule in ("seat model", "question to the room", "keywords"):
        assert sum(1 for c in t.contributions if c.rule == rule) == 1, rule


async def test_a_quip_in_a_burst_is_left_to_the_banter(room: Room, clock: VirtualClock) -> None:
    """A quip in a burst of banter ("ref was blind?"): the hand-typed banter weight is gone;
    the seat model keeps the settled pass quiet, and once the banter goes on the re-check
    leaves it to the people who answered it."""
    j = judge(clock)
    for i in range(9):
        room.add(msg(f"x{i}", i * 5, ["alice", "bob", "carol"][i % 3], f"haha {i}"))
    m = msg("m1", 46, "dave", "ref was blind?")
    t = trace(m)
    v = await j.judge(room.situation(m, at=58, settled=True), t)
    assert v.action is ActionKind.NONE and t.score <= seat_term(t) + OPEN_QUESTION
    room.add(msg("x9", 50, "alice", "totally blind lol"))
    t = trace(m)
    v = await j.judge(room.situation(m, at=226, recheck=True), t)
    assert v.action is ActionKind.NONE and v.reason == "answered by alice"


async def test_latencies_are_kept_only_when_a_benchmark_asks(
    room: Room, clock: VirtualClock
) -> None:
    # A running bot reads no latency list: keeping one would grow with every message.
    j = judge(clock)
    texts = ("my docker build is slow today", "anyone tried the new release?", "lunch soon")
    for n, text in enumerate(texts):
        m = msg(f"m{n}", 60 * n, "alice", text)
        await j.judge(room.situation(m), trace(m))
    assert len(j.local_ms) == 0 and len(j.local_cpu_ms) == 0
    j.keep_latencies()  # as `kuuki bench judge` does
    for n, text in enumerate(texts, len(texts)):
        m = msg(f"m{n}", 60 * n, "alice", text)
        await j.judge(room.situation(m), trace(m))
    assert len(j.local_ms) == len(j.local_cpu_ms) == len(texts)
