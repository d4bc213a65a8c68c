"""Reflection ("反省会"): after a lull, the LLM turns new messages into facts and profile notes.

Triggers (seed 002): REFLECTION_LULL_MINUTES without a message in the channel, or
REFLECTION_MAX_BUFFER_MESSAGES new messages piling up — and in both cases only with at
least REFLECTION_MIN_MESSAGES new human messages. The messages come from the store's
``reflected = false`` backlog and are marked reflected once their result is stored, so a
message is reflected on at most once, across restarts too. A bad answer marks nothing:
memory stays as it was and the messages wait for the next reflection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from kuuki.clock import Clock, TimerHandle
from kuuki.domain import Channel, GuardRecord, Message
from kuuki.guard.memory import MemoryCheck, channel_language
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage
from kuuki.llm.record import PromptDump, call_llm
from kuuki.memory.fact_store import FactMemory, NewFact
from kuuki.memory.jobs import JobRecord, Jobs, completion_text, failure_reason, trace_for
from kuuki.memory.profiles import Profiles
from kuuki.memory.summary_answers import has_words
from kuuki.prompts import Prompts

_STR_LIST = {"type": "array", "items": {"type": "string"}, "maxItems": 8}
REFLECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 3},
                    "about": _STR_LIST,
                    "keywords": _STR_LIST,
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "shareable": {"type": "boolean"},
                },
                "required": ["content", "about", "keywords", "confidence", "shareable"],
            },
        },
        "people": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "tags": _STR_LIST,
                    "summary": {"type": "string"},
                },
                "required": ["name", "tags", "summary"],
            },
        },
    },
    "required": ["facts", "people"],
}


class BacklogPort(Protocol):
    """The store's reflection backlog (its messages part)."""

    async def unreflected_messages(self, channel_id: str, limit: int = 200) -> list[Message]: ...

    async def mark_reflected(self, message_ids: Sequence[str]) -> None: ...


class TombstonesPort(Protocol):
    """Who is forgotten (the store's forgetting part)."""

    async def forgotten_users(self) -> dict[str, datetime]: ...


