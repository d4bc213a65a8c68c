"""Issue 12's wrong cases, asserted on the decisions' structured fields (not their prose).

The scenario transcripts (tests/scenarios/*23-26*) check what the bot did; these check why,
through the trace features the pipeline stores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.domain import ActionKind, Decision, User
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, parse_lines, read_transcript
from kuuki.settings import Settings

SETUP = {"bot": "Kuu", "aliases": ["くう"], "language": "en", "keywords": ["docker", "python"]}


async def run(lines: list[dict[str, Any]], tmp: Path, **kw: Any) -> list[Decision]:
    rows = [json.dumps({"setup": SETUP}), *(json.dumps(x) for x in lines)]
    transcript = parse_lines(rows)
    settings = apply_setup(Settings(**kw), transcript)
    clock = VirtualClock(transcript.events[0].at)
    bot = User("Kuu", "Kuu", is_bot=True)
    app = await build_app(
        settings, clock=clock, outbox=RecordingOutbox(clock, bot), llm=None, judge_llm=None,
        store=f"sqlite:///{tmp}/t.sqlite3",
    )
    try:
        return await replay(app.engine, clock, transcript)
    finally:
        await app.close()


def m(i: str, t: float, user: str, text: str, **kw: Any) -> dict[str, Any]:
    return {"id": i, "t": t, "channel": "general", "user": user, "text": text, **kw}


async def test_recheck_never_says_answered_when_nobody_answered(tmp_path: Path) -> None:
    # A question nobody answers; later talk is between two other people.
    decisions = await run(
        [
            m("m1", 0, "ann", "morning"),
            m("m2", 30, "bo", "does anyone know why docker compose ignores my .env file?"),
            m("m3", 400, "cy", "ann, lunch at noon?"),
        ],
        tmp_path,
    )
    about_m2 = [d for d in decisions if d.message_id == "m2"]
    assert about_m2, "the question was judged"
    for d in about_m2:
        assert d.trace.features.get("answered_by") is None
        assert "answered" not in d.reason
    assert any(d.action.kind is ActionKind.REPLY for d in about_m2)


async def test_a_question_a_person_answered_is_left_to_them(tmp_path: Path) -> None:
    decisions = await run(
        [
            m("m1", 0, "bo", "does anyone know why docker compose ignores my .env file?"),
            m("m2", 8, "ann", "it has to sit next to the compose file", reply_to="m1"),
        ],
        tmp_path,
    )
    about_m1 = [d for d in decisions if d.message_id == "m1"]
    assert all(d.action.kind is ActionKind.NONE for d in about_m1)
    assert about_m1[-1].trace.features["answered_by"] == "m2"


async def test_a_dm_is_addressed_and_dms_off_is_silent(tmp_path: Path) -> None:
    dm = {"channel": "dm-bo", "channel_visibility": "dm"}
    decisions = await run([m("m1", 0, "bo", "i think my cat hates me", **dm)], tmp_path)
    assert decisions[-1].trace.features["addressed"] == "dm"
    assert decisions[-1].action.kind is not ActionKind.NONE
    (tmp_path / "off").mkdir()
    off = await run([m("m1", 0, "bo", "i think my cat hates me", **dm)], tmp_path / "off",
                    dms_enabled=False)
    assert [d.action.kind for d in off] == [ActionKind.NONE]
    assert off[0].reason == "DMs are off"


async def test_a_monologue_is_marked_and_never_rechecked(tmp_path: Path) -> None:
    """Seed 003: a question at the end of a run of one's own lines, nobody else in the
    talk, is said to oneself: marked, not taken up, never re-checked; the same question put
    to the room ("anyone…") is an open one."""
    lines = [
        m("m1", 0, "ken", "so sleepy"),
        m("m2", 90, "ken", "gonna make some coffee"),
        m("m3", 240, "ken", "is the canteen even open on saturdays?"),
    ]
    decisions = await run(lines, tmp_path)
    assert [d.message_id for d in decisions] == ["m1", "m2", "m3"], "no re-check was scheduled"
    last = decisions[-1]
    terms = {c.rule: c for c in last.trace.contributions}
    assert terms["talking to oneself"].detail.startswith("a run of lines nobody else is part of")
    assert "question to the room" not in terms and "open question unanswered" not in terms
    assert last.action.kind is ActionKind.NONE
    (tmp_path / "room").mkdir()
    lines[-1] = m("m3", 240, "ken", "anyone know if the canteen is open on saturdays?")
    asked = await run(lines, tmp_path / "room")
    about_m3 = [d for d in asked if d.message_id == "m3"]
    first = about_m3[0].trace.contributions
    assert "question to the room" in [c.rule for c in first]
    assert "talking to oneself" not in [c.rule for c in first]
    assert len(about_m3) > 1, "an open question is judged again"


async def test_a_greeting_among_three_is_not_a_one_to_one(tmp_path: Path) -> None:
    """Two members greet in turn and the bot is the third: the hand rules read that as "two
    people talking to each other" (-20) or "bot not mentioned lately" (-10). Now no term
    pushes the greeting down: the seat model and the policy read it as it is."""
    scenarios = Path(__file__).resolve().parent.parent / "scenarios"
    for name in ("ja32_greeting_among_three.jsonl", "en32_greeting_among_three.jsonl"):
        transcript = read_transcript(scenarios / name)
        settings = apply_setup(Settings(), transcript)
        clock = VirtualClock(transcript.events[0].at)
        bot = User(settings.persona.name, settings.persona.name, is_bot=True)
        app = await build_app(
            settings, clock=clock, outbox=RecordingOutbox(clock, bot), llm=None,
            judge_llm=None, store=f"sqlite:///{tmp_path}/{name}.sqlite3",
        )
        try:
            decisions = await replay(app.engine, clock, transcript)
        finally:
            await app.close()
        second = [d for d in decisions if d.message_id == "m2"]
        assert second, name
        for d in second:
            rules = {c.rule for c in d.trace.contributions}
            assert not rules & {"one-to-one exchange", "bot not mentioned lately"}, name
            assert d.score >= 0, (name, d.trace.contributions)
