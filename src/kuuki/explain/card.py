"""A decision as the playground's card shows it, and as the operator dashboard shows a
stored one: one builder for both, so the two pages never explain a decision differently.

`decision_card` words a live `Decision`; `decision_of` rebuilds one from the store's
record (`kuuki.store.records.row_to_decision`: the decision's columns and its trace as a
dict), so a stored decision gets the very same card. Only "the channel right after" needs
the live engine (kuuki.explain.lines.state_lines); the caller passes those lines, or none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from kuuki.domain import (
    Action,
    ActionKind,
    Contribution,
    Decision,
    DecisionTrace,
    GuardRecord,
    LLMCallRecord,
    Stage,
    StageRecord,
    ToolCallRecord,
)
from kuuki.explain.lines import clock_time, explain, feature_lines
from kuuki.explain.models import card_parts


def decision_card(
    d: Decision, bot_names: Collection[str], *, state: Sequence[str] = ()
) -> dict[str, Any]:
    """The card: headline first, every part in sentences (kuuki.explain.lines)."""
    e = explain(d)
    features = d.trace.features
    language = features.get("language")
    models, unreadable = card_parts(features, bot_names)
    return {
        "headline": e.headline,
        "reason": d.reason,  # the deciding stage's own words, for the raw view
        "fallback": e.fallback,
        "time": clock_time(d.decided_at),
        "at": d.decided_at.isoformat(),
        "language": language if isinstance(language, str) else None,
        "rules": e.rules,
        # The learned models get bars of their own; the list is the rest.
        **models,
        "features": unreadable + feature_lines(features, d.decided_at),
        "state": list(state),
        "calls": e.calls,
        "tools": e.tools,
        "guard": e.guard,
        "steps": e.steps,
        "errors": e.errors,
    }


def decision_of(record: Mapping[str, Any]) -> Decision:
    """A stored decision (the store's dict) as the `Decision` it was."""
    trace = trace_of(record["trace"] or {}, record)
    action = Action(
        ActionKind(record["action"]), record["channel_id"], record["message_id"],
        text=record.get("action_text"), emoji=record.get("emoji"),
        thread=record.get("thread"), reply_to=record.get("reply_to"),
    )
    return Decision(
        record["message_id"], record["channel_id"], action, Stage(record["stage"]),
        float(record["score"]), str(record["reason"]), record["decided_at"], trace,
    )


def trace_of(raw: Mapping[str, Any], record: Mapping[str, Any]) -> DecisionTrace:
    """`DecisionTrace.to_dict` read back."""
    started = raw.get("started_at")
    return DecisionTrace(
        str(raw.get("message_id", record["message_id"])),
        str(raw.get("channel_id", record["channel_id"])),
        datetime.fromisoformat(started) if isinstance(started, str) else record["decided_at"],
        steps=list(raw.get("steps", [])),
        contributions=[Contribution(c["rule"], c["points"], c.get("detail", ""))
                       for c in raw.get("contributions", [])],
        features=dict(raw.get("features", {})),
        llm_calls=[_call(c) for c in raw.get("llm_calls", [])],
        errors=list(raw.get("errors", [])),
        guard=[GuardRecord(g["subject"], g["ok"], g.get("check", ""), g.get("reason", ""),
                           g.get("text", ""), tuple(g.get("repairs", ())))
               for g in raw.get("guard", [])],
        tool_calls=[ToolCallRecord(t["name"], t["arguments"], t["duration_ms"],
                                   t["result_chars"], t["outcome"], t.get("detail", ""),
                                   t.get("round", 1))
                    for t in raw.get("tool_calls", [])],
        stages=[StageRecord(s["name"], s["outcome"], s.get("action"), s.get("reason", ""),
                            dict(s.get("facts", {})))
                for s in raw.get("stages", [])],
    )


def _call(c: Mapping[str, Any]) -> LLMCallRecord:
    return LLMCallRecord(
        c["purpose"], c["model"], c["prompt_tokens"], c["completion_tokens"], c["latency_ms"],
        c["outcome"], c.get("detail", ""), prompt=c.get("prompt"),
    )
