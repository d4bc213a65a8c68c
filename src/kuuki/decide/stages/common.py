"""What the stages share: the channel's view of a case, computed once, and silence with the
re-check of an open question (an open question is judged again RECHECK_S after it was
asked when nobody answers).
"""

from __future__ import annotations

from kuuki.decide.area import Area
from kuuki.decide.tracking import ChannelView
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Stage, Verdict

RECHECK_S = 180.0


MIN_RECHECK_S = 30.0


def view_of(case: Case) -> ChannelView:
    if case.view is None:
        case.view = ChannelView(case.situation)
    return case.view


def in_area(case: Case, area: Area) -> list[str]:
    """The persona's keywords (or the channel policy's own) in the message's burst."""
    return area.found("\n".join(m.text for m in view_of(case).burst()), case.keywords)


def silent(case: Case, stage: Stage, reason: str) -> StageResult:
    """Stay silent; on a settled pass an open question is judged again at RECHECK_S."""
    r = case.local
    score = r.score if r is not None else 0.0
    recheck: float | None = None
    if case.passing is Pass.SETTLED and r is not None and r.open_question:
        age = (case.situation.now - case.message.ts).total_seconds()
        recheck = max(MIN_RECHECK_S, RECHECK_S - age)
        case.trace.step(f"open question: judge again in {recheck:.0f} s if nobody answers")
        case.trace.features["recheck_s"] = recheck  # kept: a new owner rebuilds the timer
    return StageResult.decide(Verdict(ActionKind.NONE, stage, score, reason, recheck_s=recheck))


def conversation_of(case: Case) -> str | None:
    """The conversation the channel's view put the message in, once a stage computed it."""
    return case.view.conversation_id if case.view is not None else None
