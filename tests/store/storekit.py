"""Shared values and builders for the store tests (imported as a plain module)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    Decision,
    DecisionTrace,
    LLMCallRecord,
    Message,
    Stage,
    User,
    Visibility,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

ANN = User("u-ann", "Ann")
BOB = User("u-bob", "Bob")
BOT = User("u-bot", "kuuki", is_bot=True)
GENERAL = Channel("c-general", "general", Visibility.PUBLIC, "acme", "slack")


def msg(
    mid: str,
    text: str = "hello",
    *,
    user: User = ANN,
    channel: str = GENERAL.id,
    minutes: float = 0,
    **kw: Any,
) -> Message:
    return Message(
        id=mid,
        channel_id=channel,
        user=user,
        text=text,
        ts=T0 + timedelta(minutes=minutes),
        **kw,
    )


def decision(
    m: Message,
    *,
    kind: ActionKind = ActionKind.REPLY,
    minutes: float = 0,
    stage: Stage = Stage.LLM,
) -> Decision:
    trace = DecisionTrace(m.id, m.channel_id, m.ts)
    trace.step("filter: passed")
    trace.add("mentioned", 2.5, "@kuuki")
    trace.add("question", 0.75)
    trace.features.update({"length": len(m.text), "tags": ["q", "mention"], "ratio": 0.5})
    trace.llm_calls.append(
        LLMCallRecord("decide", "smollm2", 120, 8, 41.234, "ok", prompt="p\x00q\ud800")
    )
    trace.llm_calls.append(LLMCallRecord("reply", "smollm2", 0, 0, 0.0, "skipped"))
    trace.error("none really")
    action = Action(
        kind,
        m.channel_id,
        target_message_id=m.id,
        text="sure!" if kind is ActionKind.REPLY else None,
        emoji="👍" if kind is ActionKind.REACT else None,
        thread=m.thread,
        reply_to=m.id,
    )
    return Decision(
        message_id=m.id,
        channel_id=m.channel_id,
        action=action,
        stage=stage,
        score=trace.score,
        reason="addressed directly",
        decided_at=m.ts + timedelta(seconds=1, minutes=minutes),
        trace=trace,
    )
