"""User profiles: counters, familiarity, recent topics, and what reflection learned.

Counters change on every message, in memory; keyword extraction and persistence happen in
`flush` (called by the service's periodic maintenance and on close), never on the message
path. "Talked to the bot" counts the messages the engine judged addressed to it, once
each — not every message that names it in passing: a platform @mention of the bot (always
addressed) as it is seen, the others (its name called, a reply to it, a DM, its thread, by
context) from the finished decision (`addressed`).
Everything learned from a channel — topics, tags, the last conversation summary — is
kept per source channel, so rendering a profile for a prompt can drop what came from a
DM or another private channel.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kuuki.domain import Channel, Message, Visibility
from kuuki.memory.book import MemoryStorePort
from kuuki.memory.keywords import topics
from kuuki.memory.privacy import ChannelRegistry, may_show_channel
from kuuki.store.records import MemoryDocument
from kuuki.text.quoted import own_words

LEVELS = ("stranger", "acquaintance", "regular", "close")
MAX_TOPICS = 6
MAX_TAGS = 8
PENDING_TEXTS = 10
AUTHORS_KEPT = 4096  # recent messages whose author a decision about them can still find


def familiarity(count: int, thresholds: tuple[int, int, int]) -> str:
    """stranger 0-5 / acquaintance 6-30 / regular 31-100 / close 101+ (default thresholds)."""
    level = sum(1 for t in thresholds if count >= t)
    return LEVELS[level]


@dataclass(slots=True)
class UserProfile:
    """Seed 002's user profile, with per-channel sources for what was learned."""

    user_id: str
    display_name: str
    interaction_count: int = 0
    mentioned_bot_count: int = 0
    channels_active: list[str] = field(default_factory=list)
    last_interaction: datetime | None = None
    # channel id → {"keywords": [...], "at": iso}
    last_topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    # channel id → [tag, ...] (from reflection)
    tags: dict[str, list[str]] = field(default_factory=dict)
    # channel id → {"text": ..., "at": iso} (from reflection)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "displayName": self.display_name,
            "interactionCount": self.interaction_count,
            "mentionedBotCount": self.mentioned_bot_count,
            "channelsActive": list(self.channels_active),
            "lastInteraction": self.last_interaction.isoformat()
            if self.last_interaction
            else None,
            "lastTopic": self.last_topics,
            "tags": self.tags,
            "lastConversationSummary": self.summaries,
        }

    @classmethod
    def from_json(cls, user_id: str, data: Any) -> UserProfile:
        data = data if isinstance(data, dict) else {}
        last = data.get("lastInteraction")
        return cls(
            user_id=user_id,
            display_name=str(data.get("displayName") or user_id),
            interaction_count=int(data.get("interactionCount") or 0),
            mentioned_bot_count=int(data.get("mentionedBotCount") or 0),
            channels_active=[str(c) for c in data.get("channelsActive") or []],
            last_interaction=datetime.fromisoformat(last) if last else None,
            last_topics=dict(data.get("lastTopic") or {}),
            tags={k: list(v) for k, v in (data.get("tags") or {}).items()},
            summaries=dict(data.get("lastConversationSummary") or {}),
        )


@dataclass(frozen=True, slots=True)
class ProfileFacts:
    """A profile as one channel may see it (the privacy rule already applied)."""

    name: str
    level: str
    interaction_count: int
    mentioned_bot_count: int
    channels: list[str]
    topics: list[str]
    tags: list[str]
    summary: str


