"""The vocabulary of the decision pipeline: which pass this is, what a stage returns, and
the case the stages look at.

A stage returns a `StageResult`: it *passes* (the next stage runs; ``facts`` say what it
found), *decides* (``verdict`` ends the list) or *defers* (``verdict.defer_s``: judge again
later on the channel's queue). The pipeline stores every result in the decision's trace
(`DecisionTrace.stages`), structured, so a test asserts ``trace.stage("quiet").outcome``
rather than searching prose.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from kuuki.decide.situation import Addressing, Situation
from kuuki.domain import (
    ActionKind,
    Decision,
    DecisionTrace,
    Message,
    Stage,
    StageRecord,
    Verdict,
)

if TYPE_CHECKING:
    from kuuki.decide.addressing.reading import Reading
    from kuuki.decide.rules import LocalResult
    from kuuki.decide.tracking import ChannelView


class Pass(enum.StrEnum):
    """Why the list runs for a message now."""

    FIRST = "first"  # the message just arrived
    SETTLED = "settled"  # its burst settled (debounce, or a held ping burst)
    RECHECK = "recheck"  # an open question, judged again minutes later
    CAUGHT_UP = "caught_up"  # missed while away, answered at the catch-up marker
    PROACTIVE = "proactive"  # the bot may bring up a remembered topic (memory layer)

    @classmethod
    def of(cls, extra: Mapping[str, Any]) -> Pass:
        """The pass a bare `Judge` call means (``Situation.extra`` flags, for judges and
        tests that judge one situation; the engine passes `Pass` values)."""
        for p in (cls.SETTLED, cls.RECHECK, cls.CAUGHT_UP):
            if extra.get(str(p)):
                return p
        return cls.FIRST


class Outcome(enum.StrEnum):
    PASS = "pass"
    DECIDE = "decide"
    DEFER = "defer"


@dataclass(frozen=True, slots=True)
class StageResult:
    outcome: Outcome
    verdict: Verdict | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def passing(cls, **facts: Any) -> StageResult:
        # Most stages pass most messages with nothing to add: one shared, read-only result.
        return cls(Outcome.PASS, None, facts) if facts else _PASSED

    @classmethod
    def decide(cls, verdict: Verdict, **facts: Any) -> StageResult:
        outcome = Outcome.DEFER if verdict.defer_s else Outcome.DECIDE
        return cls(outcome, verdict, facts)

    @classmethod
    def silent(cls, stage: Stage, score: float, reason: str, **facts: Any) -> StageResult:
        return cls(Outcome.DECIDE, Verdict(ActionKind.NONE, stage, score, reason), facts)


_PASSED = StageResult(Outcome.PASS, None, MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class Proposal:
    """Proactive talk offered by the memory layer: a remembered topic for the channel."""

    topic: str
    score: float
    reason: str
    wake_at: datetime | None = None  # the wake-up message's time


@dataclass(slots=True)
class Case:
    """One run of the list: the situation, the pass, the trace, and what stages found.

    ``addressing`` is filled by the addressed stage; ``view`` (the conversation structure
    around the message), ``local`` (the local stage's findings) and ``reading`` (the
    addressee and seat models' output) by the stages that compute them; ``speak`` is set
    when a stage decided *that* the bot speaks and leaves *how* (the form) to the form
    stage. ``readiness``/``keywords``: the channel's policy (the channel policy stage).
    ``awaiting``: the ids of the channel's messages whose judgment is still to come
    (a deferral or a re-check pending), from the engine.
    """

    situation: Situation
    passing: Pass
    trace: DecisionTrace
    bot_message_ids: Any = ()
    proposal: Proposal | None = None
    view: ChannelView | None = None
    local: LocalResult | None = None
    reading: Reading | None = None
    speak: Speak | None = None
    awaiting: frozenset[str] = frozenset()
    # The channel's policy, from the channel policy stage: points on the local score, and
    # its own keywords (None: the persona's).
    readiness: int = 0
    keywords: tuple[str, ...] | None = None

    @property
    def message(self) -> Message:
        return self.situation.message

    @property
    def addressing(self) -> Addressing:
        return self.situation.addressing

    @property
    def ambient(self) -> bool:
        return not self.situation.addressing and self.passing is not Pass.PROACTIVE


@dataclass(frozen=True, slots=True)
class Speak:
    """A stage decided that the bot speaks; the form stage decides how."""

    stage: Stage
    reason: str
    suggested: str | None = None


class DecideStage(Protocol):
    """One stage of the list. ``name`` is its key in the trace; ``passes`` the passes it
    runs on. ``run`` never raises on purpose (the pipeline records a failure and stays
    silent). ``sent`` (optional) is told the finished decision after the send succeeded."""

    name: str
    passes: frozenset[Pass]

    async def run(self, case: Case) -> StageResult: ...


class AfterSend(Protocol):
    def sent(self, case: Case, decision: Decision) -> None: ...


ALL_PASSES = frozenset(Pass)
MESSAGE_PASSES = frozenset(Pass) - {Pass.PROACTIVE}
JUDGED_AGAIN = frozenset({Pass.SETTLED, Pass.RECHECK, Pass.CAUGHT_UP})


def record(name: str, result: StageResult) -> StageRecord:
    v = result.verdict
    return StageRecord(
        name=name,
        outcome=str(result.outcome),
        action=str(v.action) if v is not None else None,
        reason=v.reason if v is not None else "",
        facts=dict(result.facts),
    )


# Step 5 as the engine sees it (kuuki.engine reads the pipeline through these).
class Addresser(Protocol):
    """Tells how a message addresses the bot (kuuki.decide.addressing.names.AddressDetector):
    ``dm`` when the channel is a direct message with the bot, ``recent`` the channel's
    buffer (a thread reply to another person is not to the bot). Pure: no state changes."""

    def detect(
        self,
        msg: Message,
        *,
        bot_user_ids: Iterable[str],
        bot_message_ids: Iterable[str] = (),
        dm: bool = False,
        recent: Sequence[Message] = (),
    ) -> Addressing: ...


class DecisionPipeline(Protocol):
    """Step 5, the decision (kuuki.decide.pipeline.Pipeline, built once at start-up).

    `decide` runs the stages for a case and returns the verdict; it never raises (a
    failure is traced, then silence) and records every stage's result in the case's trace.
    `sent` tells the stages that keep history about a decision that was carried out (its
    send succeeded, or it was silence); it is never called for a failed send. `address`
    tells how a message addresses the bot (`Addresser.detect`); `describe` names the
    pipeline for status lines.
    """

    def address(
        self,
        msg: Message,
        *,
        bot_user_ids: Iterable[str],
        bot_message_ids: Iterable[str] = (),
        dm: bool = False,
        recent: Sequence[Message] = (),
    ) -> Addressing: ...

    async def decide(self, case: Case) -> Verdict: ...

    def sent(self, case: Case, decision: Decision) -> None: ...

    def describe(self) -> str: ...
