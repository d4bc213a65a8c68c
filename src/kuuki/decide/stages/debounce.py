"""The `debounce` stage: the first pass waits for a burst to settle (shorter for questions)
and asks for a re-check of an open question.
"""

from __future__ import annotations

from kuuki.decide.stages.common import RECHECK_S
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Stage, Verdict
from kuuki.settings import Settings

DEBOUNCE_S = 30.0


QUESTION_DEBOUNCE_S = 12.0


class Debounce:
    name = "debounce"
    passes = frozenset({Pass.FIRST})

    def __init__(self, settings: Settings) -> None:
        self.low = settings.JUDGE_LLM_THRESHOLD_LOW
        self.mode = settings.judge_mode

    async def run(self, case: Case) -> StageResult:
        r = case.local
        if not case.ambient or r is None:
            return StageResult.passing()
        if r.score <= self.low and not r.open_question and self.mode != "llm":
            case.trace.step(f"local stage: score {r.score:.0f} ≤ {self.low}, nothing to wait for")
            return StageResult.silent(Stage.LOCAL, r.score, "score below the low threshold")
        defer = QUESTION_DEBOUNCE_S if r.question else DEBOUNCE_S
        recheck = RECHECK_S if r.open_question else None
        verdict = Verdict(
            ActionKind.NONE, Stage.LOCAL, r.score, "waiting for the burst to settle",
            defer_s=defer, recheck_s=recheck,
        )
        return StageResult.decide(verdict, defer_s=defer, recheck_s=recheck)
