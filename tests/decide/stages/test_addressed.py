"""A message for the bot by context (kuuki.decide.addressing.reading's addressee stage, then
`Addressed._by_context`): when it counts as addressed, and how a member answers it.

The stage's threshold is pinned to 0 (or above 1), so every message the bot is part of
counts as addressed by context (or none does) whatever the retrained addressee model
gives the bot: these tests assert the rule and the form, not the model.
"""

from __future__ import annotations

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.rules import LocalResult
from kuuki.decide.stages.addressed import _answering
from kuuki.decide.types import Case, Pass
from kuuki.domain import ActionKind, DecisionTrace, Message, Stage

from ..conftest import ASKED_TO_HELP, Delivering, Room, msg, settings, trace


def judge(clock: VirtualClock, threshold: float = 0.0) -> Delivering:
    pipeline = build_judge(settings(), None, clock)
    pipeline.stage("addressee").threshold = threshold
    return Delivering(pipeline)


def rules(t: DecisionTrace) -> dict[str, float]:
    return {c.rule: c.points for c in t.contributions}


def bot_said(room: Room, text: str) -> None:
    room.add(msg("m0", 0, "alice", "morning"))
    room.add(msg("b1", 200, "Kuu", text))


async def decide(clock: VirtualClock, room: Room, m: Message) -> tuple[ActionKind, str,
                                                                         DecisionTrace]:
    t = trace(m)
    v = await judge(clock).judge(room.situation(m, settled=True), t)
    assert t.features["addressed"] == "context" and v.stage is Stage.ADDRESSED
    return v.action, v.reason, t


async def test_a_question_to_the_bot_by_context_gets_a_reply(
    room: Room, clock: VirtualClock
) -> None:
    bot_said(room, "the docker release notes are out")
    action, _, t = await decide(clock, room, msg("m1", 400, "alice",
                                                 "what changed in the build cache?"))
    assert action is ActionKind.REPLY
    # its points: the addressee model's p for the bot or the seat term, whichever is higher
    points = max(t.features["seat"]["score"], 100 * t.features["addressee"]["bot"])
    assert abs(rules(t)["addressed:context"] - points) <= 0.1
    assert "seat model" not in rules(t)


async def test_a_short_answer_to_the_bot_s_question_gets_an_ack(
    room: Room, clock: VirtualClock
) -> None:
    bot_said(room, "which python version are you on these days?")
    action, _, t = await decide(clock, room, msg("m1", 400, "alice", "3.12 mostly"))
    assert action is ActionKind.ACK
    assert any("answers the bot's question" in step for step in t.steps)


async def test_an_answer_to_what_the_bot_asked_in_order_to_help_gets_a_reply(
    clock: VirtualClock,
) -> None:
    """Asked for a recommendation, the bot asked where and how much: the answer carries what
    it needed, and a member follows up with the help, however few words or characters the
    answer takes (a Japanese answer is short by its characters, an English one by words)."""
    for request, question, answer in ASKED_TO_HELP:
        room = Room()
        room.add(msg("m0", 0, "sato", request))
        room.add(msg("b1", 40, "Kuu", question))
        action, _, t = await decide(clock, room, msg("m1", 100, "sato", answer))
        assert action is ActionKind.REPLY, answer
        step = next(s for s in t.steps if s.startswith("addressed by context: reply"))
        assert "answers what the bot asked in order to help" in step
        assert "after sato's request" in step


def test_the_clarifying_rule_over_a_seat_model_that_expects_few_words() -> None:
    """Where the seat model expects few words, the rule "the help follows" holds after the
    bot asked in order to help, and the trace shows both; after small talk the model's
    short word stands."""
    for request, held in (("Kuu, any cafe you'd recommend near the office?", True),
                          ("had a long weekend", False)):
        room = Room()
        room.add(msg("m0", 0, "sato", request))
        room.add(msg("b1", 40, "Kuu", "which area are you in?"))
        m = msg("m1", 100, "sato", "shibuya")
        c = Case(room.situation(m), Pass.FIRST, trace(m),
                 local=LocalResult(short=True, seat_p=0.7, seat_short=0.8))
        kind, _ = _answering(c)
        both = c.trace.features.get("rule_vs_model", [])
        if held:
            assert kind is ActionKind.REPLY
            assert both == [{"rule": "an answer to what the bot asked in order to help gets "
                             "the help", "model_p": 0.0, "seat_p": 0.7, "held": "rule"}]
            assert any("the seat model expects few words (80%)" in st for st in c.trace.steps)
        else:
            assert kind is ActionKind.ACK and both == []


