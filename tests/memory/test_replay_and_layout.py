from __future__ import annotations

import json
from pathlib import Path

from kuuki.app import PromptDumper, build_app
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import AddressedOnlyJudge
from kuuki.domain import User
from kuuki.replay.runner import replay
from kuuki.replay.transcript import read_transcript
from kuuki.testing import RecordingOutbox
from kuuki.testing.llm import ScriptedLLM

from .conftest import (
    ALICE,
    BOB,
    GENERAL,
    RANDOM,
    FakeEmbedder,
    fact,
    make,
    reflection_answer,
    settings,
    summary_answer,
)

SECRET = "the falcon project is cancelled"


async def test_replayed_secret_never_reaches_a_public_channel_prompt(tmp_path: Path) -> None:
    lines = [
        {"setup": {"bot": "Kuu", "language": "en"}},
        {"id": "s1", "t": 0, "channel": "hr", "channel_visibility": "private",
         "user": "alice", "text": f"between us: {SECRET}"},
        {"id": "s2", "t": 30, "channel": "hr", "channel_visibility": "private",
         "user": "bob", "text": "ok, I won't tell the falcon team"},
        {"id": "g1", "t": 1200, "channel": "general", "user": "carol",
         "text": "Kuu, any news about the falcon project?"},
        {"id": "s3", "t": 1300, "channel": "hr", "channel_visibility": "private",
         "user": "alice", "text": "Kuu, what do we know about falcon?"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    transcript = read_transcript(path, bot_name=None)
    llm = ScriptedLLM()
    llm.enqueue(
        reflection_answer(
            fact(f"Alice said {SECRET}.", ["alice"], ["falcon", "project", "cancelled"])),
        purpose="memory_reflection",
    )
    llm.enqueue("no news here", "it was cancelled, keep it quiet", purpose="reply")
    clock = VirtualClock(transcript.events[0].at)
    dump_dir = tmp_path / "prompts"
    app = await build_app(
        settings(REFLECTION_MIN_MESSAGES=2, PROACTIVE_CONVERSATION_ENABLED=False),
        clock=clock, outbox=RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True)),
        llm=llm, judge_llm=None, store=f"sqlite:///{tmp_path / 'r.sqlite3'}",
        judge=AddressedOnlyJudge(), embedder=FakeEmbedder(), dump=PromptDumper(dump_dir),
    )
    try:
        await replay(app.engine, clock, transcript)
    finally:
        await app.close()
    files = {p.name: p.read_text(encoding="utf-8") for p in dump_dir.iterdir()}
    assert any("hr" in n and "memory_reflection" in n for n in files)
    public = {n: t for n, t in files.items() if "-general-" in n}
    assert any("reply" in n for n in public)
    for name, text in files.items():
        if "-hr-" not in name:
            assert "cancelled" not in text, name
    # Positive control: the private channel's own reply prompt does hold the fact.
    assert any(SECRET in t for n, t in files.items() if "-hr-" in n and n.endswith("reply.txt"))


async def test_memories_render_broad_to_narrow(tmp_path: Path) -> None:
    s = settings(REFLECTION_ENABLED=False, PROACTIVE_CONVERSATION_ENABLED=False,
                 SUMMARIZE_EVERY_N_MESSAGES=2)
    h = await make(tmp_path, s=s)
    try:
        h.llm.enqueue(
            summary_answer("R-SUMMARY", history="R-HISTORY", recent_events="R-RECENT"),
            summary_answer("G-SUMMARY", history="G-HISTORY", recent_events="G-RECENT",
                           threads=[{"thread": "t1", "summary": "T-SUMMARY"}]),
            purpose="memory_summary",
        )
        h.llm.enqueue(
            {"history": "W-HISTORY", "recent_events": "W-RECENT"},
            purpose="memory_workspace",
        )
        await h.say(ALICE, "random chatter", channel=RANDOM)
        await h.say(BOB, "more random chatter", channel=RANDOM)
        await h.say(ALICE, "thread talk", thread="t1")
        await h.say(BOB, "thread reply", thread="t1")
        await h.advance(61)  # the debounced workspace memory
        workspace = h.llm.prompts("memory_workspace")
        assert len(workspace) == 1 and "G-HISTORY" in workspace[0] and "R-RECENT" in workspace[0]
        h.llm.enqueue("hi", purpose="reply")
        await h.say(ALICE, "Kuu, hi!")
        prompt = h.llm.prompts("reply")[-1]
        order = ["W-HISTORY", "W-RECENT", "## Channels", "- #general", "- #random",
                 "### #general", "G-HISTORY", "G-RECENT", "### #random", "R-HISTORY",
                 "### Thread: t1", "T-SUMMARY", "G-SUMMARY", "## Current conversation"]
        positions = [prompt.index(x) for x in order]
        assert positions == sorted(positions)
        assert "R-SUMMARY" not in prompt  # another channel's situation is not this one's
        # The reply exchange is new and gets summarized; after that nothing changes, so
        # nothing is regenerated.
        await h.advance(3600)
        counts = len(h.llm.prompts("memory_summary")), len(h.llm.prompts("memory_workspace"))
        await h.advance(6 * 3600)
        assert (len(h.llm.prompts("memory_summary")),
                len(h.llm.prompts("memory_workspace"))) == counts
    finally:
        await h.app.close()


async def test_periodic_cleanup_empties_quiet_buffers_and_stops(tmp_path: Path) -> None:
    s = settings(REFLECTION_ENABLED=False, CHANNEL_CONTEXT_ENABLED=False,
                 PROACTIVE_CONVERSATION_ENABLED=False, CHANNEL_BUFFER_TTL_MINUTES=20)
    h = await make(tmp_path, s=s)
    try:
        await h.say(ALICE, "hello", channel=GENERAL)
        state = h.app.engine.state("general")
        assert state is not None and len(state.buffer) == 1
        await h.advance(15 * 60)
        assert len(state.buffer) == 1  # not expired yet
        await h.advance(15 * 60)
        assert len(state.buffer) == 0  # pruned by the cleanup task, nobody read it
        await h.advance(30 * 60)
        assert h.clock.pending() == 0  # an idle bot leaves no timer behind
    finally:
        await h.app.close()
