"""A decision's trace as the JSON text the store keeps, encoded once, from its parts.

Every message leaves a decision and its trace (steps 5-7), so encoding the trace is on the
message path. ``json.dumps(trace.to_dict())`` copied the trace into ~30 small dicts, encoded
them, then scanned the 1.5 kB text with a regular expression for what the databases refuse
(~30 µs a message, ~5 % of `kuuki bench ingest`). Here the text is joined from the trace's
parts; a stage's record repeats from message to message (the same stage passing with the
same findings), so each distinct record is encoded once and remembered.

The text is the one `dump_json(trace.to_dict())` stores, byte for byte (tests hold it to
that). A trace with something the fast path must not store as is (a lone surrogate, a NUL,
NaN, a value JSON cannot encode) gets the dict, which the store cleans as before.
"""

from __future__ import annotations

import json
from typing import Any

from kuuki.domain import DecisionTrace, StageRecord
from kuuki.store.types import EncodedJSON, suspect_json

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

# Fact values whose JSON text is determined by (type, value); a float is keyed by its repr
# (-0.0 == 0.0, and 1 == 1.0 == True: equal keys must mean equal text).
_PLAIN = frozenset({str, int, bool, type(None)})
_MEMO_SIZE = 4096
_memo: dict[tuple[Any, ...], str] = {}


def trace_document(trace: DecisionTrace) -> EncodedJSON | dict[str, Any]:
    """What a decision row stores as its trace: the encoded text, or (rarely) the dict."""
    try:
        text = encode_trace(trace)
    except (TypeError, ValueError):
        return trace.to_dict()
    if suspect_json(text):
        return trace.to_dict()
    return EncodedJSON(text)


def encode_trace(t: DecisionTrace) -> str:
    """``json.dumps(t.to_dict(), ensure_ascii=False, separators=(",", ":"))``, faster: the
    parts before the stages in one encoder call, then each stage's remembered text."""
    head = _encode({
        "message_id": t.message_id,
        "channel_id": t.channel_id,
        "started_at": t.started_at.isoformat(),
        "steps": t.steps,
        "contributions": [
            {"rule": c.rule, "points": c.points, "detail": c.detail} for c in t.contributions
        ],
        "features": t.features,
        "llm_calls": [c.to_dict() for c in t.llm_calls],
        "errors": t.errors,
        "guard": [g.to_dict() for g in t.guard],
    })
    return "".join((
        head[:-1],  # without its closing brace
        ',"stages":[', ",".join([_stage(r) for r in t.stages]),
        '],"tool_calls":', _encode([c.to_dict() for c in t.tool_calls]) if t.tool_calls else "[]",
        "}",
    ))


def _stage(r: StageRecord) -> str:
    if type(r.name) is not str or type(r.reason) is not str or type(r.outcome) is not str:
        return _encode(r.to_dict())
    if r.action is not None and type(r.action) is not str:
        return _encode(r.to_dict())
    key: list[Any] = [r.name, r.outcome, r.action, r.reason]
    for k, v in r.facts.items():
        kind = type(v)
        if kind is float:
            v = repr(v)
        elif kind not in _PLAIN or type(k) is not str:
            return _encode(r.to_dict())  # lists, dicts, enums…: not worth a key
        key += (k, kind, v)
    memo_key = tuple(key)
    text = _memo.get(memo_key)
    if text is None:
        text = _encode(r.to_dict())
        if len(_memo) >= _MEMO_SIZE:
            _memo.clear()
        _memo[memo_key] = text
    return text
