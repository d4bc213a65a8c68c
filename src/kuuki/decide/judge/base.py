"""The judge port: given the situation around a message, what should the bot do?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kuuki.decide.situation import Situation
from kuuki.domain import ActionKind, DecisionTrace, Message, Stage, Verdict


class Judge(Protocol):
    """Decides the action for one message.

    `judge` never raises: a failure inside is recorded in the trace and answered with the
    documented safe default (stay silent). It appends every rule's contribution and every
    LLM call to `trace`.
    """

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict: ...


class AddressedOnlyJudge:
    """The simplest judge: reply when addressed, otherwise stay silent."""

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        a = situation.addressing
        if a:
            trace.add(f"addressed:{a.kind}", 100, a.detail)
            return Verdict(ActionKind.REPLY, Stage.ADDRESSED, 100, f"addressed by {a.kind}")
        trace.add("not addressed", 0)
        return Verdict(ActionKind.NONE, Stage.LOCAL, 0, "not addressed")


def recent_humans(messages: Sequence[Message]) -> list[str]:
    seen: list[str] = []
    for m in messages:
        if not m.user.is_bot and m.user.id not in seen:
            seen.append(m.user.id)
    return seen