class Reflector:
    """Schedules and runs reflection per channel."""

    def __init__(
        self,
        *,
        llm: LLM | None,
        prompts: Prompts,
        backlog: BacklogPort,
        tombstones: TombstonesPort,
        facts: FactMemory,
        profiles: Profiles,
        clock: Clock,
        jobs: Jobs,
        persona_name: str,
        lull_minutes: float,
        min_messages: int,
        max_buffer: int,
        profiles_enabled: bool = True,
        dump: PromptDump | None = None,
        max_tokens: int = 500,
        scaffold: Scaffold | None = None,
        languages: frozenset[str] = frozenset({"ja", "en"}),
    ) -> None:
        self.llm = llm
        self.prompts = prompts
        self.scaffold = scaffold or Scaffold.from_prompts(prompts)
        self.languages = languages  # what the model writes; other channels are skipped
        self.backlog = backlog
        self.tombstones = tombstones
        self.facts = facts
        self.profiles = profiles
        self.clock = clock
        self.jobs = jobs
        self.persona_name = persona_name
        self.lull_s = lull_minutes * 60
        self.min_messages = min_messages
        self.max_buffer = max_buffer
        self.profiles_enabled = profiles_enabled
        self.dump = dump
        self.max_tokens = max_tokens
        self._counts: dict[str, int] = {}
        self._timers: dict[str, TimerHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def observe(self, channel: Channel, msg: Message) -> None:
        if self.llm is None:
            return
        self._counts[channel.id] = self._counts.get(channel.id, 0) + 1
        old = self._timers.pop(channel.id, None)
        if old is not None:
            old.cancel()
        if self._counts[channel.id] >= self.max_buffer:
            self.trigger(channel, "backlog")
            return

        async def lull() -> None:
            self._timers.pop(channel.id, None)
            self.trigger(channel, "lull")

        self._timers[channel.id] = self.clock.call_later(self.lull_s, lull)

    def trigger(self, channel: Channel, why: str) -> None:
        # The count is of unreflected messages; a backlog trigger restarts it so a failing
        # reflection is retried after another full backlog, not on every message.
        if why == "backlog":
            self._counts[channel.id] = 0
        self.jobs.spawn(f"reflection-{channel.id}", lambda: self.reflect(channel, why))

    async def reflect(self, channel: Channel, why: str = "asked") -> int:
        """Reflect on the channel's backlog; returns how many messages were marked."""
        assert self.llm is not None
        lock = self._locks.setdefault(channel.id, asyncio.Lock())
        async with lock:  # two triggers must never read the same backlog
            marked = 0
            while True:
                batch = await self.backlog.unreflected_messages(channel.id, self.max_buffer)
                done = await self._reflect_batch(channel, batch, why)
                marked += done
                if done:
                    self._counts[channel.id] = 0
                if done == 0 or len(batch) < self.max_buffer:
                    return marked

    async def _reflect_batch(self, channel: Channel, batch: list[Message], why: str) -> int:
        assert self.llm is not None
        now = self.clock.now()
        humans = [m for m in batch if not m.user.is_bot and m.text.strip()]
        if len(humans) < self.min_messages:
            self._record(channel, now, False, f"{why}: only {len(humans)} new messages", None,
                         skipped=True)
            return 0
        trace = trace_for("reflection", channel.id, now)
        lang = channel_language([m.text for m in humans], self.prompts.language)
        if lang not in self.languages:
            await self.backlog.mark_reflected([m.id for m in batch])
            self._record(channel, now, False, f"{why}: skipped: {self.llm.name} does not "
                         f"write {lang}", None, skipped=True)
            return len(batch)
        system = self.prompts.render(
            "reflection", language=lang, persona_name=self.persona_name, channel=channel,
            messages=batch, now=now,
        )
        completion = await call_llm(
            self.llm, trace, "memory_reflection", [ChatMessage("system", system)],
            json_schema=REFLECTION_SCHEMA, max_tokens=self.max_tokens, temperature=0.2,
            dump=self._dump(channel.id),
        )
        data = completion.data if completion is not None else None
        if not isinstance(data, dict):
            self._record(channel, now, False, failure_reason(trace, "no answer"), trace)
            return 0
        check = _checked(MemoryCheck(self.scaffold, lang), data)
        trace.guard.append(GuardRecord("reflection", check.ok, "" if check.ok else "memory",
                                       check.reason(), completion_text(completion)))
        if not check.ok:
            self._record(channel, now, False, f"{why}: rejected: {check.reason()}", trace)
            return 0
        # Someone in the batch forgotten while the model read it (from another process,
        # kuuki.store.forgetting): what it learned may quote them. Their messages are gone
        # from the store; the rest is reflected on next time.
        gone = set(await self.tombstones.forgotten_users())
        if any(m.user.id in gone for m in humans):
            self._record(channel, now, False, f"{why}: discarded: someone in it was forgotten",
                         trace)
            return 0
        ids_by_name = _speakers(humans)
        new_facts = [f for f in (_fact(item, ids_by_name) for item in data["facts"]) if f]
        added = await self.facts.add_many(channel, new_facts, now)
        learned = 0
        if self.profiles_enabled:
            for person in data["people"]:
                uid = ids_by_name.get(str(person["name"]).strip().lower())
                tags = [t.strip() for t in person["tags"] if has_words(str(t))]
                summary = str(person["summary"]).strip()[:300]
                if uid is not None and (tags or has_words(summary)):
                    self.profiles.learn(uid, channel, tags, summary if has_words(summary)
                                        else "", now)
                    learned += 1
        await self.backlog.mark_reflected([m.id for m in batch])
        self._record(channel, now, True,
                     f"{why}: {len(batch)} messages → {added} new facts, {learned} people", trace)
        return len(batch)

    def _record(
        self, channel: Channel, now: datetime, ok: bool, reason: str, trace: Any,
        *, skipped: bool = False,
    ) -> None:
        self.jobs.record(JobRecord("reflection", channel.id, now, ok, reason, trace, skipped))

    def _dump(self, label: str) -> PromptDump | None:
        dump = self.dump
        if dump is None:
            return None
        return lambda purpose, messages: dump(f"{label}-{purpose}", messages)

    def cancel_timers(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()


def _checked(check: MemoryCheck, data: dict[str, Any]) -> MemoryCheck:
    """Every fact and every note about a person of one reflection, through the guard."""
    contents = [str(item["content"]) for item in data["facts"]]
    check.items("facts", contents)
    for item in data["facts"]:
        check.text("fact", str(item["content"]))
        check.items("fact keywords", item["keywords"], keywords=True)
    for person in data["people"]:
        check.items(f"tags of {person['name']}", person["tags"], keywords=True)
        check.text(f"summary of {person['name']}", str(person["summary"]), required=False)
    return check


def _speakers(messages: Sequence[Message]) -> dict[str, str]:
    """Display names and ids (lower case) → user id, for the LLM's "about" lists."""
    out: dict[str, str] = {}
    for m in messages:
        out[m.user.name.strip().lower()] = m.user.id
        out[m.user.id.lower()] = m.user.id
    return out


def _fact(item: dict[str, Any], ids_by_name: dict[str, str]) -> NewFact | None:
    content = str(item["content"]).strip()[:300]
    if not has_words(content):
        return None
    about = [ids_by_name[n] for a in item["about"] if (n := str(a).strip().lower()) in ids_by_name]
    # A fact about nobody in particular belongs to everyone who was talking, so that
    # forgetting any one of them removes them from its sources.
    sources = tuple(dict.fromkeys(about or ids_by_name.values()))
    return NewFact(
        content=content,
        source_user_ids=sources,
        keywords=tuple(str(k).strip()[:40] for k in item["keywords"] if has_words(str(k))),
        confidence=float(item["confidence"]),
        shareable=bool(item["shareable"]),
    )
