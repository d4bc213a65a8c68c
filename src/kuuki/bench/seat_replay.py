"""One chat replayed with the bot in a seat, for `kuuki bench seat` (kuuki.bench.seat for
MRMP, kuuki.bench.seat_irc for IRC logs): how (`Variant`) and the replay itself."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kuuki.clock import VirtualClock
from kuuki.domain import Decision, User
from kuuki.replay.expect import Played
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, parse_lines
from kuuki.settings import Settings

__all__ = ["Variant", "replay_lines"]


@dataclass(frozen=True, slots=True)
class Variant:
    """How the chats are replayed: in shadow mode (the seat's real lines are the bot's,
    its own answers are only recorded) or with its answers joining the timeline; MRMP
    with each ``@name`` as a platform mention; IRC with a leading ``nick:`` removed."""

    shadow: bool = True
    mentions: bool = False
    strip_nick: bool = False

    def describe(self) -> str:
        parts = ["shadow" if self.shadow else "no shadow"]
        parts += ["@name as mentions"] * self.mentions + ["leading nick removed"] * self.strip_nick
        return ", ".join(parts)



async def replay_lines(
    settings: Settings, lines: Sequence[dict[str, Any]], name: str, *, shadow: bool = True,
    strict: bool = True,
) -> tuple[list[Decision], Played]:
    """One transcript through the engine with no model, on its own clock and store; in
    shadow mode (kuuki.engine.act) unless ``shadow`` is False. ``strict`` False: a line
    out of time order is skipped (an IRC log's clock sometimes steps back), not an error."""
    from kuuki.app import build_app

    transcript = parse_lines([json.dumps(o, ensure_ascii=False) for o in lines], name,
                             strict=strict)
    run = apply_setup(settings, transcript)
    run = replace(run, llm=replace(run.llm, backend="none"), judge_llm=None)
    clock = VirtualClock(transcript.events[0].at if transcript.events else None)
    bot = User(run.persona.name, run.persona.name, is_bot=True)
    timeline = Played()
    with tempfile.TemporaryDirectory(prefix="kuuki-seat-") as tmp:
        app = await build_app(run, clock=clock, outbox=RecordingOutbox(clock, bot),
                              store=f"sqlite:///{tmp}/seat.sqlite3", shadow=shadow)
        try:
            decisions = await replay(app.engine, clock, transcript, None, timeline)
        finally:
            await app.close()
    return decisions, timeline
