"""`MemoryProvider` for the reply and judge prompts: memories broad → narrow, privacy applied.

Fills a PromptContext with, in the order the context template renders them: workspace
history and recent events, the channel list, each visible channel's history and recent
events, the current channel's thread summaries, the channel's situation, the speaker's
profile, and — only for generation, i.e. after the decision to speak — the facts related
to the trigger message and its speaker. Everything comes from in-memory caches; the only
store write (noting that a fact was used) is left to a background job.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from kuuki.domain import Channel, DecisionTrace, Visibility
from kuuki.memory.book import MemoryBook
from kuuki.memory.context import ChannelMemoryView, PromptContext, UserView
from kuuki.memory.fact_store import FactMemory
from kuuki.memory.jobs import Jobs
from kuuki.memory.keywords import keyword_set, keywords
from kuuki.memory.privacy import ChannelRegistry, may_show_channel
from kuuki.memory.profiles import Profiles
from kuuki.memory.summarizer import Summarizer
from kuuki.prompts import Prompts

MAX_CHANNELS = 20
MAX_THREADS = 5


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One remembered thing that answers a search: where it is from and what it says."""

    kind: str  # "fact", "channel memory", "thread memory", "workspace memory", "profile"
    source: str  # "#general", "thread 1712", "alice", "workspace"
    text: str
    score: float


