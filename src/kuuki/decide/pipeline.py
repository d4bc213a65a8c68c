"""The decision as one ordered list of stages, built once at start-up.

`build_pipeline` composes the list (see docs/architecture.md for one line per stage):

    own → filter → sent twice → quiet request → quiet → channel policy → addressee → ping burst
    → answered → recheck → local score → rate limit → addressed → debounce → thresholds
    → intervention policy → llm judge → proactive → form

`Pipeline.decide(case)` runs the stages whose ``passes`` include the case's pass, in order,
until one decides or defers; every result is stored in the trace (`DecisionTrace.stages`).
`Pipeline.sent(case, decision)` tells the stages that keep history (the intervention
policy, the rate limit, ping bursts) about a decision whose send succeeded. The engine runs
the list and knows none of the rules.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from kuuki.decide.addressing.names import AddressDetector
from kuuki.decide.addressing.reading import RoomReader
from kuuki.decide.area import Area
from kuuki.decide.judge.base import Judge
from kuuki.decide.judge.history import TriggerLedger
from kuuki.decide.judge.llm_stage import LLMStage
from kuuki.decide.situation import Addressing, Situation
from kuuki.decide.stages.addressed import Addressed
from kuuki.decide.stages.addressee import AddresseeStage
from kuuki.decide.stages.answered import Answered
from kuuki.decide.stages.channel_policy import ChannelManners, PolicyOf
from kuuki.decide.stages.debounce import Debounce
from kuuki.decide.stages.filter import Filter
from kuuki.decide.stages.form import Form
from kuuki.decide.stages.judge import JudgeStage
from kuuki.decide.stages.llm_judge import LLMJudge
from kuuki.decide.stages.local_score import LocalScore
from kuuki.decide.stages.own_message import OwnMessage
from kuuki.decide.stages.ping_burst import PingBurst
from kuuki.decide.stages.policy import Policy
from kuuki.decide.stages.proactive import Proactive
from kuuki.decide.stages.quiet import Quiet
from kuuki.decide.stages.quiet_request import QuietRequest
from kuuki.decide.stages.rate_limit import RateLimit
from kuuki.decide.stages.recheck import RecheckGate
from kuuki.decide.stages.sent_twice import SentTwice
from kuuki.decide.stages.thresholds import Thresholds
from kuuki.decide.types import Case, DecideStage, Outcome, Pass, StageResult, record
from kuuki.domain import ActionKind, Decision, DecisionTrace, Message, Stage, Verdict
from kuuki.settings import Settings
from kuuki.settings.policy import PolicyBook

log = logging.getLogger("kuuki.decide")


class Pipeline:
    def __init__(self, stages: Sequence[DecideStage], detector: AddressDetector) -> None:
        self.stages = list(stages)
        self.detector = detector
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must be unique: {names}")
        # The stages each pass runs, in order: the list is fixed once built, and a stage's
        # ``passes`` is its class's (looking them up per message and stage showed up in
        # the ingest profile).
        self._by_pass = {p: tuple(s for s in self.stages if p in s.passes) for p in Pass}
        self._after_send: list[tuple[str, Any]] = [
            (s.name, hook) for s in self.stages if (hook := getattr(s, "sent", None)) is not None
        ]

    def address(
        self,
        msg: Message,
        *,
        bot_user_ids: Iterable[str],
        bot_message_ids: Iterable[str] = (),
        dm: bool = False,
        recent: Sequence[Message] = (),
    ) -> Addressing:
        """How ``msg`` addresses the bot (the pipeline's `AddressDetector`)."""
        return self.detector.detect(msg, bot_user_ids=bot_user_ids,
                                    bot_message_ids=bot_message_ids, dm=dm, recent=recent)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def describe(self) -> str:
        """A short name for status lines: the judge passed in, or the stage count."""
        custom = next((s for s in self.stages if isinstance(s, JudgeStage)), None)
        if custom is not None:
            return type(custom.judge).__name__
        return f"pipeline of {len(self.stages)} stages"

    def stage(self, name: str) -> Any:
        return next(s for s in self.stages if s.name == name)

    async def decide(self, case: Case) -> Verdict:
        """Run the list for ``case``; never raises (a failure is traced, then silence)."""
        trace = case.trace
        trace.features["pass"] = str(case.passing)
        records = trace.stages
        for stage in self._by_pass[case.passing]:
            try:
                result = await stage.run(case)
            except Exception as exc:
                trace.error(f"stage {stage.name} failed: {type(exc).__name__}: {exc}")
                records.append(record(stage.name, StageResult.silent(
                    Stage.ERROR, 0, "stage failed: stay silent")))
                return Verdict(ActionKind.NONE, Stage.ERROR, 0, f"{stage.name} failed: stay silent")
            records.append(record(stage.name, result))
            if result.outcome is not Outcome.PASS and result.verdict is not None:
                return result.verdict
        score = case.local.score if case.local is not None else 0.0
        return Verdict(ActionKind.NONE, Stage.LOCAL, score, "no stage decided")

    def sent(self, case: Case, decision: Decision) -> None:
        """``decision`` was carried out (its send succeeded, or it was silence)."""
        for name, hook in self._after_send:
            try:
                hook(case, decision)
            except Exception:
                log.exception("stage %s failed after the send", name)

    # -- the Judge port, for code that judges one situation (tests, the playground) ---------

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        return await self.decide(Case(situation, Pass.of(situation.extra), trace))

    def keep_latencies(self) -> None:
        """Keep the local stage's latency per scored message (`local_ms`, `local_cpu_ms`):
        off unless a benchmark asks."""
        scorer: LocalScore = self.stage("local score")
        scorer.keep_latencies()

    @property
    def local_ms(self) -> deque[float]:
        scorer: LocalScore = self.stage("local score")
        return scorer.local_ms

    @property
    def local_cpu_ms(self) -> deque[float]:
        scorer: LocalScore = self.stage("local score")
        return scorer.local_cpu_ms


def build_pipeline(
    settings: Settings,
    *,
    llm_stage: LLMStage | None = None,
    embedder: Any | None = None,
    judge: Judge | None = None,
    policy_of: PolicyOf | None = None,
) -> Pipeline:
    """The list `build_app` wires in. With ``judge``, that judge replaces every stage after
    the gates (tests, plugins); otherwise the stages of hybrid/llm/rules judging.
    ``policy_of``: each channel's policy (the app's `PolicyBook`, with `/kuuki mode`'s
    changes); None reads the file's tables alone."""
    detector = AddressDetector(settings.persona.names)
    persona = settings.persona
    asked = QuietRequest(detector, persona.names, persona.emoji)
    if policy_of is None:  # the file's policies alone (no `/kuuki mode` changes)
        policy_of = PolicyBook(settings.channel_policy).of
    gates: list[DecideStage] = [
        OwnMessage(), Filter(settings), SentTwice(), asked, Quiet(), ChannelManners(policy_of),
    ]
    stage = llm_stage if settings.judge_mode != "rules" else None
    policy = Policy(settings, with_llm=stage is not None)
    if judge is not None:
        # The judge decides every message; proactive talk still meets the policy.
        return Pipeline([*gates, JudgeStage(judge), policy, Proactive()], detector)
    ledger = TriggerLedger()
    reader = RoomReader(settings.persona.names)
    area = Area(tuple(settings.persona.keywords))
    stages: list[DecideStage] = [
        *gates,
        AddresseeStage(reader),
        PingBurst(),
        Answered(area),
        RecheckGate(area),
        LocalScore(settings, ledger, embedder, reader),
        RateLimit(settings, ledger),
        Addressed(settings),
        Debounce(settings),
        Thresholds(settings, llm_mode=settings.judge_mode == "llm" and stage is not None),
        policy,
        LLMJudge(settings, stage, policy),
        Proactive(),
        Form(settings),
    ]
    return Pipeline(stages, detector)
