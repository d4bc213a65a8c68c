"""The judge port: given the situation around a message, what should the bot do?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from kuuki.decide.addressing import Addressing
from kuuki.domain import ActionKind, Channel, DecisionTrace, Message, Stage, Verdict
from kuuki.ports import Tracker


@dataclass(slots=True)
class Situation:
    """What the judge may look at for one message (read-only by convention).

    ``recent`` is the channel's short-term buffer, oldest first, ending with ``message``;
    ``tracker`` is the channel's live ConversationTracker (or None when structure is off);
    ``bot`` carries the engine's per-channel facts about the bot (last reply time…).
    """

    message: Message
    channel: Channel
    addressing: Addressing
    recent: Sequence[Message]
    now: datetime
    conversation_id: str | None = None
    tracker: Tracker | None = None
    bot: BotState | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class BotState:
    """The bot's own recent behaviour in one channel."""

    user_ids: frozenset[str] = frozenset()
    last_reply_at: datetime | None = None
    last_reply_conversation: str | None = None
    # How the message the bot last answered in words addressed it ("mention", "name",
    # "context", … or "" when unasked): after answering a call, a remark closes the talk.
    last_reply_to: str = ""
    last_action_at: datetime | None = None
    quiet_until: datetime | None = None


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