class Profiles:
    """Every known user's profile; persisted as ``user/<id>/profile`` documents."""

    def __init__(
        self,
        store: MemoryStorePort,
        registry: ChannelRegistry,
        *,
        thresholds: tuple[int, int, int],
        bot_names: tuple[str, ...],
        bot_ids: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.registry = registry
        self.thresholds = thresholds
        self.bot_names = tuple(n.lower() for n in bot_names)
        self.bot_ids = set(bot_ids) | set(bot_names)
        self._profiles: dict[str, UserProfile] = {}
        self._dirty: set[str] = set()
        self._pending: dict[tuple[str, str], list[str]] = {}  # (user, channel) → texts
        self._authors: OrderedDict[str, str] = OrderedDict()  # message id → author id

    async def load(self) -> int:
        self._profiles = {
            rec.scope_id: UserProfile.from_json(rec.scope_id, rec.content)
            for rec in await self.store.memories("user", kind="profile")
        }
        return len(self._profiles)

    def get(self, user_id: str) -> UserProfile | None:
        return self._profiles.get(user_id)

    def all(self) -> list[UserProfile]:
        return list(self._profiles.values())

    def known_in(self, channel_id: str) -> list[str]:
        """Ids of the people seen talking in a channel, the most recently active first."""
        found = [p for p in self._profiles.values() if channel_id in p.channels_active]
        found.sort(key=lambda p: p.last_interaction.timestamp() if p.last_interaction else 0.0,
                   reverse=True)
        return [p.user_id for p in found]

    def observe(self, channel: Channel, msg: Message) -> None:
        """Count one human message (cheap: no I/O, no analysis)."""
        p = self._profiles.get(msg.user.id)
        if p is None:
            p = self._profiles[msg.user.id] = UserProfile(msg.user.id, msg.user.name)
        p.display_name = msg.user.name
        p.interaction_count += 1
        if any(m in self.bot_ids for m in msg.mentions):
            p.mentioned_bot_count += 1  # an @mention is always addressed: counted now
        self._authors[msg.id] = msg.user.id
        if len(self._authors) > AUTHORS_KEPT:
            self._authors.popitem(last=False)
        if channel.id in p.channels_active:
            p.channels_active.remove(channel.id)
        p.channels_active.append(channel.id)
        p.last_interaction = msg.ts
        texts = self._pending.setdefault((msg.user.id, channel.id), [])
        texts.append(own_words(msg.text))  # a forward or share is not their words
        del texts[:-PENDING_TEXTS]
        self._dirty.add(msg.user.id)

    def addressed(self, message_id: str, kind: str) -> bool:
        """The engine judged this message addressed to the bot (``kind``: how): its author
        talked to the bot (counted once a message, however many decisions it gets; an
        @mention was counted when it was seen)."""
        user_id = self._authors.pop(message_id, None)
        p = self._profiles.get(user_id) if user_id is not None else None
        if p is None or kind == "mention":
            return False
        p.mentioned_bot_count += 1
        self._dirty.add(p.user_id)
        return True

    def learn(self, user_id: str, channel: Channel, tags: list[str], summary: str, at: datetime)\
            -> None:
        """What reflection concluded about a user in ``channel``."""
        p = self._profiles.get(user_id)
        if p is None:
            return
        if tags:
            merged = list(dict.fromkeys([*tags, *p.tags.get(channel.id, [])]))
            p.tags[channel.id] = merged[:MAX_TAGS]
        if summary:
            p.summaries[channel.id] = {"text": summary, "at": at.isoformat()}
        self._dirty.add(user_id)

    async def flush(self, now: datetime) -> int:
        """Extract pending topics and persist changed profiles; returns how many written.

        The topics are read in a worker thread (janome takes about a millisecond a
        Japanese message: a flush of thousands of people would hold the event loop for
        seconds), and every changed profile is written in one transaction."""
        pending, self._pending = self._pending, {}
        learned = await asyncio.to_thread(self._topics, pending) if pending else {}
        for (user_id, channel_id), words in learned.items():
            p = self._profiles.get(user_id)  # None: forgotten while the topics were read
            if p is not None and words:
                p.last_topics[channel_id] = {"keywords": words, "at": now.isoformat()}
        dirty, self._dirty = self._dirty, set()
        documents = [
            MemoryDocument(user_id, p.to_json(), (user_id,))
            for user_id in dirty if (p := self._profiles.get(user_id)) is not None
        ]
        try:
            if documents:
                # The document mixes channels; the renderer filters per entry, and the
                # record itself is private so no generic reader can leak it.
                await self.store.set_memories(
                    "user", "profile", documents, visibility=Visibility.PRIVATE, at=now)
        except BaseException:
            self._dirty |= dirty  # still to be written: the next flush tries again
            raise
        return len(dirty)

    def _topics(self, pending: dict[tuple[str, str], list[str]]) \
            -> dict[tuple[str, str], list[str]]:
        """Each (user, channel)'s topics from their pending texts (no shared state: runs
        in a worker thread)."""
        # The bot's own name is how people call it, not what they talk about.
        return {
            key: [w for w in topics(texts, limit=MAX_TOPICS + len(self.bot_names))
                  if w.lower() not in self.bot_names][:MAX_TOPICS]
            for key, texts in pending.items()
        }

    def forget(self, user_id: str) -> bool:
        self._dirty.discard(user_id)
        for key in [k for k in self._pending if k[0] == user_id]:
            del self._pending[key]
        return self._profiles.pop(user_id, None) is not None

    def drop_summaries(self, channel_ids: set[str]) -> int:
        """Drop everyone's "last conversation" note from these channels (a forgotten person
        spoke there, and the note may quote them); returns how many profiles changed."""
        changed = 0
        for p in self._profiles.values():
            if channel_ids & set(p.summaries):
                p.summaries = {c: e for c, e in p.summaries.items() if c not in channel_ids}
                self._dirty.add(p.user_id)
                changed += 1
        return changed

    def visible(self, user_id: str, target: Channel) -> ProfileFacts | None:
        """The profile as a prompt for ``target`` may show it."""
        p = self._profiles.get(user_id)
        if p is None:
            return None

        def ok(channel_id: str) -> bool:
            return may_show_channel(target, self.registry.get(channel_id))

        channels = [c for c in p.channels_active if ok(c)]
        names = [ch.name for c in channels if (ch := self.registry.get(c)) is not None]
        topic_entries = sorted(
            ((c, t) for c, t in p.last_topics.items() if ok(c)),
            key=lambda ct: (ct[0] == target.id, str(ct[1].get("at", ""))),
        )
        topics = list(topic_entries[-1][1].get("keywords", [])) if topic_entries else []
        tags = list(dict.fromkeys(t for c, ts in p.tags.items() if ok(c) for t in ts))
        summary_entries = sorted(
            ((c, s) for c, s in p.summaries.items() if ok(c)),
            key=lambda cs: str(cs[1].get("at", "")),
        )
        return ProfileFacts(
            name=p.display_name,
            level=familiarity(p.interaction_count, self.thresholds),
            interaction_count=p.interaction_count,
            mentioned_bot_count=p.mentioned_bot_count,
            channels=names,
            topics=topics,
            tags=tags[:MAX_TAGS],
            summary=str(summary_entries[-1][1].get("text", "")) if summary_entries else "",
        )
