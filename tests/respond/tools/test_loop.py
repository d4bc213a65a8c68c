"""The reply's tool loop, driven by the scripted LLM through the real engine and store."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from kuuki.domain import ActionKind
from kuuki.errors import LLMUnavailable
from kuuki.explain.why import trace_lines
from kuuki.settings.tools import ToolSettings
from kuuki.testing.llm import ScriptedLLM, tool_call
from memory.conftest import ALICE, make, settings

START = datetime(2026, 1, 5, 1, 30, tzinfo=UTC)  # 10:30 in Tokyo


def _tool_turns(llm: ScriptedLLM, call: int) -> list[str]:
    return [m.content for m in llm.history[call].messages if m.role == "tool"]


async def test_a_call_runs_the_tool_and_the_answer_uses_its_result(tmp_path: Path) -> None:
    from kuuki.clock import VirtualClock

    s = replace(settings(), tools=ToolSettings(timezone="Asia/Tokyo"))
    h = await make(tmp_path, s=s, clock=VirtualClock(START))
    try:
        h.llm.enqueue(tool_call("now", {}), purpose="reply")
        h.llm.enqueue("It's 10:30 in Tokyo, Monday.", purpose="reply-round2")
        mid = await h.say(ALICE, "Kuu, what time is it?")
        assert [a.text for _, a in h.outbox.sent] == ["It's 10:30 in Tokyo, Monday."]
        # The first call offered the tools; the second carried the result as a tool turn.
        assert h.llm.history[0].tools is not None
        assert {t.name for t in h.llm.history[0].tools} == {"recall", "now"}
        result = json.loads(_tool_turns(h.llm, 1)[0])
        assert result == {"time": "10:30", "date": "2026-01-05", "weekday": "Monday",
                          "timezone": "Asia/Tokyo"}
        d = h.decisions[-1]
        [rec] = d.trace.tool_calls
        assert (rec.name, rec.outcome, rec.round) == ("now", "ok", 1)
        assert rec.result_chars == len(_tool_turns(h.llm, 1)[0])
        # The stored trace says it too, and `kuuki why` prints it.
        row = await h.app.store.browse.decision_for(mid)
        assert row["trace"]["tool_calls"][0]["name"] == "now"
        lines = "\n".join(trace_lines(row["trace"]))
        assert "tool now({}): ok · round 1" in lines
    finally:
        await h.app.close()


async def test_bad_calls_become_notes_and_the_reply_goes_on(tmp_path: Path) -> None:
    h = await make(tmp_path)
    try:
        h.llm.enqueue(
            tool_call("recall", "{not json")
            + tool_call("recall", {"query": 5})
            + tool_call("weather", {"city": "Oslo"}),
            purpose="reply",
        )
        h.llm.enqueue("I couldn't look that up, sorry.", purpose="reply-round2")
        await h.say(ALICE, "Kuu, what did we decide about the venue?")
        assert [a.text for _, a in h.outbox.sent] == ["I couldn't look that up, sorry."]
        notes = _tool_turns(h.llm, 1)
        assert notes[0].startswith("error: bad arguments for recall: not JSON")
        assert "expected string" in notes[1]
        assert notes[2].startswith("error: there is no tool 'weather'")
        records = h.decisions[-1].trace.tool_calls
        assert [r.outcome for r in records] == ["invalid", "invalid", "invalid"]
    finally:
        await h.app.close()


async def test_three_rounds_then_the_model_must_answer(tmp_path: Path) -> None:
    h = await make(tmp_path)
    try:
        h.llm.enqueue(tool_call("now"), purpose="reply")
        h.llm.enqueue(tool_call("now"), purpose="reply-round2")
        h.llm.enqueue(tool_call("now"), purpose="reply-round3")
        h.llm.enqueue("It's 09:00.", purpose="reply-round4")
        await h.say(ALICE, "Kuu, what time is it, really?")
        offered = [c.tools for c in h.llm.history]
        assert [None if t is None else len(t) for t in offered] == [2, 2, 2, None]
        assert len(h.decisions[-1].trace.tool_calls) == 3
        # The fourth call offered no tools and held the three results as plain text.
        last = h.llm.history[3]
        assert not any(m.role == "tool" or m.tool_calls for m in last.messages)
        assert last.messages[-1].content.count("now({}) → {") == 3
        assert h.outbox.sent[-1][1].text == "It's 09:00."
        assert any("3 rounds spent" in step for step in h.decisions[-1].trace.steps)
    finally:
        await h.app.close()


async def test_an_empty_answer_to_a_tools_round_is_retried_without_tools(
    tmp_path: Path,
) -> None:
    h = await make(tmp_path)
    try:
        h.llm.enqueue(
            "",
            purpose="reply",
        )  # what llama-cpp-python's function calling sends for text
        h.llm.enqueue("Hi Alice!", purpose="reply-retry")
        await h.say(ALICE, "Kuu, hi")
        assert [c.tools is None for c in h.llm.history] == [False, True]
        assert [g.check for g in h.decisions[-1].trace.guard] == ["empty", ""]
        assert h.outbox.sent[-1][1].text == "Hi Alice!"
    finally:
        await h.app.close()


async def test_a_failed_model_call_in_a_round_is_the_usual_fallback(tmp_path: Path) -> None:
    h = await make(tmp_path)
    try:
        h.llm.enqueue(LLMUnavailable("down"), purpose="reply")
        await h.say(ALICE, "Kuu, what time is it?")
        assert h.outbox.sent[-1][1].kind is ActionKind.REACT
        assert len(h.llm.history) == 1
    finally:
        await h.app.close()


async def test_a_model_without_tools_replies_without_them_and_says_so(tmp_path: Path) -> None:
    h = await make(tmp_path, ScriptedLLM())
    h.llm.tools = False
    try:
        h.llm.enqueue("Hello!", purpose="reply")
        await h.say(ALICE, "Kuu, hi")
        assert h.llm.history[0].tools is None
        assert [a.text for _, a in h.outbox.sent] == ["Hello!"]
        assert any(s.startswith("tools off: scripted is scripted without tools")
                   for s in h.decisions[-1].trace.steps)
    finally:
        await h.app.close()


async def test_tools_can_be_switched_off(tmp_path: Path) -> None:
    s = replace(settings(), tools=ToolSettings(max_rounds=0))
    h = await make(tmp_path, s=s)
    try:
        h.llm.enqueue("Hello!", purpose="reply")
        await h.say(ALICE, "Kuu, hi")
        assert h.llm.history[0].tools is None
    finally:
        await h.app.close()


async def test_the_judge_is_never_offered_tools(tmp_path: Path) -> None:
    from kuuki.app import build_app
    from kuuki.clock import VirtualClock
    from kuuki.domain import ChatEvent, EventKind, Message, User
    from kuuki.testing import RecordingOutbox
    from memory.conftest import GENERAL, FakeEmbedder

    llm = ScriptedLLM()
    llm.enqueue(
        {"should_respond": True, "response_type": "full_response",
         "confidence": 0.9, "reason": "a question"},
        purpose="judge",
    )
    llm.enqueue(tool_call("now"), purpose="reply")
    llm.enqueue("Half past ten.", purpose="reply-round2")
    clock = VirtualClock(START)
    outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
    app = await build_app(replace(settings(), judge_mode="llm"), clock=clock, outbox=outbox,
                          llm=llm, store=f"sqlite:///{tmp_path / 'j.db'}",
                          embedder=FakeEmbedder())
    try:
        for i, text in enumerate(["anyone know what time it is?", "what time is it?"]):
            msg = Message(f"m{i}", "general", ALICE, text, clock.now())
            await app.engine.handle(ChatEvent(EventKind.POSTED, GENERAL, msg.id, msg.ts,
                                              message=msg))
            await app.engine.idle()
            await clock.advance(120)  # past the burst wait: the judge runs
            await app.engine.idle()
        offered = {p: c.tools is not None for p, c in zip(llm.purposes, llm.history,
                                                          strict=True)}
        assert offered.get("judge") is False  # the judge was asked, without tools
        assert {p for p, o in offered.items() if o} <= {"reply", "reply-round2"}
    finally:
        await app.close()
