"""The `form` stage: how to speak once it was decided to (an emoji, a short aizuchi, or a
full reply; kuuki.decide.response_type).
"""

from __future__ import annotations

from kuuki.decide.response_type import choose_form
from kuuki.decide.stages.common import view_of
from kuuki.decide.types import JUDGED_AGAIN, Case, StageResult
from kuuki.domain import ActionKind, Stage, Verdict
from kuuki.settings import Settings


class Form:
    """How to speak, once a stage decided that the bot speaks (kuuki.decide.response_type)."""

    name = "form"
    passes = JUDGED_AGAIN

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def run(self, case: Case) -> StageResult:
        speak, r = case.speak, case.local
        if speak is None or r is None:
            return StageResult.silent(Stage.LOCAL, r.score if r else 0, "no stage chose to speak")
        form = choose_form(
            r, r.score, case.message.text, self.settings.persona,
            diversity=self.settings.RESPONSE_DIVERSITY_ENABLED, suggested=speak.suggested,
        )
        case.trace.step(f"form: {form.action.value} — {form.why}")
        if form.action is ActionKind.NONE:
            return StageResult.silent(speak.stage, r.score, form.why, form="none")
        verdict = Verdict(
            form.action, speak.stage, r.score, speak.reason, emoji=form.emoji,
            conversation_id=view_of(case).conversation_id,
        )
        return StageResult.decide(verdict, form=form.action.value)
