"""The `quiet` stage: a channel told to be quiet stays silent until the time it was given,
proactive talk included (it runs through the same list).
"""

from __future__ import annotations

from kuuki.decide.types import ALL_PASSES, Case, StageResult
from kuuki.domain import Stage


class Quiet:
    """`/kuuki quiet`: silent unless addressed, proactive talk included."""

    name = "quiet"
    passes = ALL_PASSES

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        until = s.bot.quiet_until if s.bot else None
        if until is None or s.now >= until or case.addressing:
            return StageResult.passing()
        case.trace.step(f"quiet in this channel until {until.isoformat()}")
        return StageResult.silent(
            Stage.FILTERED, 0, "asked to be quiet here", until=until.isoformat()
        )
