"""One card for a decision, live (the playground) or read back from the store (the
operator dashboard): `decision_of` rebuilds what the store kept, and the card is the same."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    Contribution,
    Decision,
    DecisionTrace,
    GuardRecord,
    LLMCallRecord,
    Message,
    Stage,
    StageRecord,
    ToolCallRecord,
    User,
)
from kuuki.explain.card import decision_card, decision_of
from kuuki.store import Store

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
NAMES = ("Kuu",)


def rich(kind: ActionKind, mid: str) -> Decision:
    trace = DecisionTrace(mid, "c1", T0)
    trace.step("addressed by name")
    trace.contributions.append(Contribution("seat", 62.0, "p 0.62"))
    trace.contributions.append(Contribution("cooldown", -50.0))
    trace.features.update({
        "addressed": "name", "language": "en", "conversation": "conv-3",
        "addressee": {"to": "Kuu", "p": 0.83, "bot": 0.83,
                      "candidates": {"Kuu": 0.83, "alice": 0.12, "room": 0.05},
                      "top": [["name at the start", 2.1]], "threshold": 0.65,
                      "content": [["answers their question", 1.3]]},
        "seat": {"p": 0.62, "short": 0.3, "score": 62.0, "top": [["p(to the seat)", 1.8]],
                 "content": [["a question to the seat", 0.9]]},
    })
    trace.llm_calls.append(LLMCallRecord("reply", "smollm2", 812, 40, 1234.5, "ok",
                                         prompt="system: you are Kuu"))
    trace.guard.append(GuardRecord("reply", False, "language", "wrote Spanish", "hola"))
    trace.tool_calls.append(ToolCallRecord("search_memory", '{"q": "ramen"}', 12.5, 300, "ok"))
    trace.stages.append(StageRecord("addressed", "decide", "reply", "addressed by name",
                                    {"kind": "name"}))
    trace.errors.append("the first answer was rejected")
    action = (Action(ActionKind.REACT, "c1", mid, emoji="🤔") if kind is ActionKind.REACT
              else Action(kind, "c1", mid, text="Menya Kuu!", reply_to=mid))
    return Decision(mid, "c1", action, Stage.ADDRESSED, 80.0, "addressed by name", T0, trace)


async def test_a_stored_decision_gets_the_live_card(tmp_path: Path) -> None:
    live = [rich(ActionKind.REPLY, "m1"), rich(ActionKind.REACT, "m2")]  # m2: a fallback
    store = await Store.open(f"sqlite:///{tmp_path}/s.db")
    try:
        await store.roster.upsert_channel(Channel("c1", "general"))
        for d in live:
            await store.messages.add_message(Message(d.message_id, "c1", User("u1", "alice"),
                                            "Kuu, ramen?", T0))
        await store.messages.save_decisions(live)
        stored = [(await store.browse.decisions_for(d.message_id))[0] for d in live]
    finally:
        await store.close()
    for d, record in zip(live, stored, strict=True):
        card = decision_card(decision_of(record), NAMES)
        assert card == decision_card(d, NAMES)
    reply, react = (decision_card(decision_of(r), NAMES) for r in stored)
    assert (reply["fallback"], react["fallback"]) == (False, True)
    assert reply["addressee"]["candidates"][0]["label"].startswith("Kuu")
    # what was said that moved the models, in words, among the card's notes
    assert "what was said, for Kuu (the bot): answers their question +1.3" in reply[
        "addressee"]["notes"]
    assert "what was said: a question to the seat +0.9" in reply["seat"]["because"]
    assert any("search_memory" in line for line in reply["tools"])
    assert any("rejected" in line for line in reply["guard"])
    assert reply["calls"] and "smollm2" in reply["calls"][0]


def addressed_decision(addressed: str | None, candidates: dict[str, float], *,
                       reason: str, kind: ActionKind = ActionKind.REPLY,
                       top: list[list[object]] | None = None) -> Decision:
    trace = DecisionTrace("m9", "c1", T0)
    trace.features.update({
        "addressed": addressed,
        "addressee": {"to": max(candidates, key=lambda k: candidates[k]),
                      "p": max(candidates.values()), "bot": candidates.get("Kuu", 0.0),
                      "candidates": candidates, "threshold": 0.65,
                      "top": top or [["times known", 2.9], ["the author new here", 4.1]]},
    })
    action = Action(kind, "c1", "m9", text="sure" if kind is ActionKind.REPLY else None)
    return Decision("m9", "c1", action, Stage.ADDRESSED, 80.0, reason, T0, trace)


def test_the_headline_the_addressee_figures_and_the_reason_agree() -> None:
    # Called by name while the model alone leans elsewhere: the name decides, the bars are
    # the model's guess, and no threshold pretends to have decided.
    named = decision_card(addressed_decision(
        "name", {"Kuu": 0.54, "alice": 0.30, "room": 0.16}, reason="addressed by name"), NAMES)
    assert named["headline"] == "Replied: called by name"
    a = named["addressee"]
    assert [c["label"] for c in a["candidates"] if c["chosen"]] == ["Kuu (the bot)"]
    assert a["notes"] == ["called by name: that decides; the bars are the addressee model's "
                          "guess alone"]
    assert not any("counts as addressed" in n for n in a["notes"])
    # A DM is for the bot: no "the room 100 % · Kuu 0 %".
    dm = decision_card(addressed_decision(
        "dm", {"room": 1.0, "Kuu": 0.0}, reason="addressed by dm"), NAMES)
    assert dm["headline"] == "Replied: a direct message"
    assert dm["addressee"]["candidates"] == []
    assert dm["addressee"]["notes"] == ["a direct message: it is for the bot; no guess is needed"]
    # By context: the figure and its threshold are what decided, and they agree.
    context = decision_card(addressed_decision(
        "context", {"Kuu": 0.72, "bob": 0.2, "room": 0.08}, reason="addressed by context",
        top=[["'you' after them", 1.4]]), NAMES)
    assert context["addressee"]["notes"] == ["for the bot by context (it counts from 65 %)"]
    assert context["addressee"]["because"] == "to Kuu (the bot) because: 'you' after them +1.4"
    # a lift that rounds to nothing is not a reason: no "+0.0" (and no "because" of nothing)
    faint = decision_card(addressed_decision(
        "context", {"Kuu": 0.72, "bob": 0.2, "room": 0.08}, reason="addressed by context",
        top=[["'you' after them", 1.4], ["the author has been talking to them", 0.04]]), NAMES)
    assert faint["addressee"]["because"] == "to Kuu (the bot) because: 'you' after them +1.4"
    nothing = decision_card(addressed_decision(
        "context", {"Kuu": 0.72, "bob": 0.2, "room": 0.08}, reason="addressed by context",
        top=[["the author has been talking to them", 0.04]]), NAMES)
    assert nothing["addressee"]["because"] == ""
    # Not addressed: the "because" that every message shares is not shown at all.
    room = decision_card(addressed_decision(
        None, {"room": 0.9, "Kuu": 0.1}, reason="score below the low threshold",
        kind=ActionKind.NONE), NAMES)
    assert room["addressee"]["because"] == ""
    assert room["addressee"]["notes"] == ["not for the bot (it would count from 65 %)"]


def silent(reason: str, score: float, **features: object) -> Decision:
    trace = DecisionTrace("m8", "c1", T0)
    trace.features.update(features)
    return Decision("m8", "c1", Action(ActionKind.NONE, "c1", "m8"), Stage.LOCAL, score,
                    reason, T0, trace)


def test_one_headline_style_and_no_field_names_or_raw_times() -> None:
    heads = [decision_card(silent(r, s), NAMES)["headline"] for r, s in (
        ("score 16", 16.2), ("judge mode rules; score 22", 22.0),
        ("score below the low threshold", 6.0), ("answered by carol", 0.0))]
    assert heads == [
        "Stayed silent: little reason to speak (score 16)",
        "Stayed silent: not sure it should speak (score 22); judged by rules alone",
        "Stayed silent: little reason to speak (score 6)",
        "Stayed silent: carol already answered it",
    ]
    quiet = T0.replace(minute=30).isoformat()
    card = decision_card(silent("asked to be quiet here", 0, recheck_s=168.0, answered_by=None,
                                quiet_until=quiet, local_score=16.2), NAMES)
    lines = card["features"]
    assert "will look at the question again in 2 min if nobody answers it" in lines
    assert "nobody had answered it yet" in lines
    assert not [x for x in lines if "recheck s" in x or "answered by:" in x or x[-1:] == "—"]
    [told] = [x for x in lines if x.startswith("asked to be quiet here until ")]
    assert "(in 30 min)" in told and quiet not in told and "T10:30" not in told


def test_a_silent_fallback_and_a_model_leaning_to_a_bot_not_in_the_talk_read_right() -> None:
    """A stage chose to speak (score 89) and both replies were rejected: the headline says
    it meant to speak. The model leaned to the bot (73 % ≥ 65 %) but the bot was not part
    of the talk, so the message was not counted as addressed: the card says why, and does
    not mark the bot as the one chosen."""
    trace = DecisionTrace("m7", "c1", T0)
    trace.features.update({"addressed": None, "addressee": {
        "to": "Kuu", "p": 0.73, "bot": 0.73, "candidates": {"Kuu": 0.73, "room": 0.27},
        "top": [["a question to the seat", 1.2]], "threshold": 0.65}})
    d = Decision("m7", "c1", Action(ActionKind.NONE, "c1", "m7"), Stage.LOCAL, 89.0,
                 "score 89 → reply rejected twice (nothing left to say): stayed silent", T0,
                 trace)
    card = decision_card(d, NAMES)
    assert card["headline"] == (
        "Stayed silent instead of replying: a member would speak here (score 89), but the "
        "reply was rejected twice (nothing left to say)")
    a = card["addressee"]
    assert [c["label"] for c in a["candidates"] if c["chosen"]] == []
    assert a["notes"] == ["the model leans to the bot (≥ 65 %), but the bot was not part of "
                          "this talk and was not named: not counted as addressed"]


def test_a_seat_that_leans_to_silence_says_what_held_it_back() -> None:
    def card(p: float) -> dict[str, object]:
        trace = DecisionTrace("m6", "c1", T0)
        trace.features.update({"seat": {
            "p": p, "short": 0.3, "score": 100 * p,
            "top": [["said to the seat", 2.0], ["a question", 1.1]],
            "against": [["only the author here", -6.9], ["base rate", -0.6]],
            "content": [["a question", 1.1]]}})
        d = Decision("m6", "c1", Action(ActionKind.NONE, "c1", "m6"), Stage.LOCAL, 15.0,
                     "score 15", T0, trace)
        seat = decision_card(d, NAMES)["seat"]
        assert isinstance(seat, dict)
        return seat

    # 0 % beside reasons that all push up would read as a contradiction: what pulled it
    # down is said (the base rate, shared by every message, is left out)
    assert card(0.004)["because"] == ("because: said to the seat +2.0, a question +1.1; "
                                      "held back by: only the author here -6.9; "
                                      "what was said: a question +1.1")
    # a seat that leans to speaking is told by what moved it up
    assert "held back by" not in str(card(0.7)["because"])
