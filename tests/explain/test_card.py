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
