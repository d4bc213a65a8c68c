"""Replay a transcript through the engine on a virtual clock (DESIGN §5).

For each line the clock is moved to the line's time (running any timers due before it),
the event is handed to the engine, and the replay waits until the engine is idle, so the
bot's own messages join the timeline before the next line. After the last line the clock
runs on until no timer is pending, at most 30 minutes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kuuki.clock import VirtualClock
from kuuki.domain import Action, ActionKind, Channel, Decision, Message, User
from kuuki.engine.core import Engine
from kuuki.replay.expect import Played
from kuuki.replay.transcript import Transcript

TAIL = timedelta(minutes=30)


@dataclass(slots=True)
class RecordingOutbox:
    """Collects what the bot did; reply and ack become the bot's own messages."""

    clock: VirtualClock | Any
    bot: User
    sent: list[tuple[Channel, Action]] = field(default_factory=list)
    typing_count: int = 0
    fail_with: Exception | None = None  # tests: make every send fail like a platform outage
    # False: keep no list of what was sent (a long benchmark's stream: the list would be
    # the harness's memory growing inside the figure meant for the bot's)
    keep: bool = True
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def send(self, channel: Channel, action: Action) -> Message | None:
        if self.fail_with is not None:
            raise self.fail_with
        if self.keep:
            self.sent.append((channel, action))
        if action.kind in (ActionKind.REPLY, ActionKind.ACK):
            return Message(
                id=f"bot-{next(self._ids)}",
                channel_id=channel.id,
                user=self.bot,
                text=action.text or "",
                ts=self.clock.now(),
                reply_to=action.reply_to,
                thread=action.thread,
            )
        return None

    @contextlib.asynccontextmanager
    async def typing(self, channel: Channel) -> AsyncIterator[None]:
        self.typing_count += 1
        yield


def decision_line(d: Decision) -> dict[str, Any]:
    line = {
        "after": d.message_id,
        "t": d.decided_at.isoformat(),
        "channel": d.channel_id,
        "action": d.action.kind.value,
        "text": d.action.text,
        "emoji": d.action.emoji,
        "score": round(d.score, 1),
        "stage": d.stage.value,
        "llm_calls": d.llm_calls,
        "reason": d.reason,
        # what the judge decided, when the output guard delivered something else
        "decided": d.decided.value if d.decided else None,
    }
    if d.shadow:  # what the bot would have done: nothing was sent
        line["shadow"] = True
    return line


async def replay(
    engine: Engine,
    clock: VirtualClock,
    transcript: Transcript,
    emit: Callable[[dict[str, Any]], None] | None = None,
    timeline: Played | None = None,
) -> list[Decision]:
    """Run `transcript` through `engine`; `timeline` (if given) records each event's arrival
    and each decision in order, for checking the transcript's expectations."""
    decisions: list[Decision] = []

    def collect(d: Decision) -> None:
        decisions.append(d)
        if timeline is not None:
            timeline.decision(d)
        if emit is not None:
            emit(decision_line(d))

    engine.on_decision(collect)
    for event in transcript.events:
        if event.at > clock.now():
            await clock.advance_to(event.at)
            await engine.idle()
        if timeline is not None:
            timeline.message(event.event_id)
        await engine.handle(event)
        await engine.idle()
    deadline = clock.now() + TAIL
    while (due := clock.next_due()) is not None and due <= deadline:
        await clock.advance_to(due)
        await engine.idle()
    await engine.idle()
    return decisions


def print_line(line: dict[str, Any]) -> None:
    print(json.dumps(line, ensure_ascii=False), flush=True)
