"""The `policy` stage: seed 000's intervention policy.

The intervention interval has one meaning, kept here: EAVESDROP_MIN_INTERVENTION_INTERVAL_
MINUTES is the least time between two *unasked* interventions of the bot in a channel —
replies, acks and reactions it volunteered, proactive talk included. Answers to people who
address the bot are not interventions, and replies inside an engagement (the bot is already
part of the conversation) are exempt. The history is written from the finished decision,
after the send succeeded, and keeps one hour (kuuki.decide.judge.history).
"""

from __future__ import annotations

from kuuki.decide.judge.history import Intervention
from kuuki.decide.judge.intervention import InterventionPolicy
from kuuki.decide.stages.common import silent, view_of
from kuuki.decide.tracking import format_log
from kuuki.decide.types import JUDGED_AGAIN, Case, Pass, StageResult
from kuuki.domain import ActionKind, Decision, Stage
from kuuki.settings import Settings

UNASKED = (Stage.LOCAL, Stage.LLM, Stage.PROACTIVE)


class Policy:
    name = "intervention policy"
    passes = JUDGED_AGAIN | {Pass.PROACTIVE}

    def __init__(self, settings: Settings, *, with_llm: bool) -> None:
        self.policy = InterventionPolicy(settings.EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES)
        self.stage = Stage.LLM if with_llm else Stage.LOCAL

    async def run(self, case: Case) -> StageResult:
        if case.passing is Pass.PROACTIVE:
            s = case.situation
            last = self.policy.history.last(s.channel.id, s.now)
            if last is not None and s.now - last.at < self.policy.min_interval:
                minutes = (s.now - last.at).total_seconds() / 60
                return StageResult.silent(
                    Stage.PROACTIVE, 0, "minimum interval since the last intervention",
                    since_last_min=round(minutes, 1),
                )
            return StageResult.passing()
        if not case.ambient or case.speak is not None or case.local is None:
            return StageResult.passing()
        blocked = self.policy.too_soon(case.situation, case.local, case.trace)
        if blocked:
            return silent(case, self.stage, blocked)
        return StageResult.passing()

    def sent(self, case: Case, decision: Decision) -> None:
        """An unasked intervention was delivered: remember it (seed 000, one hour)."""
        if decision.stage not in UNASKED or decision.action.kind is ActionKind.NONE:
            return
        view = view_of(case)
        conversation = view.conversation()
        s = case.situation
        self.policy.history.record(
            s.channel.id,
            Intervention(
                decision.decided_at, view.conversation_id, s.message.id,
                format_log(conversation[-5:]), tuple(m.id for m in conversation),
            ),
        )
