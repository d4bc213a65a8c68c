"""The playground's room: who is in it, what was said, and the bot's hands (the Outbox).

The room is the adapter between the page and the engine. It turns what a person types
into ChatEvents, performs the bot's actions (a message, an ack, a reaction on a message,
a typing indicator) by telling every open page through the `Hub`, and keeps the whole
timeline in the transcript format (DESIGN §5) so it can be exported as it happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kuuki.clock import Clock
from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    ChatEvent,
    EventKind,
    Message,
    User,
    Visibility,
)
from kuuki.llm.base import ChatMessage, render_messages
from kuuki.settings import Persona

_NAME = re.compile(r"^[\w][\w .\-]{0,31}$")
_MENTION = re.compile(r"@([\w.\-]+)")
MAX_TEXT = 4000
PROMPTS_KEPT = 300


class RoomError(ValueError):
    """A request the room cannot honour; the message is shown to the person as is."""


class Hub:
    """Fan-out of server messages to every open page, one queue per page."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[str]] = set()

    def subscribe(self) -> asyncio.Queue[str]:
        q: asyncio.Queue[str] = asyncio.Queue()
        self._queues.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[str]) -> None:
        self._queues.discard(q)

    def publish(self, payload: dict[str, Any]) -> None:
        text = dumps(payload)
        for q in self._queues:
            q.put_nowait(text)


def dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


