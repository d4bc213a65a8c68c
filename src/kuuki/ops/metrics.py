"""Prometheus metrics of a running bot, on a registry of the app's own.

Two kinds, for two costs:

- **Counted from decisions.** `Metrics.observe` is an engine decision listener
  (`Engine.on_decision`): each finished `Decision` carries its trace, and the trace already
  says what happened (the stage and action, every LLM call with its model, purpose and
  tokens, every guard verdict). Nothing is added to the message path but this one call per
  decision, after the send.
- **Read at scrape time.** Queue depth, intake lag, the breakers' states and the live
  channels are the engine's and the model doors' own state, read by a custom collector
  (`EngineCollector`) only when Prometheus asks: no cost per message.

Labels are channel-free by default (``action``, ``stage``, ``model``, ``purpose``, ``outcome``,
``verdict``): bounded sets. ``per_channel`` adds a ``channel`` label to the decision
counter only, since a time series per channel and action is the cardinality trap the
Prometheus documentation warns about (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from kuuki.domain import ActionKind, Decision, Stage
from kuuki.llm.breaker import BreakerState

__all__ = ["EngineCollector", "Metrics"]

# From a quick answer to a reply written by a slow local model on a CPU.
REPLY_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
_SPOKEN = (ActionKind.REPLY, ActionKind.ACK)


class Metrics:
    """The counters and histograms of one app, on their own `CollectorRegistry` (never the
    process's global one: tests and several apps in one process do not clash)."""

    def __init__(self, *, per_channel: bool = False) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.per_channel = per_channel
        r = self.registry
        labels = ("action", "stage", "channel") if per_channel else ("action", "stage")
        self.decisions = Counter(
            "kuuki_decisions", "Decisions about a message or proactive talk, by the action "
            "carried out and the stage that settled it", labels, registry=r)
        self.llm_calls = Counter(
            "kuuki_llm_calls", "LLM calls that reached the model (not those the breaker "
            "skipped), by model and purpose", ("model", "purpose"), registry=r)
        self.llm_tokens = Counter(
            "kuuki_llm_tokens", "Tokens of the LLM calls, by model, purpose and kind "
            "(prompt or completion)", ("model", "purpose", "kind"), registry=r)
        self.llm_errors = Counter(
            "kuuki_llm_errors", "LLM calls without a usable answer, by model, purpose and "
            "outcome (timeout, invalid, unavailable, interrupted, error, skipped: the "
            "breaker was open)", ("model", "purpose", "outcome"), registry=r)
        self.reply_latency = Histogram(
            "kuuki_reply_latency_seconds", "From a message's time to the bot's reply or "
            "acknowledgement to it sent", buckets=REPLY_BUCKETS, registry=r)
        self.guard = Counter(
            "kuuki_guard_verdicts", "The output guard on what a model wrote for a decision "
            "(ok, rejected), and replies given up for their fallback (fallback)",
            ("verdict",), registry=r)

    def observe(self, decision: Decision) -> None:
        """Count one finished decision (an `Engine.on_decision` listener)."""
        trace = decision.trace
        labels = [decision.action.kind.value, decision.stage.value]
        if self.per_channel:
            labels.append(decision.channel_id)
        self.decisions.labels(*labels).inc()
        for call in trace.llm_calls:
            if call.outcome != "skipped":
                self.llm_calls.labels(call.model, call.purpose).inc()
            if call.outcome != "ok":
                self.llm_errors.labels(call.model, call.purpose, call.outcome).inc()
            if call.prompt_tokens:
                self.llm_tokens.labels(call.model, call.purpose, "prompt").inc(
                    call.prompt_tokens)
            if call.completion_tokens:
                self.llm_tokens.labels(call.model, call.purpose, "completion").inc(
                    call.completion_tokens)
        for verdict in trace.guard:
            self.guard.labels("ok" if verdict.ok else "rejected").inc()
        if decision.decided in _SPOKEN:  # meant to speak, did something else instead
            self.guard.labels("fallback").inc()
        self._latency(decision)

    def _latency(self, decision: Decision) -> None:
        if (
            decision.action.kind not in _SPOKEN
            or decision.stage is Stage.PROACTIVE  # nobody's message waited for it
            or decision.message_at is None
            or any(e.startswith("send failed") for e in decision.trace.errors)
        ):
            return
        waited = (decision.decided_at - decision.message_at).total_seconds()
        self.reply_latency.observe(max(0.0, waited))

    def watch(self, engine: EngineState, models: Sequence[ModelDoor] = ()) -> None:
        """Read ``engine``'s queues and ``models``' breakers whenever metrics are scraped."""
        self.registry.register(EngineCollector(engine, models))

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The registry as `/metrics` serves it, and its content type: the format the
        scraper's ``Accept`` header asks for (OpenMetrics for Prometheus when it prefers
        it), else Prometheus's text format 0.0.4."""
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type


# -- read at scrape time --------------------------------------------------------------------


class _Intake(Protocol):
    @property
    def waiting(self) -> int: ...
    def lag(self) -> float: ...


class _Backlog(Protocol):
    inflight: int


class EngineState(Protocol):
    """What the collector reads of the engine (kuuki.engine.core.Engine)."""

    @property
    def intake(self) -> _Intake: ...
    @property
    def backlog(self) -> _Backlog: ...
    def live_channels(self) -> int: ...


class _Breaker(Protocol):
    @property
    def state(self) -> BreakerState: ...


class ModelDoor(Protocol):
    """What the collector reads of a model's door (kuuki.llm.scheduler.ScheduledLLM)."""

    name: str

    @property
    def breaker(self) -> _Breaker | None: ...
    @property
    def waiting(self) -> int: ...


class EngineCollector(Collector):
    """Gauges read from the engine and the model doors when Prometheus scrapes."""

    def __init__(self, engine: EngineState, models: Sequence[ModelDoor]) -> None:
        self.engine = engine
        self.models = list(models)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # families are known only once collected: nothing to check early

    def collect(self) -> Iterator[Metric]:
        e = self.engine
        depth = GaugeMetricFamily(
            "kuuki_queue_depth", "Events waiting: for the store's commit (intake) or handed "
            "to the channels' queues and not yet handled (channels)", labels=["queue"])
        depth.add_metric(["intake"], e.intake.waiting)
        depth.add_metric(["channels"], e.backlog.inflight)
        yield depth
        yield GaugeMetricFamily(
            "kuuki_intake_lag_seconds", "How long the oldest event not yet committed to the "
            "store has waited", value=e.intake.lag())
        yield GaugeMetricFamily(
            "kuuki_live_channels", "Channels held in memory", value=e.live_channels())
        breaker = GaugeMetricFamily(
            "kuuki_llm_breaker_state", "Each model's circuit breaker: 1 for its current state "
            "(closed, open, half_open), 0 for the others", labels=["model", "state"])
        waiting = GaugeMetricFamily(
            "kuuki_llm_waiting", "Calls waiting at each model's door", labels=["model"])
        for model in self.models:
            waiting.add_metric([model.name], model.waiting)
            b = model.breaker
            if b is None:
                continue
            current = b.state
            for state in BreakerState:
                breaker.add_metric([model.name, state.value], 1.0 if state is current else 0.0)
        yield breaker
        yield waiting
