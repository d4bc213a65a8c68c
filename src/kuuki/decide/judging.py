"""The last stages: seed 000's intervention policy, the LLM judge, proactive talk, the form.

The intervention interval has one meaning, kept here: EAVESDROP_MIN_INTERVENTION_INTERVAL_
MINUTES is the least time between two *unasked* interventions of the bot in a channel —
replies, acks and reactions it volunteered, proactive talk included. Answers to people who
address the bot are not interventions, and replies inside an engagement (the bot is already
part of the conversation) are exempt. The history is written from the finished decision,
after the send succeeded, and keeps one hour (kuuki.decide.history).
"""

from __future__ import annotations

from kuuki.decide.cache import LLMJudgment, VerdictCache
from kuuki.decide.history import CallBudget, Intervention
from kuuki.decide.llm_stage import LLMStage
from kuuki.decide.local import silent, view_of
from kuuki.decide.policy import InterventionPolicy
from kuuki.decide.response_type import choose_form
from kuuki.decide.rules import LocalResult
from kuuki.decide.state import ConvState
from kuuki.decide.tracking import format_log
from kuuki.decide.types import JUDGED_AGAIN, Case, Pass, Speak, StageResult
from kuuki.domain import ActionKind, Decision, Stage, Verdict
from kuuki.settings import Settings

STATE_SURE = 0.6  # below this the local state classifier asks for the model
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
