"""The `local` stage: the seat model plus the modesty policy (kuuki.decide.rules) and the
conversation state, 0-100, for talk that does not address the bot; no model call, a few
milliseconds.
"""

from __future__ import annotations

import time
from collections import deque

from kuuki.decide.addressing.context import reading_of
from kuuki.decide.addressing.reading import RoomReader
from kuuki.decide.judge.history import TriggerLedger
from kuuki.decide.judge.state import StateClassifier
from kuuki.decide.rules import RuleScorer
from kuuki.decide.stages.common import view_of
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult
from kuuki.domain import Stage
from kuuki.embed import Embedder
from kuuki.settings import Settings

LATENCIES_KEPT = 500_000  # a benchmark's latencies, at most


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
        # Latency per scored message, kept only once a benchmark asks (`keep_latencies`):
        # a running bot reads them nowhere, and two floats a message for the process's
        # life grew its memory without bound (a deque of length 0 takes no appends).
        self.local_ms: deque[float] = deque(maxlen=0)
        self.local_cpu_ms: deque[float] = deque(maxlen=0)

    def keep_latencies(self, most: int = LATENCIES_KEPT) -> None:
        """From now on keep each scored message's wall and CPU milliseconds (the last
        ``most``), for `kuuki bench judge`."""
        self.local_ms = deque(maxlen=most)
        self.local_cpu_ms = deque(maxlen=most)

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
        r = self.scorer.score(case.situation, view, trace, state, reading, unanswered=unanswered,
                              keywords=case.keywords, readiness=case.readiness)
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
