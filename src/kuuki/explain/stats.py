"""What a running bot did over a window, from the store alone (`kuuki stats`, and the
operator dashboard's charts): plain dataclasses, no formatting, no output.

Where each figure comes from (docs/decisions.md, "Issue 27: kuuki stats"):

- messages: the stored messages whose time is in the window, the bot's own included;
- the bot's replies / acks / reactions: decisions in the window with that action whose
  send did not fail (a failed send leaves "send failed" in the trace's errors); replies and
  acks are the bot's messages, and ``share`` is their part of the channel's messages;
- asked / unasked: the trace's ``features["addressed"]`` (mention, reply, name, dm, thread,
  context) for each of those actions; none is unasked;
- LLM calls and tokens per model: the calls the decisions' traces record (outcome other
  than "skipped"); background memory work (summaries, reflection) keeps no trace and is
  not counted;
- latency: how long a person who addressed the bot waited for its answer: a reply's or
  ack's ``decided_at`` (taken after the send returned) minus the message's time, at least 0
  (the message's time is the platform's clock), for the decisions whose trace says the
  message was addressed (``features["addressed"]``) and that were not held on purpose;
  p50/p95 by nearest rank;
- waited: the replies and acks the bot gave after a deliberate wait — an unasked one (it
  waits 12–30 s for a burst to settle, 3 minutes before it takes up an open question), or
  an answer held on purpose (a burst of pings, the trace's ``pass`` "settled" or
  "recheck"): the same measure, kept apart so that a wait by design never reads as an
  outage; proactive talk answers no message and is in neither;
- guard rejections: the trace's guard verdicts that were not ok; fallbacks: decisions whose
  reason ends in the responder's fallback (": reacted …", ": stayed silent");
- silences: decisions that did nothing and whose reason says "budget" or "quiet".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from kuuki.explain.window import DataSpan, bucket_of

SPEECH = ("reply", "ack")
HELD = ("settled", "recheck")  # the passes that answer after a wait by design
ACTIONS = ("reply", "ack", "react")
DM = "dm"


@dataclass(frozen=True, slots=True)
class Latency:
    """Milliseconds from a message to the bot's answer over ``count`` replies and acks
    (None: no reply)."""

    count: int
    p50_ms: float | None
    p95_ms: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Latency:
        ordered = sorted(values)
        return cls(len(ordered), percentile(ordered, 50), percentile(ordered, 95))


def percentile(ordered: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile of sorted ``ordered`` (None when empty)."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(slots=True)
class ChannelStats:
    """One channel's figures over the window (or a sum of channels: the DMs, the total)."""

    channel_id: str
    name: str
    visibility: str
    messages: int = 0
    replies: int = 0
    acks: int = 0
    reactions: int = 0
    asked: dict[str, int] = field(default_factory=dict)  # addressing kind → bot actions
    unasked: int = 0
    llm_calls: int = 0
    tokens: int = 0
    guard_rejections: int = 0
    fallbacks: int = 0
    silent_budget: int = 0
    silent_quiet: int = 0
    channels: int = 1  # how many channels this sums
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    waited_ms: list[float] = field(default_factory=list, repr=False)
    # Listen-only (shadow) decisions: what the bot would have done, nothing sent.
    would_replies: int = 0
    would_acks: int = 0
    would_reactions: int = 0

    @property
    def would(self) -> int:
        return self.would_replies + self.would_acks + self.would_reactions

    @property
    def bot_messages(self) -> int:
        return self.replies + self.acks

    @property
    def share(self) -> float | None:
        """The bot's messages as a part of all the channel's messages (None: none)."""
        return self.bot_messages / self.messages if self.messages else None

    @property
    def asked_total(self) -> int:
        return sum(self.asked.values())

    @property
    def latency(self) -> Latency:
        """Answers to people who addressed the bot (module doc)."""
        return Latency.of(self.latencies_ms)

    @property
    def waited(self) -> Latency:
        """Replies and acks after a deliberate wait (module doc)."""
        return Latency.of(self.waited_ms)

    def add(self, other: ChannelStats) -> None:
        for name in ("messages", "replies", "acks", "reactions", "unasked", "llm_calls",
                     "tokens", "guard_rejections", "fallbacks", "silent_budget",
                     "silent_quiet", "channels", "would_replies", "would_acks",
                     "would_reactions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, n in other.asked.items():
            self.asked[kind] = self.asked.get(kind, 0) + n
        self.latencies_ms.extend(other.latencies_ms)
        self.waited_ms.extend(other.waited_ms)


@dataclass(slots=True)
class ModelStats:
    """A model's calls over the window; ``cost`` only where a price is configured."""

    model: str
    calls: int = 0
    errors: int = 0  # calls whose outcome was not "ok"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class ChannelDay:
    at: datetime  # the start of the bucket: a UTC day, or an hour (`Stats.hourly`)
    channel_id: str  # "dm" for every DM together
    messages: int
    bot_messages: int
    reactions: int

    @property
    def day(self) -> date:
        return self.at.date()


@dataclass(frozen=True, slots=True)
class ModelDay:
    at: datetime
    model: str
    calls: int
    tokens: int

    @property
    def day(self) -> date:
        return self.at.date()


@dataclass(frozen=True, slots=True)
class LatencyDay:
    at: datetime
    latency: Latency

    @property
    def day(self) -> date:
        return self.at.date()


@dataclass(frozen=True, slots=True)
class Stats:
    """Everything `kuuki stats` reports, and the series for charts: per UTC day, or per
    hour when ``hourly``. ``data`` is when the store's first and last messages (of the
    channel asked for) were written, whatever the window (None: none)."""

    since: datetime
    until: datetime
    channels: list[ChannelStats]  # named channels (public, private), busiest first
    dms: ChannelStats  # every DM together: a count, never a name
    total: ChannelStats
    models: list[ModelStats]
    channel_days: list[ChannelDay]
    model_days: list[ModelDay]
    latency_days: list[LatencyDay]
    hourly: bool = False
    data: DataSpan | None = None

    @property
    def empty(self) -> bool:
        """Nothing was recorded in the window."""
        return not self.total.messages and not self.total.channels

    @property
    def cost(self) -> float | None:
        costs = [m.cost for m in self.models if m.cost is not None]
        return sum(costs) if costs else None


@dataclass(frozen=True, slots=True)
class DecisionFacts:
    """What one stored decision contributes (kuuki.explain.stats_read reads them)."""

    channel_id: str
    action: str
    stage: str
    reason: str
    decided_at: datetime
    trace: Mapping[str, Any] | None  # only read for decisions that acted or called a model
    message_ts: datetime | None = None  # the message's time, for a reply's latency


def price_of(prices: Mapping[str, float], model: str) -> float | None:
    """The configured price per 1,000 tokens of ``model`` ("*": any model)."""
    return prices.get(model, prices.get("*"))


def shadowed(d: DecisionFacts) -> bool:
    """Decided while listening only: what the bot would have done, nothing was sent."""
    return bool(((d.trace or {}).get("features") or {}).get("shadow"))


def delivered(d: DecisionFacts) -> bool:
    if shadowed(d):
        return False
    errors = (d.trace or {}).get("errors") or ()
    return d.action in ACTIONS and not any(str(e).startswith("send failed") for e in errors)


def answered_right_away(trace: Mapping[str, Any]) -> bool:
    """An answer to a person who addressed the bot, not held on purpose (module doc)."""
    features = trace.get("features") or {}
    return bool(features.get("addressed")) and features.get("pass") not in HELD


def is_fallback(reason: str) -> bool:
    tail = reason.rpartition(" → ")[2] if " → " in reason else ""
    return tail.endswith(": stayed silent") or ": reacted " in tail


class Folder:
    """Folds stored messages and decisions into `Stats`."""

    def __init__(self, channels: Mapping[str, tuple[str, str]], prices: Mapping[str, float],
                 *, hourly: bool = False):
        self.names = channels  # id → (name, visibility)
        self.prices = prices
        self.hourly = hourly
        self.per: dict[str, ChannelStats] = {}
        self.models: dict[str, ModelStats] = {}
        self.days: dict[tuple[datetime, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        self.model_days: dict[tuple[datetime, str], list[int]] = defaultdict(lambda: [0, 0])
        self.latency_days: dict[datetime, list[float]] = defaultdict(list)

    def channel(self, channel_id: str) -> ChannelStats:
        stats = self.per.get(channel_id)
        if stats is None:
            name, visibility = self.names.get(channel_id, (channel_id, "public"))
            stats = self.per[channel_id] = ChannelStats(channel_id, name, visibility)
        return stats

    def _day_key(self, at: datetime, channel_id: str) -> tuple[datetime, str]:
        dm = self.channel(channel_id).visibility == DM
        return bucket_of(at, self.hourly), DM if dm else channel_id

    def message_days(self, rows: Iterable[tuple[str, datetime, int]]) -> None:
        """Messages counted per (channel, bucket: the start of its UTC day or hour)."""
        for channel_id, at, n in rows:
            self.channel(channel_id).messages += n
            self.days[self._day_key(at, channel_id)][0] += n

    def decisions(self, rows: Iterable[DecisionFacts]) -> None:
        for d in rows:
            stats = self.channel(d.channel_id)
            trace = d.trace or {}
            if delivered(d):
                self._action(stats, d, trace)
            elif d.action in ACTIONS and shadowed(d):
                name = {"reply": "would_replies", "ack": "would_acks"}.get(d.action,
                                                                           "would_reactions")
                setattr(stats, name, getattr(stats, name) + 1)
            if d.action == "none" and ("budget" in d.reason or "quiet" in d.reason):
                if "budget" in d.reason:
                    stats.silent_budget += 1
                else:
                    stats.silent_quiet += 1
            if is_fallback(d.reason):
                stats.fallbacks += 1
            stats.guard_rejections += sum(1 for g in trace.get("guard", ()) if not g.get("ok"))
            for call in trace.get("llm_calls", ()):
                self._call(stats, d.decided_at, call)

    def _action(self, stats: ChannelStats, d: DecisionFacts, trace: Mapping[str, Any]) -> None:
        day = self.days[self._day_key(d.decided_at, d.channel_id)]
        if d.action == "react":
            stats.reactions += 1
            day[2] += 1
        else:
            stats.replies += d.action == "reply"
            stats.acks += d.action == "ack"
            day[1] += 1
            if d.message_ts is not None and d.stage != "proactive":
                # A platform's clock a little ahead of ours is no negative wait.
                ms = max(0.0, (d.decided_at - d.message_ts).total_seconds() * 1000)
                if answered_right_away(trace):
                    stats.latencies_ms.append(ms)
                    self.latency_days[bucket_of(d.decided_at, self.hourly)].append(ms)
                else:
                    stats.waited_ms.append(ms)
        kind = (trace.get("features") or {}).get("addressed")
        if kind:
            stats.asked[str(kind)] = stats.asked.get(str(kind), 0) + 1
        else:
            stats.unasked += 1

    def _call(self, stats: ChannelStats, at: datetime, call: Mapping[str, Any]) -> None:
        if call.get("outcome") == "skipped":
            return
        model = str(call.get("model") or "?")
        m = self.models.get(model)
        if m is None:
            m = self.models[model] = ModelStats(model)
        tokens = int(call.get("prompt_tokens") or 0) + int(call.get("completion_tokens") or 0)
        m.calls += 1
        m.errors += call.get("outcome") != "ok"
        m.prompt_tokens += int(call.get("prompt_tokens") or 0)
        m.completion_tokens += int(call.get("completion_tokens") or 0)
        stats.llm_calls += 1
        stats.tokens += tokens
        day = self.model_days[(bucket_of(at, self.hourly), model)]
        day[0] += 1
        day[1] += tokens

    def result(self, since: datetime, until: datetime, data: DataSpan | None = None) -> Stats:
        named = [s for s in self.per.values() if s.visibility != DM]
        named.sort(key=lambda s: (-s.messages, s.name, s.channel_id))
        dms = ChannelStats(DM, "direct messages", DM, channels=0)
        total = ChannelStats("*", "all channels", "", channels=0)
        for s in self.per.values():
            if s.visibility == DM:
                dms.add(s)
            total.add(s)
        for m in self.models.values():
            price = price_of(self.prices, m.model)
            m.cost = None if price is None else m.tokens / 1000 * price
        return Stats(
            since=since, until=until, channels=named, dms=dms, total=total,
            models=sorted(self.models.values(), key=lambda m: (-m.calls, m.model)),
            channel_days=[ChannelDay(day, ch, *v) for (day, ch), v in sorted(self.days.items())],
            model_days=[ModelDay(day, m, *v) for (day, m), v in sorted(self.model_days.items())],
            latency_days=[LatencyDay(day, Latency.of(v))
                          for day, v in sorted(self.latency_days.items())],
            hourly=self.hourly, data=data,
        )
