"""The scenario suite: every transcript under tests/scenarios replayed with no LLM.

Each ``{"after": "m7", "expect": {"action": [...]}}`` line holds for the strongest action
(reply > ack > react > none) the bot takes between message m7 and the next message of the
file, in virtual time — exactly what `kuuki replay --llm none` would print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.domain import ActionKind, ChatEvent, Decision, User
from kuuki.platforms.replay import RecordingOutbox, replay
from kuuki.platforms.transcript import read_transcript
from kuuki.settings import Persona, Settings, validate

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.jsonl"))


def persona_settings(setup: dict[str, Any]) -> Settings:
    p = Persona()
    return validate(
        Settings(
            persona=Persona(
                name=str(setup.get("bot", p.name)),
                aliases=tuple(setup.get("aliases", p.aliases)),
                language=str(setup.get("language", p.language)),
                keywords=tuple(setup.get("keywords", ())),
                emoji=tuple(setup.get("emoji", p.emoji)),
            ),
            judge_mode=str(setup.get("judge_mode", "hybrid")),
        )
    )


def strongest_after(timeline: list[tuple[str, Any]], after: str) -> tuple[ActionKind, list[str]]:
    """The strongest action decided between message ``after`` and the next message."""
    best = ActionKind.NONE
    seen: list[str] = []
    inside = False
    for kind, value in timeline:
        if kind == "msg":
            if inside:
                break
            inside = value == after
            continue
        if inside:
            d: Decision = value
            seen.append(
                f"{d.message_id}:{d.action.kind.value}({d.stage.value},{d.score:.0f},{d.reason})"
            )
            if d.action.kind.strength > best.strength:
                best = d.action.kind
    return best, seen


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
async def test_scenario(path: Path, tmp_path: Path) -> None:
    transcript = read_transcript(path)
    assert transcript.expectations, f"{path.name} has no expect lines"
    timeline = await run_timeline(path, tmp_path)
    failures = []
    for exp in transcript.expectations:
        allowed = exp.expect.get("action", [])
        got, seen = strongest_after(timeline, exp.after)
        if got.value not in allowed:
            failures.append(
                f"line {exp.line}: after {exp.after} expected {allowed}, got "
                f"{got.value}; decisions {seen}"
            )
    assert not failures, "\n".join(failures)


async def run_timeline(path: Path, tmp: Path) -> list[tuple[str, Any]]:
    """Replay ``path`` with no LLM: ("msg", id) markers interleaved with ("decision", d)."""
    transcript = read_transcript(path)
    settings = persona_settings(transcript.setup)
    clock = VirtualClock(transcript.events[0].at)
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    app = await build_app(
        settings,
        clock=clock,
        outbox=RecordingOutbox(clock, bot),
        llm=None,
        judge_llm=None,
        store_url=f"sqlite:///{tmp}/scenario.sqlite3",
    )
    timeline: list[tuple[str, Any]] = []
    handle = app.engine.handle

    async def marking_handle(event: ChatEvent) -> bool:
        timeline.append(("msg", event.event_id))
        return await handle(event)

    app.engine.handle = marking_handle  # type: ignore[method-assign]
    app.engine.on_decision(lambda d: timeline.append(("decision", d)))
    try:
        await replay(app.engine, clock, transcript)
    finally:
        await app.close()
    return timeline