class Room:
    """Participants, channels and the timeline; also the engine's Outbox."""

    def __init__(self, persona: Persona, clock: Clock, hub: Hub) -> None:
        self.persona = persona
        self.clock = clock
        self.hub = hub
        self.bot = User(persona.name, persona.name, is_bot=True)
        self.participants: list[str] = ["alice", "bob"]
        self.channels: dict[str, Channel] = {}
        self.messages: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.lines: list[tuple[datetime, dict[str, Any]]] = []
        self.prompts: OrderedDict[str, str] = OrderedDict()
        self._unclaimed: dict[str, deque[str]] = {}
        self.typing_now: Counter[str] = Counter()
        self._user_ids = itertools.count(1)
        self._bot_ids = itertools.count(1)
        self.add_channel("general", Visibility.PUBLIC, announce=False)
        self.add_channel("random", Visibility.PUBLIC, announce=False)

    # -- people and places -----------------------------------------------------------------

    def add_participant(self, name: str, *, announce: bool = True) -> str:
        name = name.strip()
        if not _NAME.match(name):
            raise RoomError("a name is 1 to 32 letters, digits, spaces, dots or dashes")
        if name.casefold() in (n.casefold() for n in self.persona.names):
            raise RoomError(f"{name} is the bot's name; pick another")
        if name not in self.participants:
            self.participants.append(name)
            if announce:
                self.hub.publish({"type": "participants", "participants": self.participants})
        return name

    def add_channel(
        self, name: str, visibility: Visibility | str, *, announce: bool = True
    ) -> Channel:
        name = name.strip().lstrip("#").strip()
        if not _NAME.match(name) or " " in name:
            raise RoomError("a channel name is 1 to 32 letters, digits, dots or dashes")
        try:
            vis = Visibility(visibility)
        except ValueError as exc:
            raise RoomError("visibility is public, private or dm") from exc
        channel = self.channels.get(name)
        if channel is None or channel.visibility is not vis:
            channel = Channel(name, name, vis, platform="playground")
            self.channels[name] = channel
            if announce:
                self.hub.publish({"type": "channels", "channels": self.channel_list()})
        return channel

    def channel_list(self) -> list[dict[str, str]]:
        return [{"id": c.id, "visibility": c.visibility.value} for c in self.channels.values()]

    def channel(self, channel_id: str) -> Channel:
        channel = self.channels.get(channel_id)
        if channel is None:
            raise RoomError(f"no channel #{channel_id}; add it first")
        return channel

    # -- what people say ----------------------------------------------------------------------

    def compose(
        self, user: str, channel_id: str, text: str, reply_to: str | None = None
    ) -> ChatEvent:
        """A message typed on the page, as the ChatEvent a platform would deliver."""
        channel = self.channel(channel_id)
        name = self.add_participant(user)
        text = text.strip()
        if not text:
            raise RoomError("say something first")
        if len(text) > MAX_TEXT:
            raise RoomError(f"a message is at most {MAX_TEXT} characters")
        if reply_to is not None and reply_to not in self.messages:
            raise RoomError(f"no message {reply_to} to reply to")
        mid = self._new_id()
        author = User(name, name)
        msg = Message(
            mid,
            channel.id,
            author,
            text,
            self.clock.now(),
            reply_to=reply_to,
            mentions=self._mentions(text),
        )
        return ChatEvent(EventKind.POSTED, channel, mid, msg.ts, message=msg, user=author)

    def _new_id(self) -> str:
        while (mid := f"p{next(self._user_ids)}") in self.messages:
            pass
        return mid

    def _mentions(self, text: str) -> tuple[str, ...]:
        known = {n.casefold(): n for n in (*self.persona.names, *self.participants)}
        found = [known[m.casefold()] for m in _MENTION.findall(text) if m.casefold() in known]
        return tuple(dict.fromkeys(found))

    def has_message(self, message_id: str) -> bool:
        return message_id in self.messages

    def record(self, event: ChatEvent) -> ChatEvent:
        """Put an incoming event on the timeline, show it on every page, and return it as
        the engine should see it: never earlier than the clock, so the timeline stays in
        time order."""
        at = max(event.at, self.clock.now()).astimezone(UTC)
        event = replace(event, at=at)
        ch = event.channel.id
        vis = event.channel.visibility
        if event.kind is EventKind.POSTED and event.message is not None:
            m = replace(event.message, ts=at)
            event = replace(event, message=m)
            own = m.user.id == self.bot.id
            if not m.user.is_bot and m.user.id not in self.participants:
                self.participants.append(m.user.id)
                self.hub.publish({"type": "participants", "participants": self.participants})
            self._add_message(m, vis, bot=own, other_bot=m.user.is_bot and not own)
            return event
        target = event.target_id or ""
        user = event.user.id if event.user else "?"
        line: dict[str, Any] = {"t": at.isoformat(), "channel": ch, "user": user, "target": target}
        view = self.messages.get(target)
        if event.kind is EventKind.EDITED:
            line.update(kind="edit", text=event.text or "")
            if view is not None:
                view.update(text=event.text or "", edited=True)
                self.hub.publish({"type": "edit", "message": view})
        elif event.kind is EventKind.DELETED:
            line.update(kind="delete")
            if view is not None:
                view.update(deleted=True)
                self.hub.publish({"type": "edit", "message": view})
        elif event.kind is EventKind.REACTION_ADDED:
            line.update(kind="reaction", emoji=event.emoji or "")
            self._add_reaction(target, event.emoji or "", user)
        self._line(line, vis)
        return event

    def _add_message(
        self, m: Message, vis: Visibility, *, bot: bool, other_bot: bool = False, kind: str = ""
    ) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": m.id,
            "channel": m.channel_id,
            "user": m.user.name,
            "text": m.text,
            "t": m.ts.isoformat(),
            "bot": bot,
            "other_bot": other_bot,
            "kind": kind,
            "reply_to": m.reply_to,
            "thread": m.thread,
            "mentions": list(m.mentions),
            "reactions": [],
            "conversation": None,
            "decision": None,
            "edited": False,
            "deleted": False,
        }
        self.messages[m.id] = view
        line: dict[str, Any] = {
            "id": m.id,
            "t": m.ts.isoformat(),
            "channel": m.channel_id,
            "user": m.user.name,
            "text": m.text,
        }
        for key in ("reply_to", "thread"):
            if getattr(m, key):
                line[key] = getattr(m, key)
        if m.mentions:
            line["mentions"] = list(m.mentions)
        if other_bot:
            line["bot"] = True
        self._line(line, vis)
        self.hub.publish({"type": "message", "message": view})
        return view

    def _add_reaction(self, target: str, emoji: str, user: str) -> None:
        view = self.messages.get(target)
        if view is None:
            return
        view["reactions"].append({"emoji": emoji, "user": user})
        self.hub.publish({"type": "reaction", "message_id": target, "emoji": emoji, "user": user})

    def _line(self, line: dict[str, Any], vis: Visibility) -> None:
        if vis is not Visibility.PUBLIC:
            line["channel_visibility"] = vis.value
        self.lines.append((datetime.fromisoformat(line["t"]), line))

    # -- the bot's hands (Outbox) ---------------------------------------------------------------

    async def send(self, channel: Channel, action: Action) -> Message | None:
        now = self.clock.now()
        if action.kind is ActionKind.REACT:
            target = action.target_message_id or ""
            self._add_reaction(target, action.emoji or "👀", self.bot.name)
            self._line(
                {
                    "t": now.isoformat(),
                    "channel": channel.id,
                    "user": self.bot.name,
                    "kind": "reaction",
                    "target": target,
                    "emoji": action.emoji or "👀",
                },
                channel.visibility,
            )
            return None
        if action.kind not in (ActionKind.REPLY, ActionKind.ACK):
            return None
        mid = f"{self.bot.name}-{next(self._bot_ids)}"
        msg = Message(
            mid,
            channel.id,
            self.bot,
            action.text or "",
            now,
            reply_to=action.reply_to,
            thread=action.thread,
        )
        self._add_message(msg, channel.visibility, bot=True, kind=action.kind.value)
        return msg

    @contextlib.asynccontextmanager
    async def typing(self, channel: Channel) -> AsyncIterator[None]:
        self.typing_now[channel.id] += 1
        self.hub.publish({"type": "typing", "channel": channel.id, "on": True})
        try:
            yield
        finally:
            self.typing_now[channel.id] -= 1
            if self.typing_now[channel.id] <= 0:
                del self.typing_now[channel.id]
                self.hub.publish({"type": "typing", "channel": channel.id, "on": False})

    # -- prompts, kept for "show prompt" -------------------------------------------------

    def dump_prompt(self, label: str, messages: Sequence[ChatMessage]) -> None:
        """A PromptDump: remembers the latest prompts by `channel-message-purpose` label.

        The reply generator labels its prompts that way; a caller that passes only the
        purpose (the judge's LLM stage) has its prompts parked until `claim_prompt` pairs
        them, in order, with the decision's LLM calls of that purpose.
        """
        text = render_messages(messages)
        if any(label.startswith(f"{c}-") for c in self.channels):
            self._keep(label, text)
        else:
            self._unclaimed.setdefault(label, deque(maxlen=50)).append(text)

    def claim_prompt(self, key: str, purpose: str) -> None:
        parked = self._unclaimed.get(purpose)
        if key not in self.prompts and parked:
            self._keep(key, parked.popleft())

    def _keep(self, key: str, text: str) -> None:
        self.prompts[key] = text
        self.prompts.move_to_end(key)
        while len(self.prompts) > PROMPTS_KEPT:
            self.prompts.popitem(last=False)

    # -- export ---------------------------------------------------------------------------

    def export_lines(self) -> list[str]:
        """The room as a transcript (DESIGN §5): setup line, then every event in time order."""
        p = self.persona
        setup = {
            "setup": {
                "bot": p.name,
                "aliases": list(p.aliases),
                "language": p.default_language,
                "keywords": list(p.keywords),
            }
        }
        ordered = sorted(self.lines, key=lambda item: item[0])  # stable: ties keep their order
        return [dumps(setup), *(dumps(line) for _, line in ordered)]
