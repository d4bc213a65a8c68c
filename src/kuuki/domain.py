"""Platform-neutral chat vocabulary.

Everything here is a plain value: no I/O, no platform or vendor names. Adapters translate
platform payloads into these types and back; the engine and everything behind it speak
only this language.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class Visibility(enum.StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    DM = "dm"


class EventKind(enum.StrEnum):
    POSTED = "posted"
    EDITED = "edited"
    DELETED = "deleted"
    REACTION_ADDED = "reaction_added"


class ActionKind(enum.StrEnum):
    """What the bot does about a message, weakest first."""

    NONE = "none"
    REACT = "react"
    ACK = "ack"
    REPLY = "reply"

    @property
    def strength(self) -> int:
        return _STRENGTH[self]


_STRENGTH = {ActionKind.NONE: 0, ActionKind.REACT: 1, ActionKind.ACK: 2, ActionKind.REPLY: 3}


class Stage(enum.StrEnum):
    """Which part of the pipeline settled a decision."""

    FILTERED = "filtered"
    ADDRESSED = "addressed"
    LOCAL = "local"
    LLM = "llm"
    PROACTIVE = "proactive"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class User:
    id: str
    name: str
    is_bot: bool = False


@dataclass(frozen=True, slots=True)
class Channel:
    id: str
    name: str
    visibility: Visibility = Visibility.PUBLIC
    workspace: str = "default"
    platform: str = "local"
    parent_id: str | None = None  # a thread's channel; allow/deny lists follow the parent

    @property
    def names(self) -> tuple[str, ...]:
        """Every key an allow or deny list may use for this channel."""
        keys = (self.id, self.name)
        return (*keys, self.parent_id) if self.parent_id else keys


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message as the engine sees it.

    ``mentions`` holds the ids (or names, for transcripts) of users the platform reported
    as mentioned; ``reply_to`` is the platform's explicit reply reference, ``thread`` the
    id of the thread root when the message lives in a thread.
    """

    id: str
    channel_id: str
    user: User
    text: str
    ts: datetime
    reply_to: str | None = None
    thread: str | None = None
    mentions: tuple[str, ...] = ()
    edited: bool = False
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """Something that happened in a channel.

    ``event_id`` is the platform's id for this delivery; the engine handles an id once,
    however often a platform (or a reconnect) delivers it.
    """

    kind: EventKind
    channel: Channel
    event_id: str
    at: datetime
    message: Message | None = None
    target_id: str | None = None
    user: User | None = None
    text: str | None = None
    emoji: str | None = None
    # History read at start-up so the bot does not start blind: recorded, never judged.
    backfill: bool = False
    # Arrived after the fact (recovered after a crash, or read back from the platform's
    # history after a restart or an outage): recorded; an addressed one is answered at the
    # channel's catch-up marker if still owed (kuuki.engine.core).
    catch_up: bool = False


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    channel_id: str
    target_message_id: str | None = None
    text: str | None = None
    emoji: str | None = None
    thread: str | None = None
    reply_to: str | None = None

    @classmethod
    def none(cls, channel_id: str, target: str | None = None) -> Action:
        return cls(ActionKind.NONE, channel_id, target)


@dataclass(slots=True)
class Contribution:
    rule: str
    points: float
    detail: str = ""


@dataclass(slots=True)
class LLMCallRecord:
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    # "ok" | "invalid" | "timeout" | "unavailable" | "interrupted" | "error" | "skipped"
    outcome: str
    detail: str = ""
    prompt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": round(self.latency_ms, 2),
            "outcome": self.outcome,
            "detail": self.detail,
            "prompt": self.prompt,
        }


@dataclass(slots=True)
class ToolCallRecord:
    """One tool the model asked for while replying (kuuki.respond.tools), and what came of it.

    ``arguments`` is what the model wrote (shortened); ``result_chars`` how much of the
    result went into the prompt; ``outcome`` "ok", or why the model got a note instead:
    "invalid" (bad arguments or unknown tool), "timeout", "error", "refused" (limits).
    """

    name: str
    arguments: str
    duration_ms: float
    result_chars: int
    outcome: str
    detail: str = ""
    round: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "duration_ms": round(self.duration_ms, 2),
            "result_chars": self.result_chars,
            "outcome": self.outcome,
            "detail": self.detail,
            "round": self.round,
        }


@dataclass(slots=True)
class GuardRecord:
    """One verdict of the output guard on something a model wrote (kuuki.guard)."""

    subject: str  # "reply", "reply (retry)", "judge", "summary", …
    ok: bool
    check: str = ""  # the rule that rejected it; "" when ok
    reason: str = ""
    text: str = ""  # what the model wrote, shortened
    repairs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "check": self.check,
            "reason": self.reason,
            "text": self.text,
            "repairs": list(self.repairs),
        }


