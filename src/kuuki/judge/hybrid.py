"""The two-stage judge: read the room locally, ask a model only when it is genuinely unclear.

    addressed (mention / reply to the bot / name call)      → reply now (stage "addressed")
    first pass of an ambient message                        → score it; hopeless → silent now,
                                                              else wait for the burst to settle
                                                              (`defer_s`, shorter for questions)
    settled pass                                            → score again, then
        score ≥ JUDGE_LLM_THRESHOLD_HIGH                    → speak   (stage "local")
        score ≤ JUDGE_LLM_THRESHOLD_LOW                     → silent  (stage "local")
        between                                             → LLM stage (stage "llm"), or the
                                                              local stage's own answer when the
                                                              mode is `rules`, there is no
                                                              model, or the breaker is open
    open question to the room                               → judged again after RECHECK_S
                                                              (`recheck_s`); if nobody answered
                                                              it scores "unanswered"

In `llm` mode every settled ambient message goes to the LLM stage (the seed behaviour).
The LLM stage follows seed 000: conversation state (model only when the local classifier is
unsure), minimum interval since the last intervention, "same conversation as my last
intervention?" (tracker first), "has the situation changed?", then the judge itself, whose
answer is cached per conversation until something new is said there.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..clock import Clock
from ..domain import ActionKind, DecisionTrace, Stage
from ..guard.scaffold import Scaffold
from ..llm.base import LLM
from ..memory.context import ContextBuilder
from ..prompts import Prompts
from ..respond import MemoryProvider, PromptDump
from ..settings import Settings
from .base import Situation, Verdict
from .cache import LLMJudgment, VerdictCache
from .history import CallBudget, Intervention, TriggerLedger
from .llm_stage import LLMStage
from .policy import InterventionPolicy
from .response_type import choose_form
from .rules import LocalResult, RuleScorer
from .state import ConvState, StateClassifier
from .tracking import ChannelView, format_log

DEBOUNCE_S = 30.0
QUESTION_DEBOUNCE_S = 12.0
RECHECK_S = 180.0
STATE_SURE = 0.6  # below this the local state classifier asks for the model
ADDRESSED_LIMIT = 6  # replies per person per 10 min before the bot only reacts
_TEN_MIN = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class Pass:
    """Which of the engine's calls this is for the message."""

    settled: bool
    recheck: bool

    @property
    def first(self) -> bool:
        return not (self.settled or self.recheck)


