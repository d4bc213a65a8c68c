"""The `thresholds` stage: JUDGE_LLM_THRESHOLD_HIGH/LOW: speak, stay silent, or leave it to the
unclear band (the LLM judge).
"""

from __future__ import annotations

from kuuki.decide.stages.common import silent
from kuuki.decide.types import JUDGED_AGAIN, Case, Speak, StageResult
from kuuki.domain import Stage
from kuuki.settings import Settings


class Thresholds:
    name = "thresholds"
    passes = JUDGED_AGAIN

    def __init__(self, settings: Settings, *, llm_mode: bool) -> None:
        self.high = settings.JUDGE_LLM_THRESHOLD_HIGH
        self.low = settings.JUDGE_LLM_THRESHOLD_LOW
        self.llm_mode = llm_mode  # judge mode llm with a model: every message to the LLM

    async def run(self, case: Case) -> StageResult:
        r = case.local
        if not case.ambient or r is None:
            return StageResult.passing()
        trace = case.trace
        if self.llm_mode:
            trace.step("judge mode llm: every ambient message goes to the LLM stage")
            return StageResult.passing(band="llm mode")
        if r.score >= self.high:
            trace.step(f"local stage: score {r.score:.0f} ≥ {self.high}: speak")
            case.speak = Speak(Stage.LOCAL, f"score {r.score:.0f}")
            return StageResult.passing(band="speak")
        if r.score <= self.low:
            trace.step(f"local stage: score {r.score:.0f} ≤ {self.low}: stay silent")
            return silent(case, Stage.LOCAL, f"score {r.score:.0f}")
        trace.step(f"score {r.score:.0f} is in the unclear band ({self.low}, {self.high})")
        return StageResult.passing(band="unclear")
