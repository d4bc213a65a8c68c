"""The scenario suite: every transcript under tests/scenarios replayed with no LLM.

Each expect line (``{"after": "m7", "expect": {"action": [...]}}`` or the ``from``/``to``
form with ``max_replies``) is checked by `kuuki.replay.expect`, the same code that
`kuuki replay --check` runs, on the timeline `kuuki replay --llm none` would produce.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.domain import User
from kuuki.replay.expect import Played, check
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, read_transcript
from kuuki.settings import Settings

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
async def test_scenario(path: Path, tmp_path: Path) -> None:
    transcript = read_transcript(path)
    assert transcript.expectations, f"{path.name} has no expect lines"
    timeline = await run_timeline(path, tmp_path)
    failures = check(transcript.expectations, timeline)
    assert not failures, "\n".join(f.describe(path.name) for f in failures)


async def run_timeline(path: Path, tmp: Path) -> Played:
    """Replay ``path`` with no LLM, recording message markers and decisions in order."""
    transcript = read_transcript(path)
    settings = apply_setup(Settings(), transcript)
    clock = VirtualClock(transcript.events[0].at)
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    app = await build_app(
        settings,
        clock=clock,
        outbox=RecordingOutbox(clock, bot),
        llm=None,
        judge_llm=None,
        store=f"sqlite:///{tmp}/scenario.sqlite3",
    )
    timeline = Played()
    try:
        await replay(app.engine, clock, transcript, timeline=timeline)
    finally:
        await app.close()
    return timeline