class HybridJudge:
    """The judge of issue 4. One instance serves every channel of an engine."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        *,
        llm: LLM | None = None,
        embedder: Any | None = None,
        memory: MemoryProvider | None = None,
        dump: PromptDump | None = None,
        prompts: Prompts | None = None,
        builder: ContextBuilder | None = None,
        scaffold: Scaffold | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.mode = settings.judge_mode
        self.high = settings.JUDGE_LLM_THRESHOLD_HIGH
        self.low = settings.JUDGE_LLM_THRESHOLD_LOW
        # The local stage's own answer inside the unclear band. A reaction costs little, so
        # it speaks from the lower third of the band (40 by default); anything more than a
        # reaction still needs the higher scores of the response-type table.
        self.local_speak = self.low + (self.high - self.low) / 3
        self.ledger = TriggerLedger()
        self.policy = InterventionPolicy(settings.EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES)
        self.cache = VerdictCache()
        self.budget = CallBudget(settings.judge_call_budget)
        self.scorer = RuleScorer(settings, self.ledger)
        self.classifier = StateClassifier(embedder)
        lang = settings.persona.default_language
        prompts = prompts or Prompts(lang, settings.prompts_dir or None)
        builder = builder or ContextBuilder(settings.persona, prompts)
        self.stage: LLMStage | None = (
            LLMStage(llm, clock, builder.prompts, builder, memory=memory, dump=dump,
                     scaffold=scaffold)
            if llm is not None and self.mode != "rules"
            else None
        )
        # Local-stage latency per judged message, for `kuuki bench judge`.
        self.local_ms: deque[float] = deque(maxlen=500_000)
        self.local_cpu_ms: deque[float] = deque(maxlen=500_000)

    # -- the port ---------------------------------------------------------------------------

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        try:
            return await self._judge(situation, trace)
        except Exception as exc:  # the port promises never to raise
            trace.error(f"judge failed: {type(exc).__name__}: {exc}")
            return Verdict(ActionKind.NONE, Stage.ERROR, 0, "judge failed: stay silent")

    async def _judge(self, s: Situation, trace: DecisionTrace) -> Verdict:
        p = Pass(bool(s.extra.get("settled")), bool(s.extra.get("recheck")))
        if p.settled and trace.contributions:
            # The engine hands back the first pass's trace; score afresh, keep a summary.
            trace.step(f"first pass scored {trace.score:.0f}; scoring again now it settled")
            trace.contributions.clear()
        trace.features["judge_mode"] = self.mode
        start = (time.perf_counter(), time.thread_time())
        view = ChannelView(s)
        early = self._recheck_gate(s, view, trace) if p.recheck and not s.addressing else None
        if early is not None:
            self._timed(start, trace)
            return early
        if p.settled and not s.addressing:
            early = self._answered(s, view, trace)
            if early is not None:
                self._timed(start, trace)
                return early
        unanswered = True if p.recheck and not s.addressing else None
        state = self.classifier.classify(view.conversation())
        r = self.scorer.score(s, view, trace, state, unanswered=unanswered)
        self._timed(start, trace)
        trace.features["local_score"] = round(r.score, 1)
        if r.addressed:
            return self._addressed(s, r, view, trace)
        if r.veto:
            trace.step(f"local stage: {r.veto}")
            return Verdict(ActionKind.NONE, Stage.LOCAL, r.score, r.veto)
        if p.first:
            return self._first_pass(s, r, trace)
        return await self._decide(s, r, view, trace, p)

    def _timed(self, start: tuple[float, float], trace: DecisionTrace) -> None:
        ms = (time.perf_counter() - start[0]) * 1000
        # CPU time too: on a busy machine wall time also measures the other processes.
        cpu = (time.thread_time() - start[1]) * 1000
        self.local_ms.append(ms)
        self.local_cpu_ms.append(cpu)
        trace.features["local_ms"] = round(ms, 3)

    # -- passes -------------------------------------------------------------------------------

    def _recheck_gate(
        self, s: Situation, view: ChannelView, trace: DecisionTrace
    ) -> Verdict | None:
        """On a recheck: stop unless the question is still open."""
        msg = s.message
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        cid = view.conversation_id
        for m in s.recent:
            if (
                m.user.id in bot_ids
                and m.ts >= msg.ts
                and (m.reply_to == msg.id or cid is None or view.conversation_of(m.id) == cid)
            ):
                trace.step("recheck: the bot has spoken in this conversation since")
                return Verdict(ActionKind.NONE, Stage.LOCAL, 0, "already answered by the bot")
        answered = self._answered(s, view, trace)
        if answered is not None:
            return answered
        age = (s.now - msg.ts).total_seconds()
        open_ = view.unanswered(s.now, min(age, RECHECK_S) - 1, bot_ids)
        trace.features["unanswered"] = open_
        if open_ is False:
            # Not "answered by someone else": nobody's answer was found above. The tracker
            # no longer counts it as a question to the room (said to someone, or its model
            # placed a later line as the answer).
            trace.step("recheck: the tracker lists no open question to the room here")
            return Verdict(ActionKind.NONE, Stage.LOCAL, 0, "no open question to the room")
        return None

    @staticmethod
    def _answered(s: Situation, view: ChannelView, trace: DecisionTrace) -> Verdict | None:
        """Silent when a person has already answered the message: the bot does not answer
        what someone else just did."""
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        by = view.answered_by(bot_ids)
        if by is None:
            trace.features["answered_by"] = None
            return None
        trace.features["answered_by"] = by.id
        trace.step(f"{by.user.name} already answered it ({by.id})")
        return Verdict(ActionKind.NONE, Stage.LOCAL, 0, f"answered by {by.user.name}")

    def _first_pass(self, s: Situation, r: LocalResult, trace: DecisionTrace) -> Verdict:
        if r.score <= self.low and not r.open_question and self.mode != "llm":
            trace.step(f"local stage: score {r.score:.0f} ≤ {self.low}, nothing to wait for")
            return Verdict(ActionKind.NONE, Stage.LOCAL, r.score, "score below the low threshold")
        defer = QUESTION_DEBOUNCE_S if r.question else DEBOUNCE_S
        recheck = RECHECK_S if r.open_question else None
        return Verdict(
            ActionKind.NONE,
            Stage.LOCAL,
            r.score,
            "waiting for the burst to settle",
            defer_s=defer,
            recheck_s=recheck,
        )

    async def _decide(
        self, s: Situation, r: LocalResult, view: ChannelView, trace: DecisionTrace, p: Pass
    ) -> Verdict:
        score = r.score
        if self.mode == "llm" and self.stage is not None:
            trace.step("judge mode llm: every ambient message goes to the LLM stage")
            return await self._llm_path(s, r, view, trace, p)
        if score >= self.high:
            trace.step(f"local stage: score {score:.0f} ≥ {self.high}: speak")
            return self._speak(s, r, view, trace, Stage.LOCAL, f"score {score:.0f}")
        if score <= self.low:
            trace.step(f"local stage: score {score:.0f} ≤ {self.low}: stay silent")
            return self._silent(s, r, trace, Stage.LOCAL, f"score {score:.0f}", p)
        trace.step(f"score {score:.0f} is in the unclear band ({self.low}, {self.high})")
        if self.stage is None:
            why = "judge mode rules" if self.mode == "rules" else "no LLM"
            return self._local_answer(s, r, view, trace, p, why)
        return await self._llm_path(s, r, view, trace, p)

    def _local_answer(
        self,
        s: Situation,
        r: LocalResult,
        view: ChannelView,
        trace: DecisionTrace,
        p: Pass,
        why: str,
    ) -> Verdict:
        """The local stage's own answer for the unclear band."""
        trace.step(f"{why}: the local stage decides (speaks from {self.local_speak:.0f})")
        blocked = self.policy.too_soon(s, r, trace)
        if blocked:
            return self._silent(s, r, trace, Stage.LOCAL, blocked, p)
        if r.score >= self.local_speak:
            return self._speak(s, r, view, trace, Stage.LOCAL, f"{why}; score {r.score:.0f}")
        return self._silent(s, r, trace, Stage.LOCAL, f"{why}; score {r.score:.0f}", p)

    # -- the LLM stage ------------------------------------------------------------------------

    async def _llm_path(
        self, s: Situation, r: LocalResult, view: ChannelView, trace: DecisionTrace, p: Pass
    ) -> Verdict:
        stage = self.stage
        assert stage is not None
        trace.features["breaker"] = stage.describe_breaker()
        if not stage.available:
            return self._local_answer(s, r, view, trace, p, "circuit open (LLM failing)")
        blocked = self.policy.too_soon(s, r, trace)
        if blocked:
            return self._silent(s, r, trace, Stage.LLM, blocked, p)
        if not self.budget.take(s.channel.id, s.now):
            trace.features["llm_budget"] = "spent"
            return self._local_answer(s, r, view, trace, p, "LLM budget for this channel spent")
        if r.state is not None and r.state.confidence < STATE_SURE:
            r.state = await stage.state(view.conversation()[-10:], trace)
            trace.features["state_llm"] = r.state.state.value
            if r.state.state is ConvState.ENDING:
                return self._silent(s, r, trace, Stage.LLM, "the conversation is ending", p)
        if not r.engaged and not await self.policy.situation_new(s, view, trace, self.stage):
            return self._silent(s, r, trace, Stage.LLM, "same conversation, nothing changed", p)
        conversation, other = view.split()
        key = view.conversation_id or f"channel:{s.channel.id}"
        newest = conversation[-1].id
        judgment = self.cache.get(s.channel.id, key, newest, s.now)
        if judgment is not None:
            trace.step("LLM judge: cached answer for this conversation (nothing new said)")
            trace.features["judge_cache"] = "hit"
        else:
            trace.features["judge_cache"] = "miss"
            judgment = await stage.judge(s, conversation, other, trace, self._hints(r))
            if judgment is None:
                if not stage.available:
                    return self._local_answer(s, r, view, trace, p, "circuit open (LLM failing)")
                trace.step("LLM judge: no usable answer: fail-safe, stay silent")
                return self._silent(s, r, trace, Stage.LLM, "judge answer unusable", p)
            ttl = self.cache.put(s.channel.id, key, newest, judgment, s.now)
            trace.step(f"LLM judge cached {ttl.total_seconds() / 60:.1f} min")
        return self._from_judgment(s, r, view, trace, judgment, p)

    def _from_judgment(
        self,
        s: Situation,
        r: LocalResult,
        view: ChannelView,
        trace: DecisionTrace,
        j: LLMJudgment,
        p: Pass,
    ) -> Verdict:
        trace.features["llm_judgment"] = {
            "should_respond": j.should_respond,
            "response_type": j.response_type,
            "confidence": round(j.confidence, 2),
            "reason": j.reason,
        }
        reason = f"LLM: {j.reason}" if j.reason else "LLM judge"
        if not j.should_respond or (j.response_type == "none" and not r.question):
            return self._silent(s, r, trace, Stage.LLM, reason, p)
        suggested = j.response_type if j.response_type != "none" else None
        return self._speak(s, r, view, trace, Stage.LLM, reason, suggested=suggested)

    @staticmethod
    def _hints(r: LocalResult) -> str:
        notes = []
        if r.state is not None and r.state.state is not ConvState.ACTIVE:
            notes.append(f"state: {r.state.state.value.upper()}")
        if r.unanswered:
            notes.append("unanswered question")
        if r.engaged:
            notes.append("you are already part of this conversation")
        return ", ".join(notes)

    # -- outcomes -----------------------------------------------------------------------------

    def _addressed(
        self, s: Situation, r: LocalResult, view: ChannelView, trace: DecisionTrace
    ) -> Verdict:
        if r.veto.startswith("loop guard"):
            return Verdict(ActionKind.NONE, Stage.LOCAL, r.score, r.veto)
        n = self.ledger.count(s.channel.id, s.message.user.id, s.now, _TEN_MIN)
        self.ledger.record(s.channel.id, s.message.user.id, s.now)
        if n >= ADDRESSED_LIMIT:
            trace.add("user rate limit", -30, f"{n} replies to {s.message.user.name} in 10 min")
            if not r.conflict:
                emoji = choose_form(
                    r, 0, s.message.text, self.settings.persona, diversity=True, suggested="react"
                ).emoji
                return Verdict(
                    ActionKind.REACT,
                    Stage.ADDRESSED,
                    trace.score,
                    "rate limited: react only",
                    emoji=emoji,
                    conversation_id=view.conversation_id,
                )
        form = choose_form(
            r,
            r.score,
            s.message.text,
            self.settings.persona,
            diversity=self.settings.RESPONSE_DIVERSITY_ENABLED,
        )
        trace.step(f"addressed ({r.addressed}): {form.action.value} — {form.why}")
        return Verdict(
            form.action,
            Stage.ADDRESSED,
            r.score,
            f"addressed by {r.addressed}",
            emoji=form.emoji,
            conversation_id=view.conversation_id,
        )

    def _speak(
        self,
        s: Situation,
        r: LocalResult,
        view: ChannelView,
        trace: DecisionTrace,
        stage: Stage,
        reason: str,
        *,
        suggested: str | None = None,
    ) -> Verdict:
        form = choose_form(
            r,
            r.score,
            s.message.text,
            self.settings.persona,
            diversity=self.settings.RESPONSE_DIVERSITY_ENABLED,
            suggested=suggested,
        )
        trace.step(f"form: {form.action.value} — {form.why}")
        if form.action is ActionKind.NONE:
            return Verdict(ActionKind.NONE, stage, r.score, form.why)
        conversation = view.conversation()
        self.policy.history.record(
            s.channel.id,
            Intervention(
                s.now,
                view.conversation_id,
                s.message.id,
                format_log(conversation[-5:]),
                tuple(m.id for m in conversation),
            ),
        )
        self.ledger.record(s.channel.id, s.message.user.id, s.now)
        return Verdict(
            form.action,
            stage,
            r.score,
            reason,
            emoji=form.emoji,
            conversation_id=view.conversation_id,
        )

    def _silent(
        self,
        s: Situation,
        r: LocalResult,
        trace: DecisionTrace,
        stage: Stage,
        reason: str,
        p: Pass,
    ) -> Verdict:
        recheck: float | None = None
        if p.settled and r.open_question:
            age = (s.now - s.message.ts).total_seconds()
            recheck = max(30.0, RECHECK_S - age)
            trace.step(f"open question: judge again in {recheck:.0f} s if nobody answers")
        return Verdict(ActionKind.NONE, stage, r.score, reason, recheck_s=recheck)


def build_judge(
    settings: Settings,
    llm: LLM | None,
    clock: Clock,
    *,
    embedder: Any | None = None,
    memory: MemoryProvider | None = None,
    dump: PromptDump | None = None,
    builder: ContextBuilder | None = None,
    scaffold: Scaffold | None = None,
) -> HybridJudge:
    """The judge `build_app` wires in: hybrid/llm/rules per `settings.judge_mode`."""
    return HybridJudge(
        settings, clock, llm=llm, embedder=embedder, memory=memory, dump=dump,
        builder=builder, scaffold=scaffold,
    )
