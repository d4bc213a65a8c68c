"""The `judge` stage: a whole `Judge` (a test's judge, or a plugin's) as one stage; it always
decides, and replaces every stage after the gates (kuuki.decide.pipeline.build_pipeline).
"""

from __future__ import annotations

from kuuki.decide.judge.base import Judge
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult


class JudgeStage:
    """A whole `Judge` as one stage (a test's judge, or a plugin's): it always decides."""

    name = "judge"
    passes = MESSAGE_PASSES

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    async def run(self, case: Case) -> StageResult:
        extra = case.situation.extra
        if case.passing is not Pass.FIRST:
            extra[str(case.passing)] = True
        verdict = await self.judge.judge(case.situation, case.trace)
        return StageResult.decide(verdict)