@dataclass(slots=True)
class StageRecord:
    """What one stage of the decision pipeline returned (kuuki.decide): ``outcome`` is
    pass | decide | defer; ``facts`` the stage's findings, plain values."""

    name: str
    outcome: str
    action: str | None = None
    reason: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome,
            "action": self.action,
            "reason": self.reason,
            "facts": dict(self.facts),
        }


@dataclass(slots=True)
class DecisionTrace:
    """Why the bot did what it did about one message.

    Mutable on purpose: each stage of the pipeline appends what it saw, and the finished
    trace is stored with its Decision and never changed afterwards.
    """

    message_id: str
    channel_id: str
    started_at: datetime
    steps: list[str] = field(default_factory=list)
    contributions: list[Contribution] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    llm_calls: list[LLMCallRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    guard: list[GuardRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    stages: list[StageRecord] = field(default_factory=list)

    def stage(self, name: str) -> StageRecord | None:
        """The last result of stage ``name`` in this trace, if it ran."""
        for r in reversed(self.stages):
            if r.name == name:
                return r
        return None

    def step(self, text: str) -> None:
        self.steps.append(text)

    def add(self, rule: str, points: float, detail: str = "") -> None:
        self.contributions.append(Contribution(rule, points, detail))

    def error(self, text: str) -> None:
        self.errors.append(text)

    @property
    def score(self) -> float:
        return sum(c.points for c in self.contributions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "channel_id": self.channel_id,
            "started_at": self.started_at.isoformat(),
            "steps": list(self.steps),
            "contributions": [
                {"rule": c.rule, "points": c.points, "detail": c.detail} for c in self.contributions
            ],
            "features": dict(self.features),
            "llm_calls": [c.to_dict() for c in self.llm_calls],
            "errors": list(self.errors),
            "guard": [g.to_dict() for g in self.guard],
            "stages": [r.to_dict() for r in self.stages],
            "tool_calls": [t.to_dict() for t in self.tool_calls],
        }


@dataclass(frozen=True, slots=True)
class Decision:
    message_id: str
    channel_id: str
    action: Action
    stage: Stage
    score: float
    reason: str
    decided_at: datetime
    trace: DecisionTrace
    # What the judge decided, when that is not what was done: a reply whose text the
    # output guard rejected twice becomes a reaction (``action``), the decision stays a
    # reply. None when the action is the decision.
    decided: ActionKind | None = None
    # When the message was written (its platform time): with ``decided_at`` (after the
    # send), the reply latency the metrics observe (kuuki.ops.metrics).
    message_at: datetime | None = None
    # Shadow mode: ``action`` is what the bot would have done (with its text, when a model
    # wrote one), and nothing was sent; the trace says so too (``features["shadow"]``).
    shadow: bool = False

    @property
    def judged(self) -> ActionKind:
        """The judge's decision, whatever generation then managed to deliver."""
        return self.decided or self.action.kind

    @property
    def llm_calls(self) -> int:
        return sum(1 for c in self.trace.llm_calls if c.outcome != "skipped")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What step 5 decided about a message: the action, the stage that decided it and
    why, and what the engine is to do besides (defer, re-check, go quiet)."""

    action: ActionKind
    stage: Stage
    score: float
    reason: str
    emoji: str | None = None
    conversation_id: str | None = None
    # Debounce: judge again after this many seconds unless a newer message supersedes it.
    defer_s: float | None = None
    # Act on this verdict now, and judge the message again after this many seconds
    # (an open question that may go unanswered).
    recheck_s: float | None = None
    # A deferral's key: a newer deferral with the same key supersedes it. ``"channel"``
    # (the debounce) is also superseded by any newer message of the channel.
    defer_key: str = "channel"
    # The deferral holds an answer the sender is owed (a held ping): its event is marked
    # handled only once the deferral is decided (kuuki.engine.deciding), so a crash loses nothing.
    owed: bool = False
    # Another prompt than reply/ack (``"proactive"``, with ``topic``).
    task: str | None = None
    topic: str | None = None
    # Asked to stay out of the channel (kuuki.decide.stages.quiet_request): the engine sets the
    # channel's quiet_until this many seconds from now, as `/kuuki quiet` does.
    quiet_s: float | None = None
    # The message is a copy of this earlier one, sent again (kuuki.decide.stages.sent_twice): the
    # engine leaves the earlier copy's pending judgment in place instead of superseding it.
    duplicate_of: str | None = None
    # False: no decision is stored (the bot's own message).
    log: bool = True