async def test_a_short_answer_to_the_bot_s_small_talk_gets_an_ack(
    room: Room, clock: VirtualClock
) -> None:
    """The same few characters answering small talk (nobody asked the bot for anything)
    close the exchange with a short word."""
    room.add(msg("m0", 0, "sato", "最近また服のサイズが合わなくなってきた"))
    room.add(msg("b1", 50, "Kuu", "まだまだ成長期なのでしょうか？"))
    action, _, t = await decide(clock, room, msg("m1", 110, "sato", "身長止まってます"))
    assert action is ActionKind.ACK
    assert any("answers the bot's question (a short answer" in step for step in t.steps)


async def test_a_remark_naming_the_bot_in_passing_gets_nothing(
    room: Room, clock: VirtualClock
) -> None:
    bot_said(room, "the docker release notes are out")
    action, reason, _ = await decide(clock, room, msg("m1", 400, "alice",
                                                      "I asked Kuu yesterday about the offsite"))
    assert action is ActionKind.NONE
    assert reason == "addressed by context: a remark that names the bot is about it, not to it"


async def test_a_closing_remark_as_the_talk_ends_gets_nothing(
    room: Room, clock: VirtualClock
) -> None:
    bot_said(room, "the docker release notes are out")
    action, reason, t = await decide(clock, room, msg("m1", 400, "alice",
                                                      "ok gotta go, see you tomorrow!"))
    assert t.features["state"]["state"] == "ending"
    assert action is ActionKind.NONE and reason == "addressed by context: the conversation is ending"


async def test_by_context_only_when_the_bot_is_part_of_the_talk(
    room: Room, clock: VirtualClock
) -> None:
    """Nobody speaks to a member by context who has not spoken nor been named: even at a
    threshold of 0 the message is then ambient, scored by the seat model."""
    room.add(msg("m0", 0, "alice", "morning"))
    m = msg("m1", 60, "bob", "what changed in the docker build cache?")
    t = trace(m)
    v = await judge(clock).judge(room.situation(m), t)
    assert t.features.get("addressed") is None and "seat model" in rules(t)
    addressee = t.stage("addressee")
    assert addressee is not None and addressee.facts["live"] is False
    assert v.stage is not Stage.ADDRESSED


async def test_below_the_threshold_a_message_is_not_the_bot_s(
    room: Room, clock: VirtualClock
) -> None:
    bot_said(room, "the docker release notes are out")
    m = msg("m1", 400, "alice", "what changed in the build cache?")
    t = trace(m)
    v = await judge(clock, threshold=1.01).judge(room.situation(m, settled=True), t)
    assert t.features.get("addressed") is None and "addressed:context" not in rules(t)
    assert t.features["addressee"]["threshold"] == 1.01 and v.stage is not Stage.ADDRESSED


async def test_talk_by_context_right_after_an_answered_call_is_not_held_as_a_ping(
    room: Room, clock: VirtualClock
) -> None:
    """A ping burst is one person's run of calls; talk that is the bot's only by context is
    a conversation: answered when it comes, not held 8 s behind the last ping."""
    j = judge(clock)
    call = msg("m1", 0, "alice", "Kuu, which base image do you like?")
    assert (await j.judge(room.situation(call), trace(call))).action is ActionKind.REPLY
    room.add(call)
    room.add(msg("b1", 2, "Kuu", "alpine, mostly"))
    follow = msg("m2", 5, "alice", "why not debian slim?")
    t = trace(follow)
    v = await j.judge(room.situation(follow), t)
    assert t.features["addressed"] == "context"
    assert v.defer_s is None and v.action is ActionKind.REPLY
