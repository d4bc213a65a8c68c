"""Playing a transcript (DESIGN §5) into the room, on the playground's virtual clock.

The file is read whole first: a file with a bad line is refused with every bad line
named, and nothing of it is played. The events keep their spacing but are moved to start
"now"; ids that would clash with messages already in the room get a prefix (and so do the
replies, threads and targets that point at them). Speed 1 follows real time, 10 runs the
clock ten times as fast, instant jumps from event to event and waits for the bot after
each one, as `kuuki replay` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from kuuki.domain import ChatEvent
from kuuki.platforms.playground.room import Room
from kuuki.platforms.playground.timeline import ClockDriver
from kuuki.replay.transcript import Transcript, parse_lines

MAX_BYTES = 5_000_000
MAX_SPEED = 1000.0


class TranscriptRejected(ValueError):
    """The uploaded file cannot be played; `problems` names each bad line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_speed(value: str | float | None) -> float | None:
    """A playback speed: a factor of real time, or None for instant."""
    if value is None or value in ("instant", "", "0", 0):
        return None
    try:
        speed = float(value)
    except (TypeError, ValueError) as exc:
        raise TranscriptRejected([f"speed: expected a number or 'instant', got {value!r}"]) from exc
    if not 0 < speed <= MAX_SPEED:
        raise TranscriptRejected([f"speed: expected more than 0 and at most {MAX_SPEED:g}"])
    return speed


class Player:
    """Reads transcripts and plays one at a time into the room."""

    def __init__(
        self,
        room: Room,
        driver: ClockDriver,
        handle: Callable[[ChatEvent], Awaitable[Any]],
        idle: Callable[[], Awaitable[None]],
    ) -> None:
        self.room = room
        self.driver = driver
        self.handle = handle
        self.idle = idle
        self._loads = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self.name = ""
        self.total = 0
        self.done = 0
        self.speed: float | None = None
        self.active = False

    def read(self, text: str, name: str) -> Transcript:
        transcript = parse_lines(
            text.splitlines(), name, bot_name=self.room.persona.name, strict=False
        )
        if transcript.errors:
            raise TranscriptRejected([str(e) for e in transcript.errors])
        if not transcript.events:
            raise TranscriptRejected([f"{name}: no messages to play"])
        return transcript

    def playing(self) -> bool:
        return self.active

    async def start(self, transcript: Transcript, speed: float | None) -> int:
        """Start playing (stopping any playback under way); returns the number of events."""
        await self.stop()
        events = self._place(transcript)
        self.name, self.total, self.done, self.speed = transcript.path, len(events), 0, speed
        self.active = True
        self._task = asyncio.get_running_loop().create_task(
            self._play(events, speed), name="kuuki-playground-playback"
        )
        self._announce()
        return len(events)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.driver.rate = 1.0

    def status(self) -> dict[str, Any]:
        return {
            "playing": self.playing(),
            "name": self.name,
            "done": self.done,
            "total": self.total,
            "speed": "instant" if self.speed is None else self.speed,
        }

    def _announce(self) -> None:
        self.room.hub.publish({"type": "playback", **self.status()})

    def _place(self, transcript: Transcript) -> list[ChatEvent]:
        """The transcript's events moved to start now, in the room's channels, ids unclashed."""
        events = transcript.events
        clash = any(e.message is not None and self.room.has_message(e.message.id) for e in events)
        prefix = f"L{next(self._loads)}." if clash else ""

        def rid(x: str | None) -> str | None:
            return f"{prefix}{x}" if x and prefix else x

        offset = self.driver.clock.now() - events[0].at
        placed: list[ChatEvent] = []
        for e in events:
            channel = self.room.add_channel(e.channel.id, e.channel.visibility)
            at = e.at + offset
            msg = e.message
            if msg is not None:
                msg = replace(
                    msg,
                    id=rid(msg.id) or msg.id,
                    channel_id=channel.id,
                    ts=at,
                    reply_to=rid(msg.reply_to),
                    thread=rid(msg.thread),
                )
            placed.append(
                replace(
                    e,
                    channel=channel,
                    event_id=f"{prefix}{e.event_id}",
                    at=at,
                    message=msg,
                    target_id=rid(e.target_id),
                )
            )
        return placed

    async def _play(self, events: list[ChatEvent], speed: float | None) -> None:
        self.driver.rate = speed or 1.0
        self.active = True
        try:
            for event in events:
                if speed is None:
                    if event.at > self.driver.clock.now():
                        await self.driver.advance_to(event.at)
                else:
                    await self.driver.wait_until(event.at)
                await self.handle(self.room.record(event))
                if speed is None:
                    await self.idle()
                self.done += 1
                if speed is not None or self.done == self.total or self.done % 20 == 0:
                    self._announce()
        finally:
            self.active = False
            self.driver.rate = 1.0
            self._announce()
