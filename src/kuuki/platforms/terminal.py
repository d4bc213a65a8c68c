"""`kuuki chat`: a terminal room. Type `alice: hello` to speak as anyone, or `/as bob` to
switch who you are; the bot answers inline; `/why` tells why it did what it did (`/why t2`:
about your second line), `/memory` what it remembers of the channel, `/jump 5m` moves the
clock ahead (a burst settles, an open question is taken up again, a summary is written).

The prompt shows who is speaking in which channel (``alice in #general> ``). What the bot
does on its own time — a reply after a burst settles, an unanswered question picked up
later — can arrive while the prompt waits for a line: the `Console` prints it above the
prompt and shows the prompt again. A typed line is shown once: the terminal echoes what is
typed on it, and only a line that came from elsewhere (a pipe, a file) is echoed here.
Ctrl-C leaves: stdin is read on a daemon thread, so nothing waits for a line that will
never come.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from kuuki.clock import Clock
from kuuki.domain import Action, ActionKind, Channel, ChatEvent, Decision, EventKind, Message, User
from kuuki.explain.lines import clock_time, duration, explain, when
from kuuki.explain.memory_view import render, text_lines
from kuuki.explain.window import parse_span
from kuuki.memory.snapshot import ChannelMemory

HELP = """\
Type a message and press Enter. Commands:
  alice: text     speak as alice (anyone; the name sticks for the next lines)
  /as bob         switch speaker        /channel NAME   switch channel
  /why            why the bot did what it did about the last message
  /why t2         … about message t2 (your lines are t1, t2, t3, … in order)
  /memory         what the bot remembers about this channel
  /jump 5m        move the clock ahead (5m, 1h, 1d): bursts settle, open questions
                  are taken up again, summaries are written
  /help           this text             /quit           leave (Ctrl-D or Ctrl-C work too)"""
KEPT = 500  # messages whose decisions `/why ID` can still tell

MemoryReader = Callable[[str], Awaitable[ChannelMemory]]
Jump = Callable[[float], Awaitable[None]]


class Console:
    """The terminal's output: lines, and the prompt they must not run into."""

    def __init__(self, out: TextIO, *, tty: bool | None = None, echo: bool | None = None
                 ) -> None:
        self.out = out
        self.tty = out.isatty() if tty is None else tty
        # A terminal shows what is typed on it; a line read from a pipe or file is shown
        # here, so the output reads as the conversation it was (and never twice).
        self.echo = (not sys.stdin.isatty()) if echo is None else echo
        self.prompt = ""
        self.waiting = False  # the prompt is showing and a line is being typed

    def line(self, text: str) -> None:
        """Print a line; while the prompt waits, above it, and show the prompt again."""
        if self.waiting:  # on a terminal, clear the prompt's line; elsewhere, end it
            self.out.write("\r\x1b[K" if self.tty else "\n")
        self.out.write(text + "\n")
        if self.waiting:
            self.out.write(self.prompt)
        self.out.flush()

    def ask(self, prompt: str) -> None:
        self.prompt, self.waiting = prompt, True
        self.out.write(prompt)
        self.out.flush()

    def interrupted(self) -> None:
        """Ctrl-C: end the line where the terminal showed ^C (or the prompt)."""
        if self.waiting or self.tty:
            self.out.write("\n")
        self.waiting = False

    def answered(self, text: str | None) -> None:
        """The line was typed. A terminal echoed it already; a line from elsewhere is
        echoed here."""
        self.waiting = False
        if self.echo:
            self.out.write(text.rstrip("\n") + "\n" if text is not None else "\n")


@dataclass(slots=True)
class TerminalOutbox:
    clock: Clock
    bot: User
    console: Console
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def send(self, channel: Channel, action: Action) -> Message | None:
        if action.kind is ActionKind.REACT:
            self.console.line(f"  ({self.bot.name} reacted {action.emoji})")
        elif action.kind in (ActionKind.REPLY, ActionKind.ACK):
            self.console.line(f"{self.bot.name}: {action.text or '…'}")
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
        self.console.line(f"  ({self.bot.name} is typing…)")
        yield


def format_trace(d: Decision, now: Any = None) -> str:
    """A decision for `/why`: the headline, then the why in sentences."""
    e = explain(d)
    at = when(d.decided_at, now) if now is not None else clock_time(d.decided_at)
    lines = [f"message {d.message_id} in #{d.channel_id}, decided at {at}: {e.headline}"]
    lines += [f"  {r}" for r in e.rules]
    lines += [f"  · {f}" for f in e.features]
    lines += [f"  llm: {c}" for c in e.calls]
    lines += [f"  {t}" for t in e.tools]
    lines += [f"  guard: {g}" for g in e.guard]
    lines += [f"  → {s}" for s in e.steps]
    lines += [f"  ! {x}" for x in e.errors]
    return "\n".join(lines)


