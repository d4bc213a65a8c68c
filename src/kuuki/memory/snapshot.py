"""What the bot remembers about one channel, as one value a person can be shown.

`MemoryService.snapshot(channel_id)` builds a `ChannelMemory`: the channel's summary,
mood and topics, its history, recent events and thread summaries (each with when it was
written), the people the bot knows there with their familiarity, the facts, and what it
brought up by itself. Front ends (the playground's memory panel) render it; nothing here
is formatted for a page.

It holds the privacy rule like a prompt for that channel does (kuuki.memory.privacy): a
channel's snapshot shows its own memories, what public channels of its workspace share,
and nothing from a DM or another private channel — not a profile's topics, not a fact.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any

from kuuki.domain import Channel, Visibility
from kuuki.memory.book import MemoryBook
from kuuki.memory.channel_context import ChannelContext
from kuuki.memory.fact_store import FactMemory
from kuuki.memory.facts import decay
from kuuki.memory.jobs import JobRecord, Jobs
from kuuki.memory.privacy import ChannelRegistry
from kuuki.memory.profiles import Profiles
from kuuki.memory.summarizer import Summarizer

LedgerReader = Callable[[str], Awaitable[list[tuple[int, datetime]]]]
MAX_FACTS = 50


@dataclass(frozen=True, slots=True)
class Note:
    """A remembered text and when it was last written."""

    text: str
    updated_at: datetime | None


@dataclass(frozen=True, slots=True)
class ChannelSummary:
    """The channel context: the rolling summary, the mood, the topics."""

    text: str
    mood: str
    topics: tuple[str, ...]
    updated_at: datetime | None


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """The last run of a memory job in this channel: when, and whether it changed memory."""

    at: datetime
    ok: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SummaryProgress:
    """When the next summary comes: every `every_n` messages or `every_minutes`."""

    waiting: int  # messages seen since the last summary, not yet in it
    writing: bool  # a summary is being written right now
    every_n: int
    every_minutes: float
    enabled: bool
    last_attempt: JobOutcome | None


@dataclass(frozen=True, slots=True)
class Person:
    """Someone the bot knows in this channel, as this channel may see them."""

    user_id: str
    name: str
    familiarity: str  # stranger | acquaintance | regular | close
    messages: int
    mentions_of_bot: int
    channels: tuple[str, ...]  # channel names this channel may know they are active in
    topics: tuple[str, ...]
    tags: tuple[str, ...]
    summary: str


@dataclass(frozen=True, slots=True)
class RememberedFact:
    id: int
    text: str
    confidence: float  # as learned, 0..1
    strength: float  # confidence faded by age (what retrieval weighs), 0..1
    learned_at: datetime
    last_used_at: datetime | None
    source_channel: str  # a channel name
    about: tuple[str, ...]  # people's names
    shareable: bool


@dataclass(frozen=True, slots=True)
class Volunteered:
    """One entry of the proactive ledger: a fact the bot brought up here by itself."""

    fact_id: int
    text: str  # "" when the fact has been forgotten since
    at: datetime


@dataclass(frozen=True, slots=True)
class ChannelMemory:
    channel_id: str
    channel_name: str
    visibility: Visibility
    now: datetime
    summary: ChannelSummary | None = None
    history: Note | None = None
    recent_events: Note | None = None
    threads: tuple[tuple[str, Note], ...] = ()
    people: tuple[Person, ...] = ()
    facts: tuple[RememberedFact, ...] = ()
    proactive: tuple[Volunteered, ...] = ()
    progress: SummaryProgress | None = None
    last_proactive_check: JobOutcome | None = None
    half_life_days: float = 30.0

    @classmethod
    def unknown(cls, channel_id: str, now: datetime) -> ChannelMemory:
        """A channel the bot has not seen a message in: nothing remembered."""
        return cls(channel_id, channel_id, Visibility.PUBLIC, now)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (ISO times), for a developer's raw view."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Visibility):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@dataclass(slots=True)
class SnapshotReader:
    """Reads a `ChannelMemory` from the memory layer's parts (no model, no writes)."""

    registry: ChannelRegistry
    book: MemoryBook
    summarizer: Summarizer
    profiles: Profiles
    facts: FactMemory
    jobs: Jobs
    ledger: LedgerReader
    every_n: int
    every_minutes: float
    summaries_enabled: bool
    half_life_days: float

    async def read(self, channel_id: str, now: datetime) -> ChannelMemory:
        channel = self.registry.get(channel_id)
        if channel is None:
            return ChannelMemory.unknown(channel_id, now)
        return ChannelMemory(
            channel_id=channel.id,
            channel_name=channel.name,
            visibility=channel.visibility,
            now=now,
            summary=self._summary(channel),
            history=self._note(channel, "long_term"),
            recent_events=self._note(channel, "short_term"),
            threads=self._threads(channel),
            people=tuple(self._people(channel)),
            facts=tuple(self._facts(channel, now)),
            proactive=tuple(await self._proactive(channel)),
            progress=SummaryProgress(
                waiting=self.summarizer.waiting(channel.id),
                writing=self.summarizer.writing(channel.id),
                every_n=self.every_n,
                every_minutes=self.every_minutes,
                enabled=self.summaries_enabled,
                last_attempt=self._last(self.jobs.of("summary"), channel.id),
            ),
            last_proactive_check=self._last(self.jobs.of("proactive"), channel.id),
            half_life_days=self.half_life_days,
        )

    def _summary(self, channel: Channel) -> ChannelSummary | None:
        rec = self.book.get("channel", channel.id, "context")
        if rec is None or not self.book.visible(channel, rec):
            return None
        ctx = self.summarizer.context(channel.id) or ChannelContext.from_json(
            channel.id, rec.content)
        if ctx.empty:
            return None
        return ChannelSummary(ctx.summary, ctx.mood, tuple(ctx.topic_keywords),
                              ctx.last_updated or rec.updated_at)

    def _note(self, channel: Channel, kind: str) -> Note | None:
        rec = self.book.get("channel", channel.id, kind)
        if rec is None or not self.book.visible(channel, rec) or not isinstance(rec.content, str):
            return None
        return Note(rec.content, rec.updated_at) if rec.content.strip() else None

    def _threads(self, channel: Channel) -> tuple[tuple[str, Note], ...]:
        return tuple(
            (rec.scope_id.split(":", 1)[1], Note(rec.content, rec.updated_at))
            for rec in reversed(self.book.threads_of(channel.id))
            if self.book.visible(channel, rec) and isinstance(rec.content, str)
        )

    def _people(self, channel: Channel) -> list[Person]:
        people = []
        for user_id in self.profiles.known_in(channel.id):
            seen = self.profiles.visible(user_id, channel)
            if seen is None:
                continue
            people.append(Person(
                user_id=user_id, name=seen.name, familiarity=seen.level,
                messages=seen.interaction_count, mentions_of_bot=seen.mentioned_bot_count,
                channels=tuple(seen.channels), topics=tuple(seen.topics),
                tags=tuple(seen.tags), summary=seen.summary,
            ))
        return people

    def _name(self, user_id: str) -> str:
        p = self.profiles.get(user_id)
        return p.display_name if p is not None else user_id

    def _channel_name(self, channel_id: str | None) -> str:
        ch = self.registry.get(channel_id)
        return ch.name if ch is not None else (channel_id or "?")

    def _facts(self, channel: Channel, now: datetime) -> list[RememberedFact]:
        out = []
        for f in self.facts.visible_in(channel):
            age_days = (now - f.created_at).total_seconds() / 86400.0
            strength = float(f.confidence * decay(age_days, self.half_life_days))
            out.append(RememberedFact(
                id=f.id, text=f.content, confidence=f.confidence, strength=strength,
                learned_at=f.created_at, last_used_at=f.last_used_at,
                source_channel=self._channel_name(f.source_channel_id),
                about=tuple(self._name(u) for u in f.source_user_ids), shareable=f.shareable,
            ))
        out.sort(key=lambda f: f.learned_at, reverse=True)
        return out[:MAX_FACTS]

    async def _proactive(self, channel: Channel) -> list[Volunteered]:
        known = {f.id: f.content for f in self.facts.visible_in(channel)}
        return [Volunteered(fact_id, known.get(fact_id, ""), at)
                for fact_id, at in await self.ledger(channel.id)]

    @staticmethod
    def _last(records: list[JobRecord], channel_id: str) -> JobOutcome | None:
        for rec in reversed(records):
            if rec.channel_id == channel_id:
                return JobOutcome(rec.at, rec.ok, rec.reason)
        return None
