"""The local stages for talk that does not address the bot: no model, a few milliseconds.

- `Answered`: on a later pass, a message a person has already answered is left to them.
- `RecheckGate`: on a re-check, stop if the bot spoke in the conversation since, or the
  tracker lists no open question to the room there (never claimed as "answered" then).
- `LocalScore`: the seat model plus the modesty policy (kuuki.decide.rules) and the
  conversation state.
- `Debounce`: the first pass waits for a burst to settle (shorter for questions) and asks
  for a re-check of an open question; `silent` adds that re-check to any later silence.
- `Thresholds`: JUDGE_LLM_THRESHOLD_HIGH/LOW: speak, stay silent, or leave it to the
  unclear band (the LLM judge).
"""

from __future__ import annotations

import time
from collections import deque

from kuuki.decide.by_context import reading_of
from kuuki.decide.history import TriggerLedger
from kuuki.decide.reading import RoomReader
from kuuki.decide.rules import RuleScorer
from kuuki.decide.state import StateClassifier
from kuuki.decide.tracking import ChannelView
from kuuki.decide.types import JUDGED_AGAIN, MESSAGE_PASSES, Case, Pass, Speak, StageResult
from kuuki.domain import ActionKind, Stage, Verdict
from kuuki.embed import Embedder
from kuuki.settings import Settings

DEBOUNCE_S = 30.0
QUESTION_DEBOUNCE_S = 12.0
RECHECK_S = 180.0
MIN_RECHECK_S = 30.0


def view_of(case: Case) -> ChannelView:
    if case.view is None:
        case.view = ChannelView(case.situation)
    return case.view


def silent(case: Case, stage: Stage, reason: str) -> StageResult:
    """Stay silent; on a settled pass an open question is judged again at RECHECK_S."""
    r = case.local
    score = r.score if r is not None else 0.0
    recheck: float | None = None
    if case.passing is Pass.SETTLED and r is not None and r.open_question:
        age = (case.situation.now - case.message.ts).total_seconds()
        recheck = max(MIN_RECHECK_S, RECHECK_S - age)
        case.trace.step(f"open question: judge again in {recheck:.0f} s if nobody answers")
        case.trace.features["recheck_s"] = recheck  # kept: a new owner rebuilds the timer
    return StageResult.decide(Verdict(ActionKind.NONE, stage, score, reason, recheck_s=recheck))


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


class RecheckGate:
    name = "recheck"
    passes = frozenset({Pass.RECHECK})

    async def run(self, case: Case) -> StageResult:
        if not case.ambient:
            return StageResult.passing()
        s = case.situation
        msg = s.message
        view = view_of(case)
        bot_ids = s.bot.user_ids if s.bot else frozenset()
        cid = view.conversation_id
        for m in s.recent:
            if (
                m.user.id in bot_ids
                and m.ts >= msg.ts
                and (m.reply_to == msg.id or cid is None or view.conversation_of(m.id) == cid)
            ):
                case.trace.step("recheck: the bot has spoken in this conversation since")
                return StageResult.silent(Stage.LOCAL, 0, "already answered by the bot")
        age = (s.now - msg.ts).total_seconds()
        open_ = view.unanswered(s.now, min(age, RECHECK_S) - 1, bot_ids)
        case.trace.features["unanswered"] = open_
        if open_ is False:
            # Not "answered by someone else": the answered stage found nobody's answer. The
            # tracker no longer counts it as a question to the room (said to someone, or
            # its model placed a later line as the answer).
            case.trace.step("recheck: the tracker lists no open question to the room here")
            return StageResult.silent(Stage.LOCAL, 0, "no open question to the room",
                                      unanswered=False)
        return StageResult.passing(unanswered=open_)


class LocalScore:
    name = "local score"
    passes = MESSAGE_PASSES

    def __init__(
        self, settings: Settings, ledger: TriggerLedger, embedder: Embedder | None,
        reader: RoomReader,
    ) -> None:
        self.mode = settings.judge_mode
        self.reader = reader
        self.scorer = RuleScorer(settings, ledger)
        self.classifier = StateClassifier(embedder)
        # Latency per scored message, for `kuuki bench judge`.
        self.local_ms: deque[float] = deque(maxlen=500_000)
        self.local_cpu_ms: deque[float] = deque(maxlen=500_000)

    async def run(self, case: Case) -> StageResult:
        start = (time.perf_counter(), time.thread_time())
        trace = case.trace
        if case.passing is Pass.SETTLED and trace.contributions:
            # The first pass's trace comes back: score afresh, keep a summary.
            trace.step(f"first pass scored {trace.score:.0f}; scoring again now it settled")
            trace.contributions.clear()
        trace.features["judge_mode"] = self.mode
        view = view_of(case)
        unanswered = True if case.passing is Pass.RECHECK and case.ambient else None
        state = self.classifier.classify(view.conversation())
        earlier = case.reading is not None  # read in the addressee stage, timed there
        reading = reading_of(case, self.reader)
        r = self.scorer.score(case.situation, view, trace, state, reading, unanswered=unanswered)
        case.local = r
        # The models' reading is part of the local stage (it ran in the addressee stage,
        # before the gates that need it). CPU time too: on a busy machine wall time also
        # measures the other processes.
        before = (reading.ms, reading.cpu_ms) if earlier else (0.0, 0.0)
        ms = (time.perf_counter() - start[0]) * 1000 + before[0]
        self.local_ms.append(ms)
        self.local_cpu_ms.append((time.thread_time() - start[1]) * 1000 + before[1])
        trace.features["local_ms"] = round(ms, 3)
        trace.features["local_score"] = round(r.score, 1)
        if case.ambient and r.veto:
            trace.step(f"local stage: {r.veto}")
            return StageResult.silent(Stage.LOCAL, r.score, r.veto, veto=r.veto)
        return StageResult.passing(
            score=round(r.score, 1), question=r.question, open_question=r.open_question,
            seat=round(r.seat_p, 3), engaged=r.engaged,
            state=r.state.state.value if r.state is not None else None,
        )


class Debounce:
    name = "debounce"
    passes = frozenset({Pass.FIRST})

    def __init__(self, settings: Settings) -> None:
        self.low = settings.JUDGE_LLM_THRESHOLD_LOW
        self.mode = settings.judge_mode

    async def run(self, case: Case) -> StageResult:
        r = case.local
        if not case.ambient or r is None:
            return StageResult.passing()
        if r.score <= self.low and not r.open_question and self.mode != "llm":
            case.trace.step(f"local stage: score {r.score:.0f} ≤ {self.low}, nothing to wait for")
            return StageResult.silent(Stage.LOCAL, r.score, "score below the low threshold")
        defer = QUESTION_DEBOUNCE_S if r.question else DEBOUNCE_S
        recheck = RECHECK_S if r.open_question else None
        verdict = Verdict(
            ActionKind.NONE, Stage.LOCAL, r.score, "waiting for the burst to settle",
            defer_s=defer, recheck_s=recheck,
        )
        return StageResult.decide(verdict, defer_s=defer, recheck_s=recheck)


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
