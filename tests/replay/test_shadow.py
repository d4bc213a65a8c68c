"""Shadow mode: the bot decides and writes what it would say, posts nothing, and only its
real messages (in a seat, the member's own lines) join the conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kuuki.app import build_app
from kuuki.cli import main
from kuuki.clock import VirtualClock
from kuuki.domain import ActionKind, Decision, User
from kuuki.replay.expect import Played
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, parse_lines
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM

LINES = [
    '{"setup": {"bot": "Mio", "aliases": ["みお"], "language": "en"}}',
    '{"id": "m1", "t": 0, "user": "alice", "text": "Mio, where should we eat ramen tonight?"}',
    '{"id": "m2", "t": 20, "user": "Mio", "text": "Menya Kouji, by the station"}',
    '{"id": "m3", "t": 40, "user": "alice", "text": "Mio, is it open on Sundays?"}',
    '{"id": "m4", "t": 60, "user": "bob", "text": "I can join at eight"}',
]
GENERATED = "how about the noodle bar on 5th"


async def _replay(tmp_path: Path, *, shadow: bool) -> tuple[list[Decision], RecordingOutbox, Any]:
    transcript = parse_lines(LINES, "t.jsonl")
    settings = apply_setup(Settings(), transcript)
    clock = VirtualClock(transcript.events[0].at)
    outbox = RecordingOutbox(clock, User("Mio", "Mio", is_bot=True))
    llm = ScriptedLLM(default=GENERATED)
    app = await build_app(settings, clock=clock, outbox=outbox, llm=llm, judge_llm=None,
                          store=f"sqlite:///{tmp_path}/s.sqlite3", shadow=shadow)
    try:
        decisions = await replay(app.engine, clock, transcript, None, Played())
        state = app.engine.channels.get("general")
        assert state is not None
        seen = [(m.user.id, m.text) for m in state.buffer.recent()]
        await app.writer.flush()
        stored = await app.store.messages.recent_messages("general", limit=50)
    finally:
        await app.close()
    return decisions, outbox, (seen, [(m.user.id, m.text) for m in stored])


async def test_a_shadow_replay_posts_nothing_and_records_what_it_would_have_said(
    tmp_path: Path,
) -> None:
    decisions, outbox, (seen, stored) = await _replay(tmp_path, shadow=True)
    assert outbox.sent == [] and outbox.typing_count == 0
    first = next(d for d in decisions if d.message_id == "m1")
    assert first.shadow and first.action.kind is ActionKind.REPLY
    assert first.action.text == GENERATED  # generated and passed by the guard
    assert first.trace.features["shadow"] is True
    assert all(d.shadow for d in decisions)
    # the conversation holds the file's own line of the bot, never the would-be reply
    assert ("Mio", "Menya Kouji, by the station") in seen
    assert all(text != GENERATED for _, text in seen)
    assert all(text != GENERATED for _, text in stored)
    # the next question is decided with the bot's real line before it, answered again
    third = next(d for d in decisions if d.message_id == "m3")
    assert third.action.kind is ActionKind.REPLY and third.shadow


async def test_without_shadow_the_reply_is_sent_and_joins_the_conversation(
    tmp_path: Path,
) -> None:
    decisions, outbox, (seen, stored) = await _replay(tmp_path, shadow=False)
    assert [a.text for _, a in outbox.sent if a.kind is ActionKind.REPLY][:1] == [GENERATED]
    assert not any(d.shadow for d in decisions)
    assert ("Mio", GENERATED) in seen and ("Mio", GENERATED) in stored


def test_kuuki_replay_shadow_marks_each_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(["replay", str(path), "--llm", "none", "--shadow"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["after"] for o in out] == ["m1", "m3", "m4"]
    assert all(o["shadow"] is True for o in out)
    assert out[0]["action"] == "reply"
    assert main(["replay", str(path), "--llm", "none"]) == 0
    assert all("shadow" not in json.loads(line)
               for line in capsys.readouterr().out.splitlines())


def test_shadow_can_be_one_channel_and_a_thread_follows_it() -> None:
    from kuuki.domain import Channel
    from kuuki.engine.config import EngineConfig
    from kuuki.engine.filter import MessageFilter

    only = MessageFilter(EngineConfig(shadow_channels=("trial",)), set())
    assert only.shadowed(Channel("c1", "trial"))
    assert only.shadowed(Channel("t9", "a thread", parent_id="trial"))
    assert not only.shadowed(Channel("c2", "general"))
    assert MessageFilter(EngineConfig(shadow=True), set()).shadowed(Channel("c2", "general"))