class MemoryContextProvider:
    """Implements ``kuuki.respond.responder.MemoryProvider`` over the memory layer's caches.

    ``retrieve_facts`` is on for the responder and off for the judge: facts are looked up
    only once the bot has decided to speak (seed 002), so judging costs no retrieval.
    """

    def __init__(
        self,
        *,
        book: MemoryBook,
        registry: ChannelRegistry,
        summarizer: Summarizer,
        profiles: Profiles,
        facts: FactMemory,
        prompts: Prompts,
        jobs: Jobs,
        channel_context: bool,
        user_profiles: bool,
        retrieve_facts: bool,
        fact_limit: int = 3,
        touch: Callable[[int, datetime], Awaitable[None]] | None = None,
    ) -> None:
        self.book = book
        self.registry = registry
        self.summarizer = summarizer
        self.profiles = profiles
        self.facts = facts
        self.prompts = prompts
        self.jobs = jobs
        self.channel_context = channel_context
        self.user_profiles = user_profiles
        self.retrieve_facts = retrieve_facts
        self.fact_limit = fact_limit
        self.touch = touch

    async def fill(self, ctx: PromptContext, trace: DecisionTrace) -> None:
        ch = ctx.channel
        shown: list[str] = []
        for kind in ("long_term", "short_term"):
            rec = self.book.get("workspace", ch.workspace, kind)
            if self.book.visible(ch, rec) and rec is not None and isinstance(rec.content, str):
                if kind == "long_term":
                    ctx.workspace_long_term = rec.content
                else:
                    ctx.workspace_short_term = rec.content
                shown.append(f"workspace {kind}")
        ctx.channels = self._channels(ch)
        shown += [f"#{c.name}" for c in ctx.channels if c.has_memory]
        threads: dict[str, str] = {}
        for rec in self.book.threads_of(ch.id, MAX_THREADS):
            if self.book.visible(ch, rec) and isinstance(rec.content, str):
                threads[rec.scope_id.split(":", 1)[1]] = rec.content
        ctx.thread_memories = threads
        if self.channel_context:
            state = self.summarizer.context(ch.id)
            if state is not None and self.book.visible(ch, self.book.get("channel", ch.id,
                                                                           "context")):
                ctx.channel_context = state.view(ctx.language or self.prompts.language)
        trigger = ctx.trigger
        if self.user_profiles and trigger is not None and not trigger.user.is_bot:
            ctx.user_profile = self._profile(trigger.user.id, ch, ctx.language)
        if self.retrieve_facts and trigger is not None and trigger.text.strip():
            hits = self.facts.search(
                ch, trigger.text, now=ctx.now, speaker=trigger.user.id, limit=self.fact_limit
            )
            ctx.facts = [h.fact.content for h in hits]
            if hits:
                trace.step(
                    "memory: facts "
                    + ", ".join(f"{h.fact.id} ({h.score:.2f})" for h in hits)
                )
                self._touch([h.fact.id for h in hits], ctx.now)
        if shown:
            trace.step("memory: " + ", ".join(shown[:8]))

    def recall(
        self, target: Channel, query: str, *, now: datetime, limit: int = 5
    ) -> list[RecallHit]:
        """What the bot remembers about ``query`` that a prompt for ``target`` may show.

        The same sources and the same privacy rule as `fill`: facts through
        `FactMemory.search`, channel memories through `_channels`, thread and workspace
        documents through `MemoryBook.visible`, profiles through `Profiles.visible`. So a
        private channel's memory never answers a question asked anywhere else.
        """
        words = keyword_set(keywords(query))
        hits = [
            RecallHit("fact", self._source_name(h.fact.source_channel_id), h.fact.content,
                      h.score)
            for h in self.facts.search(target, query, now=now, limit=limit)
        ]
        texts: list[tuple[str, str, str]] = []
        for view in self._channels(target):
            for text in (view.long_term, view.short_term):
                texts.append(("channel memory", f"#{view.name}", text))
        for rec in self.book.threads_of(target.id, MAX_THREADS):
            if self.book.visible(target, rec) and isinstance(rec.content, str):
                texts.append(("thread memory", rec.scope_id.split(":", 1)[1], rec.content))
        for kind in ("long_term", "short_term"):
            doc = self.book.get("workspace", target.workspace, kind)
            if doc is not None and self.book.visible(target, doc) and isinstance(doc.content,
                                                                                str):
                texts.append(("workspace memory", "workspace", doc.content))
        for kind, source, text in texts:
            score = _overlap(words, text)
            if score > 0:
                hits.append(RecallHit(kind, source, text, score))
        if self.user_profiles:
            for person in self.profiles.all():
                facts = self.profiles.visible(person.user_id, target)
                if facts is None or not words & keyword_set(keywords(facts.name)):
                    continue
                text = self.prompts.render("memory_profile", p=facts).strip()
                hits.append(RecallHit("profile", facts.name, text, 1.0))
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def _source_name(self, channel_id: str | None) -> str:
        channel = self.registry.get(channel_id)
        return f"#{channel.name}" if channel is not None else "memory"

    def _channels(self, target: Channel) -> list[ChannelMemoryView]:
        visible = [
            c
            for c in self.registry.all()
            if c.id == target.id
            or (c.visibility is Visibility.PUBLIC and may_show_channel(target, c))
        ]
        if len(visible) <= 1 and not self._has_channel_memory(target):
            return []  # a lone channel with nothing remembered: nothing to list
        visible.sort(key=lambda c: (c.id != target.id, c.name))
        views = []
        for c in visible[:MAX_CHANNELS]:
            long_rec = self.book.get("channel", c.id, "long_term")
            short_rec = self.book.get("channel", c.id, "short_term")
            views.append(
                ChannelMemoryView(
                    name=c.name,
                    long_term=_text(long_rec.content)
                    if long_rec and self.book.visible(target, long_rec) else "",
                    short_term=_text(short_rec.content)
                    if short_rec and self.book.visible(target, short_rec) else "",
                )
            )
        views.sort(key=lambda v: v.name)
        return views

    def _has_channel_memory(self, ch: Channel) -> bool:
        return any(self.book.get("channel", ch.id, k) for k in ("long_term", "short_term"))

    def _profile(
        self, user_id: str, target: Channel, language: str | None = None
    ) -> UserView | None:
        facts = self.profiles.visible(user_id, target)
        if facts is None:
            return None
        text = self.prompts.render("memory_profile", language=language, p=facts).strip()
        return UserView(name=facts.name, text=text)

    def _touch(self, ids: list[int], at: datetime) -> None:
        touch = self.touch
        if touch is None:
            return

        async def run() -> None:
            for fact_id in ids:
                await touch(fact_id, at)

        self.jobs.spawn("touch-facts", run)


def _overlap(words: frozenset[str], text: str) -> float:
    """The share of the query's keywords a remembered text contains (0 when none)."""
    if not words or not text:
        return 0.0
    return len(words & keyword_set(keywords(text, limit=500))) / len(words)


def _text(content: object) -> str:
    return content if isinstance(content, str) else ""
