"""`MemoryService`: the memory layer as one object the app wires in.

It is the engine's `MemoryHook` (step 4: counts and schedules, never works on the message
path), hands out `MemoryProvider`s for the responder (with fact retrieval) and the judge
(without), implements `MemoryAdmin` (what the bot remembers about a user, and forgetting
it), and runs the periodic maintenance task on the clock: expired buffer messages,
profile persistence, forgetting decayed facts.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, Protocol

from kuuki.clock import Clock, TimerHandle
from kuuki.domain import Channel, Message
from kuuki.embed import Embedder
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM
from kuuki.llm.record import PromptDump
from kuuki.memory.book import MemoryBook, MemoryStorePort
from kuuki.memory.fact_store import FactMemory, FactStorePort
from kuuki.memory.forgetting import Forgetting, TombstoneStore
from kuuki.memory.jobs import Jobs, ModelCalls
from kuuki.memory.privacy import ChannelRegistry
from kuuki.memory.proactive import DEFAULT_DELAY_S, DEFAULT_SILENCE, LedgerPort, ProactiveTalker
from kuuki.memory.profiles import Profiles, familiarity
from kuuki.memory.provider import MemoryContextProvider
from kuuki.memory.reflection import BacklogPort, Reflector
from kuuki.memory.report import ChannelReport, PersonReport, channel_view, person_view
from kuuki.memory.snapshot import ChannelMemory, SnapshotReader
from kuuki.memory.summarizer import Summarizer
from kuuki.ports import EngineControl
from kuuki.prompts import Prompts
from kuuki.settings import Settings
from kuuki.store.forgetting import Forgotten
from kuuki.text.wording import plural

log = logging.getLogger("kuuki.memory")

MAINTENANCE_EVERY_S = 15 * 60  # seed 002: the 15-minute cleanup task


class ChannelsPort(Protocol):
    async def channels(self) -> list[Channel]: ...


class MessagesPort(BacklogPort, Protocol):
    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: datetime | None = None
    ) -> list[Message]: ...


class FactsPort(FactStorePort, LedgerPort, Protocol):
    async def touch_fact(self, fact_id: int, at: datetime) -> None: ...

    async def proactive_ledger(
        self, channel_id: str, *, limit: int = 50
    ) -> list[tuple[int, datetime]]: ...


class MemoryStorage(Protocol):
    """The parts of the store memory keeps its state in (kuuki.store.Store has them)."""

    @property
    def memories(self) -> MemoryStorePort: ...

    @property
    def facts(self) -> FactsPort: ...

    @property
    def forgetting(self) -> TombstoneStore: ...

    @property
    def roster(self) -> ChannelsPort: ...

    @property
    def messages(self) -> MessagesPort: ...


class MemoryService:
    """Channel context, people, facts, reflection and proactive talk, wired together."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: MemoryStorage,
        clock: Clock,
        llm: LLM | None,
        embedder: Embedder | None = None,
        prompts: Prompts | None = None,
        dump: PromptDump | None = None,
        bot_user_ids: tuple[str, ...] = (),
        silence: timedelta = DEFAULT_SILENCE,
        proactive_delay_s: float = DEFAULT_DELAY_S,
        scaffold: Scaffold | None = None,
        model_calls: ModelCalls | None = None,
        languages: frozenset[str] = frozenset({"ja", "en"}),
    ) -> None:
        s = settings
        self.settings = settings
        self.store = store
        self.clock = clock
        self.llm = llm
        self.prompts = prompts or Prompts(s.persona.default_language, s.prompts_dir or None)
        self.jobs = Jobs()
        scaffold = scaffold or Scaffold.from_prompts(self.prompts)
        self.registry = ChannelRegistry()
        self.book = MemoryBook(store.memories, self.registry)
        self.facts = FactMemory(
            store.facts, self.registry, embedder=embedder,
            half_life_days=s.FACT_DECAY_HALF_LIFE_DAYS,
            max_per_channel=s.FACT_STORE_MAX_FACTS_PER_CHANNEL,
        )
        self.profiles = Profiles(
            store.memories, self.registry, thresholds=s.FAMILIARITY_THRESHOLDS,
            bot_names=s.persona.names, bot_ids=bot_user_ids,
        )
        self.summarizer, self.reflector = self._model_jobs(s, dump, scaffold, languages)
        self.proactive = ProactiveTalker(
            facts=self.facts, ledger=store.facts, clock=clock, jobs=self.jobs,
            silence=silence, delay_s=proactive_delay_s,
        )
        self._reader = self._snapshot_reader(s, store)
        self.forgotten = Forgetting(
            store.forgetting, clock, profiles=self.profiles, book=self.book,
            summarizer=self.summarizer,
            facts=self.facts, proactive=self.proactive,
        )
        self.engine: EngineControl | None = None
        self._maintenance: TimerHandle | None = None
        self._active_since_maintenance = False
        self._closed = False
        self._settle_with(clock, model_calls)

    def _model_jobs(
        self, s: Settings, dump: PromptDump | None, scaffold: Scaffold, languages: frozenset[str]
    ) -> tuple[Summarizer, Reflector]:
        """The jobs that ask the model: channel summaries, and reflection into facts and
        profiles."""
        summarizer = Summarizer(
            llm=self.llm, prompts=self.prompts, book=self.book, clock=self.clock, jobs=self.jobs,
            persona_name=s.persona.name, every_n_messages=s.SUMMARIZE_EVERY_N_MESSAGES,
            every_n_minutes=s.SUMMARIZE_EVERY_N_MINUTES, dump=dump, scaffold=scaffold,
            languages=languages,
        )
        reflector = Reflector(
            llm=self.llm, prompts=self.prompts, backlog=self.store.messages,
            tombstones=self.store.forgetting, facts=self.facts,
            profiles=self.profiles, clock=self.clock, jobs=self.jobs, persona_name=s.persona.name,
            lull_minutes=s.REFLECTION_LULL_MINUTES, min_messages=s.REFLECTION_MIN_MESSAGES,
            max_buffer=s.REFLECTION_MAX_BUFFER_MESSAGES,
            profiles_enabled=s.USER_PROFILE_ENABLED, dump=dump, scaffold=scaffold,
            languages=languages,
        )
        return summarizer, reflector

    def _snapshot_reader(self, s: Settings, store: MemoryStorage) -> SnapshotReader:
        return SnapshotReader(
            registry=self.registry, book=self.book, summarizer=self.summarizer,
            profiles=self.profiles, facts=self.facts, jobs=self.jobs,
            ledger=store.facts.proactive_ledger,
            every_n=s.SUMMARIZE_EVERY_N_MESSAGES, every_minutes=s.SUMMARIZE_EVERY_N_MINUTES,
            summaries_enabled=s.CHANNEL_CONTEXT_ENABLED and self.llm is not None,
            half_life_days=s.FACT_DECAY_HALF_LIFE_DAYS,
        )

    def _settle_with(self, clock: Clock, model_calls: ModelCalls | None) -> None:
        add_settler = getattr(clock, "add_settler", None)
        if add_settler is not None:  # the virtual clock waits for memory jobs too,
            # but not for a model writing a summary (kuuki.memory.jobs.Jobs.settled)
            add_settler(lambda: self.jobs.settled(model_calls))

    @classmethod
    async def open(cls, settings: Settings, **kwargs: Any) -> MemoryService:
        service = cls(settings, **kwargs)
        await service.start()
        return service

    async def start(self) -> None:
        """Load channels, memories, profiles and facts from the store."""
        for ch in await self.store.roster.channels():
            self.registry.add(ch)
            last = await self.store.messages.recent_messages(ch.id, limit=1)
            if last:
                self.proactive.seen_before(ch.id, last[-1].ts)
        await self.forgotten.load()
        await self.book.load()
        await self.profiles.load()
        count = await self.facts.load()
        log.debug("memory loaded: %d channels, %d facts", len(self.registry.all()), count)

    def attach(self, engine: EngineControl) -> None:
        """Give the service the engine it acts through (proactive talk, forgetting,
        maintenance): the engine is built after memory, whose hook it calls."""
        self.engine = engine
        if self.settings.PROACTIVE_CONVERSATION_ENABLED and self.llm is not None:
            self.proactive.engine = engine

    # --- providers -----------------------------------------------------------------------

    def provider(self, *, retrieve_facts: bool = True) -> MemoryContextProvider:
        """The `MemoryProvider` for the responder (facts on) or the judge (facts off)."""
        s = self.settings
        return MemoryContextProvider(
            book=self.book, registry=self.registry, summarizer=self.summarizer,
            profiles=self.profiles, facts=self.facts, prompts=self.prompts, jobs=self.jobs,
            channel_context=s.CHANNEL_CONTEXT_ENABLED, user_profiles=s.USER_PROFILE_ENABLED,
            retrieve_facts=retrieve_facts, touch=self.store.facts.touch_fact,
        )

    # --- the hook ------------------------------------------------------------------------

    async def observe(self, channel: Channel, msg: Message, *, from_bot: bool) -> None:
        """Step 4 of the engine: count and schedule; all real work runs in the background."""
        if self._closed:
            return
        self.registry.add(channel)
        if self.forgotten.due():  # another process may have forgotten someone
            self.jobs.spawn("forgotten", self.check_forgotten)
        if msg.deleted or msg.user.id in self.forgotten:
            return  # forgotten means not learned about again (kuuki.memory.forgetting)
        s = self.settings
        human = not from_bot and not msg.user.is_bot
        if human and s.USER_PROFILE_ENABLED:
            self.profiles.observe(channel, msg)
        if s.CHANNEL_CONTEXT_ENABLED:
            self.summarizer.observe(channel, msg)
        if s.REFLECTION_ENABLED:
            self.reflector.observe(channel, msg)
        if s.PROACTIVE_CONVERSATION_ENABLED:
            self.proactive.observe(channel, msg, from_bot=from_bot)
        self._active_since_maintenance = True
        if self._maintenance is None:
            self._maintenance = self.clock.call_later(MAINTENANCE_EVERY_S, self._on_maintenance)

    async def _on_maintenance(self) -> None:
        self._maintenance = None
        self.jobs.spawn("maintenance", self.maintain)

    async def maintain(self) -> None:
        """The periodic task: prune buffers, persist profiles, forget decayed facts."""
        active, self._active_since_maintenance = self._active_since_maintenance, False
        await self.check_forgotten()  # before profiles are written back
        now = self.clock.now()
        if self.engine is not None:
            self.engine.prune_buffers(now)
            evicted = self.engine.evict_idle()
            if evicted:
                log.debug("dropped %d idle channels from memory", evicted)
        await self.profiles.flush(now)
        forgotten = await self.facts.forget_decayed(now)
        if forgotten:
            log.info("forgot %d decayed facts", forgotten)
        # Re-arm only while there is activity, so an idle bot leaves no timer pending —
        # but while channels are live: they are evicted here once idle, and buffers empty
        # (their TTL) long before a channel counts as idle, so stopping on empty buffers
        # kept every channel in memory for good (the soak).
        live = self.engine is not None and self.engine.live_channels() > 0
        buffered = self.engine is not None and self.engine.buffered() > 0
        if (active or buffered or live) and not self._closed and self._maintenance is None:
            self._maintenance = self.clock.call_later(MAINTENANCE_EVERY_S, self._on_maintenance)

    async def idle(self) -> None:
        await self.jobs.idle()

    async def close(self) -> None:
        """Finish running jobs and persist profiles; call before the store closes."""
        if self._closed:
            return
        self._closed = True
        await self._stop()
        try:
            await self.check_forgotten()  # before profiles are written back
        except Exception as exc:  # the store refuses their rows anyway
            log.warning("could not read who is forgotten: %s", exc)
        await self.profiles.flush(self.clock.now())

    async def close_without_writing(self) -> None:
        """Stop timers and jobs and write nothing back: for a store opened only to read
        (`kuuki memory list|show`), which must be left as it was found."""
        if self._closed:
            return
        self._closed = True
        await self._stop()

    async def _stop(self) -> None:
        if self._maintenance is not None:
            self._maintenance.cancel()
            self._maintenance = None
        self.summarizer.cancel_timers()
        self.reflector.cancel_timers()
        self.proactive.cancel_timers()
        await self.jobs.close()

    # --- what a person may look at ----------------------------------------------------------

    async def snapshot(self, channel_id: str) -> ChannelMemory:
        """What the bot remembers about a channel, as that channel may see it.

        The summary, mood, topics, history, recent events and threads with when each was
        written; the people known there with their familiarity; the facts; the proactive
        ledger; and when the next summary is due. The privacy rule applies as for a prompt
        rendered for this channel (kuuki.memory.snapshot).
        """
        return await self._reader.read(channel_id, self.clock.now())

    # --- MemoryAdmin ---------------------------------------------------------------------

    async def describe_user(self, user_id: str) -> str:
        """Everything the bot remembers about a user, for that user to read."""
        p = self.profiles.get(user_id)
        facts = self.facts.about_user(user_id)
        if p is None and not facts:
            return "I don't remember anything about you."
        lines: list[str] = []
        if p is not None:
            level = familiarity(p.interaction_count, self.settings.FAMILIARITY_THRESHOLDS)
            last = p.last_interaction.strftime("%Y-%m-%d %H:%M") if p.last_interaction else "-"
            lines.append(f"What I remember about {p.display_name}:")
            lines.append(f"- {plural(p.interaction_count, 'message')} seen ({level}), "
                         f"talked to me {plural(p.mentioned_bot_count, 'time')}, last on {last}")
            chans = [self._channel_name(c) for c in p.channels_active]
            if chans:
                lines.append("- active in: " + ", ".join(chans))
            for cid, entry in p.last_topics.items():
                words = ", ".join(entry.get("keywords", []))
                lines.append(f"- recent topics in {self._channel_name(cid)}: {words}")
            for cid, tags in p.tags.items():
                lines.append(f"- notes from {self._channel_name(cid)}: {', '.join(tags)}")
            for cid, entry in p.summaries.items():
                lines.append(f"- last talk in {self._channel_name(cid)}: {entry.get('text')}")
        else:
            lines.append("What I remember about you:")
        if facts:
            lines.append(f"Facts ({len(facts)}):")
            for f in facts:
                lines.append(f"- [{self._channel_name(f.source_channel_id or '')}] {f.content}")
        lines.append("Say `/kuuki forget-me` to have all of this forgotten.")
        return "\n".join(lines)

    def report(self) -> tuple[list[ChannelReport], list[PersonReport]]:
        """Every channel and person remembered, as views for the operator (`report`)."""
        thresholds = self.settings.FAMILIARITY_THRESHOLDS
        profiles = self.profiles.all()
        names = {p.user_id: p.display_name for p in profiles}
        people = [
            person_view(p, self.facts.about_user(p.user_id), thresholds, self._channel_name, names)
            for p in profiles
        ]
        facts = self.facts.all_facts()
        channels = [
            channel_view(ch, self.summarizer.context(ch.id), people, facts, self._channel_name,
                         names)
            for ch in sorted(self.registry.all(), key=lambda c: c.name)
        ]
        return channels, people

    def _channel_name(self, channel_id: str) -> str:
        ch = self.registry.get(channel_id)
        return f"#{ch.name}" if ch is not None else f"#{channel_id}"

    async def check_forgotten(self) -> list[str]:
        """Read the store's tombstones; purge from memory whoever was forgotten elsewhere."""
        return await self.forgotten.check(self.engine)

    async def forget(self, user_id: str) -> Forgotten:
        """Forget a person everywhere (kuuki.store.forgetting); what was removed, by kind."""
        return await self.forgotten.forget(user_id, self.engine)

    async def forget_user(self, user_id: str) -> int:
        """`MemoryAdmin`: forget a person; how many items were removed."""
        return (await self.forget(user_id)).total

    async def unforget_user(self, user_id: str) -> bool:
        """Lift a person's tombstone: the bot may learn about them again from now on."""
        return await self.forgotten.unforget(user_id)
