"""The `llm` stage: the LLM judge decides the unclear band (and the conversation state when
the local classifier is unsure), its answers cached per conversation and its calls
budgeted per channel.
"""

from __future__ import annotations

from kuuki.decide.judge.cache import LLMJudgment, VerdictCache
from kuuki.decide.judge.history import CallBudget
from kuuki.decide.judge.llm_stage import LLMStage
from kuuki.decide.judge.state import ConvState
from kuuki.decide.rules import LocalResult
from kuuki.decide.stages.common import silent, view_of
from kuuki.decide.stages.policy import Policy
from kuuki.decide.types import JUDGED_AGAIN, Case, Speak, StageResult
from kuuki.domain import Stage
from kuuki.settings import Settings

STATE_SURE = 0.6  # below this the local state classifier asks for the model


class LLMJudge:
    """The unclear band: the LLM judge (seed 000's checks, then the judgment, cached per
    conversation), or the local stage's own answer without a model, in judge mode rules,
    with the breaker open or the channel's call budget spent."""

    name = "llm judge"
    passes = JUDGED_AGAIN

    def __init__(self, settings: Settings, stage: LLMStage | None, policy: Policy) -> None:
        self.mode = settings.judge_mode
        self.stage = stage
        self.policy = policy.policy
        self.cache = VerdictCache()
        self.budget = CallBudget(settings.judge_call_budget)
        low, high = settings.JUDGE_LLM_THRESHOLD_LOW, settings.JUDGE_LLM_THRESHOLD_HIGH
        # A reaction costs little, so the local answer speaks from the lower third of the
        # band (40 by default); more than a reaction still needs the response-type table.
        self.local_speak = low + (high - low) / 3

    async def run(self, case: Case) -> StageResult:
        if not case.ambient or case.speak is not None or case.local is None:
            return StageResult.passing()
        stage = self.stage
        if stage is None:
            return self._local(case, "judge mode rules" if self.mode == "rules" else "no LLM")
        trace = case.trace
        trace.features["breaker"] = stage.describe_breaker()
        if not stage.available:
            return self._local(case, "circuit open (LLM failing)")
        s, r = case.situation, case.local
        if not self.budget.take(s.channel.id, s.now):
            trace.features["llm_budget"] = "spent"
            return self._local(case, "LLM budget for this channel spent")
        view = view_of(case)
        if r.state is not None and r.state.confidence < STATE_SURE:
            r.state = await stage.state(view.conversation()[-10:], trace)
            trace.features["state_llm"] = r.state.state.value
            if r.state.state is ConvState.ENDING:
                return silent(case, Stage.LLM, "the conversation is ending")
        if not r.engaged and not await self.policy.situation_new(s, view, trace, stage):
            return silent(case, Stage.LLM, "same conversation, nothing changed")
        conversation, other = view.split()
        key = view.conversation_id or f"channel:{s.channel.id}"
        newest = conversation[-1].id
        judgment = self.cache.get(s.channel.id, key, newest, s.now)
        if judgment is not None:
            trace.step("LLM judge: cached answer for this conversation (nothing new said)")
            trace.features["judge_cache"] = "hit"
        else:
            trace.features["judge_cache"] = "miss"
            judgment = await stage.judge(s, conversation, other, trace, _hints(r))
            if judgment is None:
                if not stage.available:
                    return self._local(case, "circuit open (LLM failing)")
                trace.step("LLM judge: no usable answer: fail-safe, stay silent")
                return silent(case, Stage.LLM, "judge answer unusable")
            ttl = self.cache.put(s.channel.id, key, newest, judgment, s.now)
            trace.step(f"LLM judge cached {ttl.total_seconds() / 60:.1f} min")
        return self._from_judgment(case, judgment)

    def _local(self, case: Case, why: str) -> StageResult:
        r = case.local
        assert r is not None
        case.trace.step(f"{why}: the local stage decides (speaks from {self.local_speak:.0f})")
        if r.score >= self.local_speak:
            case.speak = Speak(Stage.LOCAL, f"{why}; score {r.score:.0f}")
            return StageResult.passing(answer="local", why=why)
        return silent(case, Stage.LOCAL, f"{why}; score {r.score:.0f}")

    def _from_judgment(self, case: Case, j: LLMJudgment) -> StageResult:
        r = case.local
        assert r is not None
        judged = {
            "should_respond": j.should_respond,
            "response_type": j.response_type,
            "confidence": round(j.confidence, 2),
            "reason": j.reason,
        }
        case.trace.features["llm_judgment"] = judged
        reason = f"LLM: {j.reason}" if j.reason else "LLM judge"
        if not j.should_respond or (j.response_type == "none" and not r.question):
            return silent(case, Stage.LLM, reason)
        suggested = j.response_type if j.response_type != "none" else None
        case.speak = Speak(Stage.LLM, reason, suggested)
        return StageResult.passing(answer="llm", **judged)


def _hints(r: LocalResult) -> str:
    notes = []
    if r.state is not None and r.state.state is not ConvState.ACTIVE:
        notes.append(f"state: {r.state.state.value.upper()}")
    if r.unanswered:
        notes.append("unanswered question")
    if r.engaged:
        notes.append("you are already part of this conversation")
    return ", ".join(notes)
