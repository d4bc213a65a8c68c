"""The `answered` stage: on a later pass, a message a person has already answered is left to
them.
"""

from __future__ import annotations

from kuuki.decide.stages.common import view_of
from kuuki.decide.types import JUDGED_AGAIN, Case, StageResult
from kuuki.domain import Stage


class Answered:
    name = "answered"
    passes = JUDGED_AGAIN

    async def run(self, case: Case) -> StageResult:
        if not case.ambient:
            return StageResult.passing()
        s = case.situation
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        by = view_of(case).answered_by(bot_ids)
        case.trace.features["answered_by"] = by.id if by is not None else None
        if by is None:
            return StageResult.passing(answered_by=None)
        case.trace.step(f"{by.user.name} already answered it ({by.id})")
        return StageResult.silent(
            Stage.LOCAL, 0, f"answered by {by.user.name}", answered_by=by.id
        )