class TerminalRoom:
    def __init__(
        self,
        handle: Callable[[ChatEvent], Any],
        idle: Callable[[], Any],
        clock: Clock,
        console: Console,
        *,
        memory: MemoryReader | None = None,
        jump: Jump | None = None,
        bot_name: str = "Kuu",
    ) -> None:
        self.handle = handle
        self.idle = idle
        self.clock = clock
        self.console = console
        self.memory = memory
        self.jump = jump
        self.bot_name = bot_name
        self.speaker = "you"
        self.channel = Channel("general", "general")
        self.last: Decision | None = None
        self.decisions: OrderedDict[str, list[Decision]] = OrderedDict()
        self._ids = itertools.count(1)

    def on_decision(self, d: Decision) -> None:
        self.last = d
        self.decisions.setdefault(d.message_id, []).append(d)
        self.decisions.move_to_end(d.message_id)
        while len(self.decisions) > KEPT:
            self.decisions.popitem(last=False)

    def prompt(self) -> str:
        return f"{self.speaker} in #{self.channel.name}> "

    async def line(self, raw: str) -> bool:
        """Handle one input line; False means quit."""
        text = raw.strip()
        say = self.console.line
        if not text:
            return True
        if text in ("/quit", "/exit"):
            return False
        if text == "/help":
            say(HELP)
        elif text.startswith("/as "):
            self.speaker = text[4:].strip() or self.speaker
            say(f"(you are now {self.speaker})")
        elif text.startswith("/channel "):
            name = text[9:].strip().lstrip("#") or "general"
            self.channel = Channel(name, name)
            say(f"(now in #{name})")
        elif text == "/why" or text.startswith("/why "):
            say(self._why(text[4:].strip()))
        elif text == "/memory":
            say(await self._memory())
        elif text == "/jump" or text.startswith("/jump "):
            say(await self._jump(text[5:].strip()))
        elif text.startswith("/"):
            say(f"(unknown command {text.split()[0]}; /help lists them)")
        else:
            named, speaker, body = self._split(text)
            if not named:
                say(f"(sent as {speaker} in #{self.channel.name})")
            elif speaker != self.speaker:
                say(f"(you are now {speaker})")
            self.speaker = speaker
            await self._post(speaker, body)
        return True

    def _why(self, wanted: str) -> str:
        """The decisions about message ``wanted`` (its id, or `t2` for the second line
        typed), or the latest decision."""
        now = self.clock.now()
        if not wanted:
            return format_trace(self.last, now) if self.last else "(no decision yet)"
        found = [mid for mid in self.decisions
                 if mid == wanted or mid.startswith(f"{wanted}-")]
        if not found:
            return (f"(no decision about {wanted} yet: your lines are t1, t2, …; a message "
                    "the bot waits on is decided once its burst settles, /jump 1m moves on)")
        return "\n".join(format_trace(d, now) for d in self.decisions[found[-1]])

    async def _memory(self) -> str:
        if self.memory is None:
            return "(this room has no memory layer)"
        try:
            view = render(await self.memory(self.channel.id), bot_name=self.bot_name)
        except Exception as exc:  # shown, and the room goes on
            return f"(memory could not be read: {type(exc).__name__}: {exc})"
        return "\n".join(text_lines(view))

    async def _jump(self, span: str) -> str:
        if self.jump is None:
            return "(this room's clock cannot jump)"
        try:
            seconds = parse_span(span or "5m").total_seconds()
        except ValueError as exc:
            return f"(/jump: {exc})"
        self.console.line(f"(jumping {duration(seconds)} ahead…)")
        await self.jump(seconds)
        await self.idle()
        now = clock_time(self.clock.now())
        return f"(the clock moved {duration(seconds)} ahead: it is now {now})"

    async def _post(self, speaker: str, body: str) -> None:
        user = User(speaker, speaker)
        # Unique across sessions: the store remembers handled ids after a restart.
        mid = f"t{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        msg = Message(mid, self.channel.id, user, body, self.clock.now())
        await self.handle(ChatEvent(EventKind.POSTED, self.channel, mid, msg.ts, message=msg))
        await self.idle()

    def _split(self, text: str) -> tuple[bool, str, str]:
        """(named, speaker, text): a leading `name:` picks the speaker."""
        head, sep, rest = text.partition(":")
        if sep and head and len(head) <= 32 and " " not in head.strip() and rest.strip():
            return True, head.strip(), rest.strip()
        return False, self.speaker, text

    async def run(self, lines: AsyncIterator[str]) -> None:
        self.console.line(HELP)
        while True:
            self.console.ask(self.prompt())
            raw = await anext(lines, None)
            self.console.answered(raw)
            if raw is None:  # end of input (Ctrl-D)
                return
            if not await self.line(raw):
                return


async def stdin_lines(stream: TextIO | None = None) -> AsyncIterator[str]:
    """Lines typed on stdin, read on a daemon thread.

    Not `asyncio.to_thread`: a thread of the default executor blocked in `readline` would
    keep `asyncio.run` from returning after Ctrl-C until Enter was pressed.
    """
    source = stream or sys.stdin
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def put(item: str | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    def pump() -> None:
        try:
            for line in iter(source.readline, ""):
                if not put(line):
                    return
        except (OSError, ValueError):  # stdin closed under us
            pass
        put(None)

    threading.Thread(target=pump, name="kuuki-chat-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line
