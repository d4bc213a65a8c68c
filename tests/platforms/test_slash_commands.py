"""`/kuuki why`, as Discord and Slack show it: the latest decision in a few lines."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kuuki.domain import Channel, User
from kuuki.platforms.commands import run_command

GENERAL = Channel("c1", "general")
ALICE = User("u1", "alice")


class LatestDecision:
    """The one part of the engine `/kuuki why` reads: the channel's latest stored row."""

    def __init__(self, row: dict[str, Any] | None) -> None:
        self.row = row

    def status(self, channel: Channel) -> dict[str, Any]:
        raise AssertionError("/kuuki why does not ask for the status")

    async def quiet(self, channel: Channel, minutes: float) -> datetime | None:
        raise AssertionError("/kuuki why does not make the bot quiet")

    async def latest_decision(self, channel_id: str) -> dict[str, Any] | None:
        assert channel_id == GENERAL.id
        return self.row


def row(features: dict[str, Any]) -> dict[str, Any]:
    return {"action": "none", "stage": "local", "score": 20.0, "reason": "for someone else",
            "trace": {"contributions": [{"rule": "one-to-one", "points": -30, "detail": ""}],
                      "features": features}}


async def test_why_tells_who_the_message_was_for_and_whether_its_seat_would_speak() -> None:
    features = {
        "language": "en",
        "addressee": {"to": "alice", "p": 0.83, "bot": 0.12,
                      "candidates": {"alice": 0.83, "Kuu": 0.12, "room": 0.05},
                      "top": [["name at the start", 2.1], ["answers alice's question", 0.9]],
                      "threshold": 0.6},
        "seat": {"p": 0.62, "short": 0.3, "score": 62.0,
                 "top": [["p(to the seat)", 1.8], ["turns since the seat spoke", -0.4]]},
    }
    reply = await run_command(LatestDecision(row(features)), GENERAL, ALICE, "why")
    assert reply.ok and reply.ephemeral
    assert reply.text.splitlines() == [
        "Last decision: none (stage local, score 20.0)",
        "Reason: for someone else",
        "-30 one-to-one",
        "who it is for: alice 83 % · Kuu (the bot) 12 % · the room 5 %"
        " — not for the bot (it would count from 60 %)",
        "  to alice because: name at the start +2.1, answers alice's question +0.9",
        "would a member in its seat speak: 62 % (short remark 30 %)",
        "  because: p(to the seat) +1.8, turns since the seat spoke -0.4",
    ]


async def test_why_of_a_decision_before_the_models_is_as_it_was() -> None:
    reply = await run_command(LatestDecision(row({"language": "en"})), GENERAL, ALICE, "why")
    assert reply.text.splitlines() == [
        "Last decision: none (stage local, score 20.0)",
        "Reason: for someone else",
        "-30 one-to-one",
    ]


async def test_why_before_any_decision_says_so() -> None:
    reply = await run_command(LatestDecision(None), GENERAL, ALICE, "why")
    assert reply.text == "I have not decided anything in this channel yet."
