"""The `answered` stage: on a later pass, a message a person has already answered is left to
them. On the re-check of a question in the persona's area, a line that calls the asker by
name is an answer wherever the tracker put it, and lines said to someone else, a
backchannel or a question of their own are not (kuuki.decide.not_an_answer); the trace
says which.
"""

from __future__ import annotations

from kuuki.decide.area import Area
from kuuki.decide.stages.common import in_area, view_of
from kuuki.decide.types import JUDGED_AGAIN, Case, Pass, StageResult
from kuuki.domain import Stage


class Answered:
    name = "answered"
    passes = JUDGED_AGAIN

    def __init__(self, area: Area) -> None:
        self.area = area

    async def run(self, case: Case) -> StageResult:
        if not case.ambient:
            return StageResult.passing()
        s = case.situation
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        # Minutes later (the re-check), for a question in the persona's area, a line
        # said to someone else, a backchannel or a question of its own is read as what it
        # is. Elsewhere, and on the settled pass seconds after the question, such a line
        # still counts as an answer: the bot errs towards leaving the talk to people.
        closer = case.passing is Pass.RECHECK and bool(in_area(case, self.area))
        passed: list[str] | None = [] if closer else None
        by = view_of(case).answered_by(bot_ids, passed)
        if passed:
            # Why the lines after it were not taken for an answer (kuuki.decide.not_an_answer).
            case.trace.step("not an answer: " + "; ".join(passed[:3])
                            + (f"; {len(passed) - 3} more" if len(passed) > 3 else ""))
        case.trace.features["answered_by"] = by.id if by is not None else None
        if by is None:
            return StageResult.passing(answered_by=None)
        case.trace.step(f"{by.user.name} already answered it ({by.id})")
        return StageResult.silent(
            Stage.LOCAL, 0, f"answered by {by.user.name}", answered_by=by.id
        )
