"""A decision's trace is stored as the text `json.dumps(trace.to_dict())` gives, encoded
once from its parts (kuuki.store.trace_json), and read back as that dict."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from storekit import decision, msg

from kuuki.domain import (
    DecisionTrace,
    GuardRecord,
    LLMCallRecord,
    StageRecord,
    ToolCallRecord,
)
from kuuki.store import Store
from kuuki.store.trace_json import encode_trace, trace_document
from kuuki.store.types import EncodedJSON, SafeJSON, dump_json


def dumped(trace: DecisionTrace) -> str:
    return json.dumps(trace.to_dict(), ensure_ascii=False, separators=(",", ":"))


def ambient_trace(mid: str = "m1", **facts: Any) -> DecisionTrace:
    t = DecisionTrace(mid, "c-general", msg(mid).ts)
    t.step("local stage: score -70 ≤ 20, nothing to wait for")
    t.add("cooldown", -50, "replied 0 s ago")
    t.add("crowded channel", -10.5, "8 people talking in 5 min")
    t.features.update({
        "addressed": None, "conversation": "m0", "pass": "first",
        "state": {"state": "active", "confidence": 0.85, "detail": "nearest ending 0.38"},
        "local_ms": 0.109,
    })
    for name in ("own", "filter", "quiet"):
        t.stages.append(StageRecord(name, "pass"))
    t.stages.append(StageRecord("local score", "pass", facts=dict(facts)))
    t.stages.append(StageRecord("debounce", "decide", "none", "score below the low threshold"))
    return t


def test_the_text_is_what_json_dumps_gives_for_every_part() -> None:
    t = ambient_trace(score=-70, question=False, state="active")
    t.step("お疲れさまです、また明日")
    t.llm_calls.append(LLMCallRecord("judge", "smollm2", 120, 8, 41.234, "ok", prompt="p"))
    t.guard.append(GuardRecord("reply", False, "echo", "repeats the prompt", "x", ("trim",)))
    t.tool_calls.append(ToolCallRecord("now", "{}", 1.234, 20, "ok"))
    t.error("stage x failed")
    t.stages.append(StageRecord("tools", "pass", facts={"names": ["now"], "n": {"a": 1}}))
    assert encode_trace(t) == dumped(t)
    doc = trace_document(t)
    assert isinstance(doc, EncodedJSON) and doc == dumped(t)
    assert json.loads(doc) == t.to_dict()


def test_remembered_stage_texts_keep_equal_looking_facts_apart() -> None:
    # 1 == 1.0 == True and 0.0 == -0.0: a remembered text must not stand in for another.
    values: list[Any] = [1, 1.0, True, 0.0, -0.0, "1", None, 0, False]
    for _ in range(2):  # the second round reads the remembered texts
        for v in values:
            t = ambient_trace(score=v)
            assert encode_trace(t) == dumped(t), v
            assert json.loads(encode_trace(t))["stages"][3]["facts"]["score"] == v


def test_what_a_database_refuses_goes_the_cleaning_way() -> None:
    for bad in (float("nan"), float("inf"), "lone \ud800 half", "nul \x00 char"):
        t = ambient_trace(score=bad)
        doc = trace_document(t)
        assert isinstance(doc, dict) and doc == t.to_dict()
        stored = dump_json(doc)
        assert stored is not None and "\x00" not in stored and "NaN" not in stored
    t = ambient_trace()
    t.features["when"] = t.started_at  # not JSON: stored in ISO form, as before
    doc = trace_document(t)
    assert isinstance(doc, dict)
    assert json.loads(dump_json(doc) or "")["features"]["when"] == t.started_at.isoformat()


def test_both_dialects_bind_the_encoded_text_as_the_document() -> None:
    t = ambient_trace(score=-70)
    doc = trace_document(t)
    assert dump_json(doc) == dumped(t)
    col = SafeJSON()
    assert col.process_bind_param(doc, postgresql.dialect()) == t.to_dict()
    assert col.process_bind_param(doc, sqlite.dialect()) == t.to_dict()


async def test_a_trace_read_back_is_its_dict_through_the_writer_and_the_core_path(
    store: Store,
) -> None:
    base = decision(msg("m1", "こんにちは?"))
    clean = ambient_trace("m1", score=-70.5, question=True)
    await store.writer.add_decision(replace(base, trace=clean))
    await store.writer.flush()
    got = await store.browse.decision_for("m1")
    assert got is not None and got["trace"] == clean.to_dict()
    other = ambient_trace("m2", score=3)
    await store.messages.save_decision(replace(decision(msg("m2")), trace=other))
    got = await store.browse.decision_for("m2")
    assert got is not None and got["trace"] == other.to_dict()
