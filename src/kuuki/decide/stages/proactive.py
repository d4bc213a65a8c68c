"""The `proactive` stage: talk the bot starts itself in a quiet channel, through the same
policy as any unasked intervention.
"""

from __future__ import annotations

from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Stage, Verdict


class Proactive:
    """Proactive talk offered by the memory layer (seed 002), past quiet and the policy."""

    name = "proactive"
    passes = frozenset({Pass.PROACTIVE})

    async def run(self, case: Case) -> StageResult:
        p = case.proposal
        s = case.situation
        if p is None:
            return StageResult.silent(Stage.PROACTIVE, 0, "nothing proposed")
        last = s.bot.last_action_at if s.bot else None
        if last is not None and last >= (p.wake_at or s.message.ts):
            return StageResult.silent(Stage.PROACTIVE, 0, "already responded after the wake-up")
        verdict = Verdict(
            ActionKind.REPLY, Stage.PROACTIVE, p.score, p.reason, task="proactive", topic=p.topic
        )
        return StageResult.decide(verdict)
