"""`kuuki chat`: a terminal room. Type `alice: hello` to speak as anyone, or `/as bob` to
switch who you are; the bot answers inline; `/why` shows the last decision's trace."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..clock import Clock
from ..domain import Action, ActionKind, Channel, ChatEvent, Decision, EventKind, Message, User

HELP = """\
Type a message and press Enter. Commands:
  alice: text     speak as alice (anyone; the name sticks for the next lines)
  /as bob         switch speaker        /channel NAME   switch channel
  /why            the last decision's trace, as the bot saw it
  /help           this text             /quit           leave (Ctrl-D works too)"""


@dataclass(slots=True)
class TerminalOutbox:
    clock: Clock
    bot: User
    out: TextIO
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def send(self, channel: Channel, action: Action) -> Message | None:
        if action.kind is ActionKind.REACT:
            self.out.write(f"  ({self.bot.name} reacted {action.emoji})\n")
        elif action.kind in (ActionKind.REPLY, ActionKind.ACK):
            text = action.text or "…"
            self.out.write(f"{self.bot.name}: {text}\n")
        self.out.flush()
        if action.kind in (ActionKind.REPLY, ActionKind.ACK):
            return Message(
                f"bot-{next(self._ids)}-{uuid.uuid4().hex[:8]}",
                channel.id,
                self.bot,
                action.text or "",
                self.clock.now(),
                reply_to=action.reply_to,
            )
        return None

    @contextlib.asynccontextmanager
    async def typing(self, channel: Channel) -> AsyncIterator[None]:
        self.out.write(f"  ({self.bot.name} is typing…)\n")
        self.out.flush()
        yield


def format_trace(d: Decision) -> str:
    from ..app import format_decision_row

    return format_decision_row(
        {
            "message_id": d.message_id,
            "channel_id": d.channel_id,
            "action": d.action.kind.value,
            "stage": d.stage.value,
            "score": round(d.score, 1),
            "reason": d.reason,
            "trace": d.trace.to_dict(),
        }
    )


class TerminalRoom:
    def __init__(
        self,
        handle: Callable[[ChatEvent], Any],
        idle: Callable[[], Any],
        clock: Clock,
        out: TextIO = sys.stdout,
    ) -> None:
        self.handle = handle
        self.idle = idle
        self.clock = clock
        self.out = out
        self.speaker = "you"
        self.channel = Channel("general", "general")
        self.last: Decision | None = None
        self._ids = itertools.count(1)

    def on_decision(self, d: Decision) -> None:
        self.last = d

    async def line(self, raw: str) -> bool:
        """Handle one input line; False means quit."""
        text = raw.strip()
        if not text:
            return True
        if text in ("/quit", "/exit"):
            return False
        if text == "/help":
            self.out.write(HELP + "\n")
        elif text.startswith("/as "):
            self.speaker = text[4:].strip() or self.speaker
            self.out.write(f"(you are now {self.speaker})\n")
        elif text.startswith("/channel "):
            name = text[9:].strip().lstrip("#") or "general"
            self.channel = Channel(name, name)
            self.out.write(f"(now in #{name})\n")
        elif text == "/why":
            self.out.write((format_trace(self.last) if self.last else "(no decision yet)") + "\n")
        else:
            speaker, body = self._split(text)
            user = User(speaker, speaker)
            # Unique across sessions: the store remembers handled ids after a restart.
            mid = f"t{next(self._ids)}-{uuid.uuid4().hex[:8]}"
            msg = Message(mid, self.channel.id, user, body, self.clock.now())
            await self.handle(ChatEvent(EventKind.POSTED, self.channel, mid, msg.ts, message=msg))
            await self.idle()
        self.out.flush()
        return True

    def _split(self, text: str) -> tuple[str, str]:
        head, sep, rest = text.partition(":")
        if sep and head and len(head) <= 32 and " " not in head.strip() and rest.strip():
            self.speaker = head.strip()
            return self.speaker, rest.strip()
        return self.speaker, text

    async def run(self, lines: AsyncIterator[str]) -> None:
        self.out.write(HELP + "\n")
        self.out.flush()
        async for raw in lines:
            if not await self.line(raw):
                break


async def stdin_lines() -> AsyncIterator[str]:
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            return
        yield line
