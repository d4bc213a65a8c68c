"""A decision, told for people: lines of text, not JSON.

The local front ends (the playground's decision cards, the terminal room's `/why`) show
why the bot did what it did. A `DecisionTrace` is built for machines — nested features,
milliseconds, ISO times — and this module turns it into short sentences: "language:
English", "reply · SmolLM2-135M-Instruct · 1.8 s · 212+34 tokens", "reply rejected by
the self check: addresses itself (“くう”)", "waiting 12 s for the burst to settle". The raw
trace stays available to developers beside it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from kuuki.domain import ActionKind, Decision, GuardRecord, LLMCallRecord, ToolCallRecord
from kuuki.engine.channels import ChannelState
from kuuki.explain import models
from kuuki.explain.headline import headline

LANGUAGES = {"en": "English", "ja": "Japanese"}
GENERATION = ("reply", "ack", "proactive")  # call purposes whose text would be posted
_OUTCOME = {
    "timeout": "timed out",
    "unavailable": "model unavailable",
    "skipped": "skipped (model paused after failures)",
    "invalid": "unusable answer",
    "error": "failed",
}
_ADDRESSED = {"mention": "by an @mention", "reply": "by a reply to its message",
              "name": "by name", "dm": "in a direct message", "thread": "in its thread",
              "context": "by context (the addressee model)"}
_PASS = {"first": "judged as it arrived", "settled": "judged once the burst had settled",
         "recheck": "judged again: the question was still open",
         "caught_up": "judged after reconnecting (missed while away)",
         "proactive": "proactive talk: nobody asked"}
_JUDGE_MODE = {"rules": "rules only, no LLM judge", "llm": "every unclear message to the LLM",
               "hybrid": "rules, the LLM judge in the unclear band",
               "auto": "rules, the LLM judge in the unclear band when a model can judge"}
_ISO = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


# -- words and times ---------------------------------------------------------------------


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 message', '2 messages' (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def clock_time(at: datetime) -> str:
    """'10:42:05', in this machine's time zone (the page's, for a local playground)."""
    return at.astimezone().strftime("%H:%M:%S")


def duration(seconds: float) -> str:
    """'12 s', '5 min', '1 h 20 min', '3 days'."""
    s = abs(seconds)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s // 60:.0f} min"
    if s < 86400:
        h, m = divmod(round(s / 60), 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return plural(round(s / 86400), "day")


def relative(at: datetime, now: datetime) -> str:
    """'2 min ago', 'in 12 s', 'just now'."""
    delta = (at - now).total_seconds()
    if abs(delta) < 1:
        return "just now"
    return f"in {duration(delta)}" if delta > 0 else f"{duration(delta)} ago"


def when(at: datetime, now: datetime) -> str:
    """'10:42:05 (2 min ago)'; a day or more away gets the date too."""
    shown = clock_time(at)
    if abs((at - now).total_seconds()) >= 86400:
        shown = at.astimezone().strftime("%b %d, ") + shown
    return f"{shown} ({relative(at, now)})"


def local_times(text: str, now: datetime) -> str:
    """Any ISO time stamp in ``text`` (a stage's step) as a person reads it: local time,
    and how far from ``now``."""

    def told(m: re.Match[str]) -> str:
        try:
            at = datetime.fromisoformat(m.group(0).replace("Z", "+00:00"))
        except ValueError:
            return m.group(0)
        return when(at if at.tzinfo else at.replace(tzinfo=UTC), now)

    return _ISO.sub(told, text)


def language_name(code: str) -> str:
    return f"{LANGUAGES[code]} ({code})" if code in LANGUAGES else code


def latency(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


# -- the parts of a trace ------------------------------------------------------------------


def call_line(call: LLMCallRecord) -> str:
    """'reply · SmolLM2-135M-Instruct · 1.8 s · 212+34 tokens', and the outcome if not ok."""
    parts = [call.purpose, call.model, latency(call.latency_ms)]
    if call.prompt_tokens or call.completion_tokens:
        parts.append(f"{call.prompt_tokens}+{call.completion_tokens} tokens")
    line = " · ".join(parts)
    if call.outcome != "ok":
        line += f" · {_OUTCOME.get(call.outcome, call.outcome)}"
        if call.detail:
            line += f" ({call.detail})"
    return line


def tool_line(t: ToolCallRecord) -> str:
    """'tool now({}): ok · round 1 · 2 ms · 87 chars', or what went wrong instead."""
    line = f"tool {t.name}({t.arguments}): {t.outcome}"
    if t.detail:
        line += f" ({t.detail})"
    line += f" · round {t.round} · {latency(t.duration_ms)}"
    if t.outcome == "ok":
        line += f" · {plural(t.result_chars, 'char')} to the prompt"
    return line


def tool_record(d: Mapping[str, Any]) -> ToolCallRecord:
    """A stored trace's tool call (`ToolCallRecord.to_dict`) back as a record."""
    return ToolCallRecord(
        str(d.get("name", "")), str(d.get("arguments", "")), float(d.get("duration_ms", 0)),
        int(d.get("result_chars", 0)), str(d.get("outcome", "")), str(d.get("detail", "")),
        int(d.get("round", 1)),
    )


def _subject(subject: str) -> str:
    return subject.replace("-retry", " (retry)")


def guard_line(g: GuardRecord) -> str:
    """One verdict of the output guard: what it checked, and what rejected it."""
    name = _subject(g.subject)
    if g.ok:
        fixed = f" after repairs: {', '.join(g.repairs)}" if g.repairs else ""
        return f"{name} passed the guard{fixed}"
    by = f" by the {g.check} check" if g.check else ""
    line = f"{name} rejected{by}: {g.reason or 'no reason given'}"
    if g.text:
        line += f" — it wrote “{one_line(g.text)}”"
    return line


def one_line(text: str, limit: int = 160) -> str:
    """A model's text on one line, cut at ``limit`` characters (a rejected answer may be a
    page of '#')."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fell_back(d: Decision) -> bool:
    """A text was generated for this decision but none was posted: the safe default ran."""
    tried = any(c.purpose.split("-")[0] in GENERATION for c in d.trace.llm_calls)
    return tried and d.action.kind not in (ActionKind.REPLY, ActionKind.ACK)


def outcome_line(d: Decision) -> str:
    """What finally happened, when it was a fallback: 'fallback: reacted 🤔 instead'."""
    if d.action.kind is ActionKind.REACT:
        return f"fallback: reacted {d.action.emoji or ''} instead".replace("  ", " ")
    return "fallback: said nothing"


def guard_lines(d: Decision) -> list[str]:
    lines = [guard_line(g) for g in d.trace.guard]
    if fell_back(d):
        lines.append(outcome_line(d))
    return lines


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


def value_text(value: Any) -> str:
    """Any feature value as words: lists joined, mappings as 'key value', no brackets."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k.replace('_', ' ')} {value_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(value_text(v) for v in value) or "none"
    return str(value)


def _state(v: Mapping[str, Any]) -> str:
    text = f"conversation state: {v.get('state')}"
    extra = [f"confidence {_number(v['confidence'])}" if "confidence" in v else "",
             f"from {v['source']}" if v.get("source") else ""]
    extra = [e for e in extra if e]
    if extra:
        text += f" ({', '.join(extra)})"
    return text + (f": {v['detail']}" if v.get("detail") else "")


def _judgment(v: Mapping[str, Any]) -> str:
    said = (f"respond with {v.get('response_type')}" if v.get("should_respond")
            else "stay silent")
    text = f"LLM judge: {said} (confidence {_number(v.get('confidence', 0))})"
    return text + (f": {v['reason']}" if v.get("reason") else "")


def feature_line(key: str, value: Any, now: datetime | None = None) -> str | None:
    """A feature the judge saw, as a sentence; None for what the card shows elsewhere (the
    conversation; the score; the learned models, told by `kuuki.explain.models`). ``now``
    (the decision's time) tells times relative to it."""
    if key in ("conversation", "local_score") or key in models.KEYS:
        return None
    told = _told(key, value, now)
    if told is not None:
        return told
    if key == "language" and isinstance(value, str):
        return f"language: {language_name(value)}"
    if key == "addressed":
        return f"addressed {_ADDRESSED.get(value, value)}" if value else "not addressed"
    if key == "state" and isinstance(value, Mapping):
        return _state(value)
    if key == "llm_judgment" and isinstance(value, Mapping):
        return _judgment(value)
    if key == "since_last_intervention_min" and isinstance(value, int | float):
        return f"last spoke up unasked {duration(value * 60)} ago"
    if key == "local_ms" and isinstance(value, int | float):
        return f"local stage took {_number(value)} ms"
    if key == "unanswered":
        return {True: "the question is still open", False: "someone answered the question",
                None: "could not tell whether the question was answered"}.get(
            value, f"unanswered: {value_text(value)}")
    if key == "same_conversation" and isinstance(value, list | tuple) and len(value) == 2:
        same, confidence = value
        return (f"{'same' if same else 'another'} conversation as its last intervention "
                f"(confidence {_number(confidence)})")
    if key == "judge_cache":
        return {"hit": "the LLM judge's answer came from its cache (nothing new was said)",
                "miss": "the LLM judge was asked"}.get(str(value), f"judge cache: {value}")
    if key == "breaker":
        return f"LLM circuit breaker: {value}"
    if value is None:
        return None  # a feature that found nothing says nothing
    return f"{key.replace('_', ' ')}: {value_text(value)}"


def _told(key: str, value: Any, now: datetime | None) -> str | None:
    """The features whose names mean nothing to a person, in words (None: not one)."""
    if key == "recheck_s" and isinstance(value, int | float):
        return f"will look at the question again in {duration(value)} if nobody answers it"
    if key == "answered_by":
        return "nobody had answered it yet" if value is None else \
            f"someone already answered it (message {value})"
    if key == "pass" and isinstance(value, str):
        return _PASS.get(value, f"judged on the {value} pass")
    if key == "judge_mode" and isinstance(value, str):
        return f"judge mode {value}: {_JUDGE_MODE.get(value, value)}"
    if key == "quiet_until" and isinstance(value, str):
        return f"asked to be quiet here until {local_times(value, now or _parse(value))}"
    if key == "llm_budget":
        return "the channel's LLM budget was spent"
    if key == "state_llm":
        return f"the LLM read the conversation as {value}"
    return None


def _parse(value: str) -> datetime:
    at = datetime.fromisoformat(value)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def feature_lines(features: Mapping[str, Any], now: datetime | None = None) -> list[str]:
    return [line for k, v in features.items() if (line := feature_line(k, v, now)) is not None]


def rule_line(rule: str, points: float, detail: str) -> str:
    return f"{points:+.0f}  {rule}" + (f" ({detail})" if detail else "")


@dataclass(frozen=True, slots=True)
class Explanation:
    """A decision as a person reads it: the headline first, then the why."""

    headline: str
    fallback: bool
    rules: list[str]
    features: list[str]  # the learned models' lines first (kuuki.explain.models), then the rest
    calls: list[str]
    tools: list[str]
    guard: list[str]
    steps: list[str]
    errors: list[str]


def explain(d: Decision, bot_names: Collection[str] = ()) -> Explanation:
    t = d.trace
    now = d.decided_at
    told = [line for lines in models.model_lines(t.features, bot_names) for line in lines]
    return Explanation(
        headline=headline(d),
        fallback=fell_back(d),
        rules=[rule_line(c.rule, c.points, c.detail) for c in t.contributions],
        features=told + feature_lines(t.features, now),
        calls=[call_line(c) for c in t.llm_calls],
        tools=[tool_line(c) for c in t.tool_calls],
        guard=guard_lines(d),
        steps=[local_times(step, now) for step in t.steps],
        errors=[local_times(e, now) for e in t.errors],
    )


# -- the channel right after a decision ------------------------------------------------------


@runtime_checkable
class Due(Protocol):
    """A timer that knows when it fires (the virtual clock's timers do)."""

    due: datetime


def _due(handle: object) -> datetime | None:
    return handle.due if isinstance(handle, Due) else None


def state_lines(state: ChannelState, now: datetime) -> list[str]:
    """The channel as the engine holds it: waits, quiet, timers, recent interventions."""
    bot = state.bot
    lines: list[str] = []
    for pending in state.pending.values():
        due = _due(pending.handle)
        wait = f"{duration((due - now).total_seconds())} " if due and due > now else ""
        lines.append(f"waiting {wait}for the burst to settle before judging "
                     f"{pending.message.id}")
    if bot.quiet_until is not None and bot.quiet_until > now:
        lines.append(f"asked to be quiet until {when(bot.quiet_until, now)}")
    for message_id, handle in sorted(state.rechecks.items()):
        due = _due(handle)
        at = f" at {when(due, now)}" if due else ""
        lines.append(f"will look at {message_id} again{at} if nobody answers it")
    if bot.last_reply_at is not None:
        lines.append(f"last replied {when(bot.last_reply_at, now)}")
    turns = 0
    for m in reversed(state.buffer.recent()):
        if m.user.id not in bot.user_ids:
            break
        turns += 1
    if turns:
        lines.append(f"spoke {times(turns)} since the last human message")
    lines.append(f"{plural(len(state.buffer.recent()), 'message')} in the short-term buffer")
    return lines
