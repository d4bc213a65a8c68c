"""Wiring: Settings in, a running Engine out. The composition root of every front end."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kuuki.clock import Clock
from kuuki.decide.base import AddressedOnlyJudge, Judge
from kuuki.decide.pipeline import Pipeline, build_pipeline
from kuuki.domain import Channel
from kuuki.engine.core import Engine, EngineConfig
from kuuki.errors import ConfigError
from kuuki.guard.reply import ReplyGuard
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage, TokenCounter, Warmable
from kuuki.llm.breaker import CircuitBreaker
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.registry import create
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.llm.stub import StubLLM
from kuuki.memory.buffer import ChannelBuffer
from kuuki.memory.context import ContextBuilder
from kuuki.ports import Buffer, BufferFactory, Outbox, Tracker
from kuuki.prompts import LANGUAGES, Prompts
from kuuki.respond.responder import PromptDump, Responder
from kuuki.respond.tools.toolbox import Toolbox
from kuuki.settings import LLMSettings, Persona, Settings

__all__ = ["App", "PromptDumper", "build_app", "engine_config", "make_engine", "make_llm"]

log = logging.getLogger("kuuki.app")


def make_llm(s: LLMSettings) -> LLM | None:
    """The LLM a setting names; None for `none` (generation and LLM judging off)."""
    if s.backend == "none":
        return None
    if s.backend == "embedded":
        return create("embedded", model_path=s.model_path or None, timeout_s=s.timeout_s)
    if s.backend == "openai":
        if not s.model:
            raise ConfigError("KUUKI_LLM_MODEL", "the openai back-end needs a model name")
        return create(
            "openai",
            model=s.model,
            base_url=s.base_url or "https://api.openai.com/v1",
            api_key=s.api_key or None,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
        )
    return create(s.backend)  # stub, or a plugin's back-end (kuuki.llm.registry)


def tracker_factory(
    settings: Settings, embedder: Any | None
) -> Callable[[Channel], Tracker | None]:
    from kuuki.conversation.tracker import ConversationTracker

    def make(channel: Channel) -> Tracker:
        return ConversationTracker(channel.id, embedder=embedder, bot_names=settings.persona.names)

    return make


def engine_config(settings: Settings) -> EngineConfig:
    """The few settings the engine reads."""
    return EngineConfig(
        bot_name=settings.persona.name,
        channel_allow=settings.channel_allow,
        channel_deny=settings.channel_deny,
        dms_enabled=settings.dms_enabled,
        max_live_channels=settings.max_live_channels,
        channel_idle_minutes=settings.channel_idle_minutes,
        catch_up_minutes=settings.catch_up_minutes,
        judge_mode=settings.judge_mode,
    )


def buffer_factory(settings: Settings) -> BufferFactory:
    """Each channel's short-term buffer: CHANNEL_BUFFER_SIZE messages, none older than
    CHANNEL_BUFFER_TTL_MINUTES."""
    size = settings.CHANNEL_BUFFER_SIZE
    ttl = timedelta(minutes=settings.CHANNEL_BUFFER_TTL_MINUTES)

    def make() -> Buffer:
        return ChannelBuffer(size, ttl)

    return make


def make_engine(
    settings: Settings,
    *,
    clock: Clock,
    outbox: Outbox,
    responder: Responder,
    judge: Pipeline | Judge | None = None,
    **options: Any,
) -> Engine:
    """An `Engine` for ``settings``: ``judge`` is the decision pipeline built once at
    start-up, or a bare `Judge` (tests, plugins) run behind the pipeline's gates (None:
    reply when addressed). ``options`` go to `Engine` as they are (store, writer, inbox,
    tracker_factory, memory_hooks, a gateway's ``relay``, a worker's ``seen_capacity``…)."""
    pipeline = (
        judge
        if isinstance(judge, Pipeline)
        else build_pipeline(settings, judge=judge or AddressedOnlyJudge())
    )
    options.setdefault("store", None)
    options.setdefault("writer", None)
    return Engine(
        engine_config(settings), clock=clock, outbox=outbox, responder=responder,
        pipeline=pipeline, buffer_factory=buffer_factory(settings), **options,
    )


def _prefetcher(embedder: Any) -> Callable[[Any], Any] | None:
    from kuuki.embed import BatchPrefetcher, USEEmbedder

    if not isinstance(embedder, USEEmbedder):
        return None
    batcher = BatchPrefetcher(embedder)

    async def prepare(msgs: Any) -> None:
        await batcher.prefetch([m.text for m in msgs])

    return prepare


class PromptDumper:
    """`--dump-prompts DIR`: one file per LLM call, named seq-channel-message-purpose."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def __call__(self, label: str, messages: Sequence[ChatMessage]) -> None:
        self.count += 1
        safe = re.sub(r"[^\w.-]+", "_", label)[:120]
        body = "\n\n".join(f"=== {m.role} ===\n{m.content}" for m in messages)
        (self.dir / f"{self.count:05d}-{safe}.txt").write_text(body, encoding="utf-8")


@dataclass(slots=True)
class App:
    settings: Settings
    engine: Engine
    clock: Clock
    store: Any
    writer: Any
    llm: LLM | None
    judge_llm: LLM | None
    responder: Responder
    closers: list[Any] = field(default_factory=list)
    memory: Any = None  # kuuki.memory.service.MemoryService when a store is in use
    models: list[ScheduledLLM] = field(default_factory=list)

    async def warm(self) -> None:
        """Load local models now, so the first message is not the one that waits."""
        for model in self.models:
            await model.warm()

    async def close(self) -> None:
        await self.engine.idle()  # replies under way are finished first
        for model in self.models:  # memory calls still queued give up; running ones finish
            model.close()
        if self.memory is not None:  # memory jobs may still act through the engine
            await self.memory.close()
        await self.engine.close()
        if self.store is not None:
            await self.store.close()
        for c in self.closers:
            result = c()
            if hasattr(result, "__await__"):
                await result


async def build_app(
    settings: Settings,
    *,
    clock: Clock,
    outbox: Outbox,
    llm: LLM | str | None = "settings",
    judge_llm: LLM | str | None = "settings",
    store_url: str | None = None,
    use_store: bool = True,
    dump: PromptDump | None = None,
    embedder: Any | None = "default",
    judge: Judge | None = None,
    bot_user_ids: Sequence[str] = (),
    engine_options: Mapping[str, Any] | None = None,
) -> App:
    """The engine and its parts for ``settings``. ``engine_options`` go to `Engine` as
    they are (kuuki.scale: a gateway's ``relay``, a worker's ``seen_capacity``)."""
    from kuuki.store import Store

    main_llm = make_llm(settings.llm) if llm == "settings" else llm
    j_llm = (
        (make_llm(settings.judge) if settings.judge_llm else main_llm)
        if judge_llm == "settings"
        else judge_llm
    )
    assert not isinstance(main_llm, str) and not isinstance(j_llm, str)
    store = writer = None
    if use_store:
        store = await Store.open(store_url if store_url is not None else settings.store_url or None)
        writer = store.writer
    if embedder == "default":
        from kuuki.embed import default_embedder

        embedder = default_embedder()
    prompts = Prompts(settings.persona.default_language, settings.prompts_dir or None)
    main_llm, j_llm, scheduled = _scheduled(main_llm, j_llm, clock)
    guard = reply_guard(settings, prompts)
    # --- memory (issue 5) -------------------------------------------------------------------
    memory = None
    if store is not None:
        from kuuki.memory.service import MemoryService

        memory = await MemoryService.open(
            settings, store=store, clock=clock, llm=main_llm, embedder=embedder,
            prompts=prompts, dump=dump, bot_user_ids=tuple(bot_user_ids),
            scaffold=guard.scaffold, model_calls=scheduled.get(id(main_llm)),
            languages=model_languages(settings.llm, main_llm),
        )
    # -----------------------------------------------------------------------------------------
    provider = memory.provider() if memory is not None else None
    responder = Responder(
        settings.persona, context_builder(settings.persona, prompts, settings.llm, main_llm),
        main_llm, guard, dump=dump,
        memory=provider,
        languages=model_languages(settings.llm, main_llm),
        clock=clock, budget_s=settings.llm.reply_budget_s,
        toolbox=build_toolbox(settings, clock, provider),
        tools_off=tools_off(settings.llm, main_llm),
    )
    settings = replace(settings, judge_mode=judge_mode_for(settings.judge_mode, j_llm))
    if judge is None:
        from kuuki.decide.build import build_judge

        judge = build_judge(
            settings, j_llm, clock, embedder=embedder, dump=dump,
            memory=memory.provider(retrieve_facts=False) if memory is not None else None,
            builder=context_builder(settings.persona, prompts, settings.judge, j_llm),
            scaffold=guard.scaffold,
        )
    engine = make_engine(
        settings,
        clock=clock,
        store=store,
        writer=writer,
        outbox=outbox,
        responder=responder,
        judge=judge,
        tracker_factory=tracker_factory(settings, embedder),
        bot_user_ids=bot_user_ids,
        memory_hooks=[memory] if memory is not None else (),
        prepare=_prefetcher(embedder),
        inbox=store,
        **(engine_options or {}),
    )
    if memory is not None:
        memory.attach(engine)
    models = list({id(m): m for m in scheduled.values()}.values())
    # HTTP back-ends hold a connection pool: closed with the app.
    closers: list[Any] = [m.inner.aclose for m in models if isinstance(m.inner, _Closable)]
    return App(settings, engine, clock, store, writer, main_llm, j_llm, responder, memory=memory,
               models=models, closers=closers)


@runtime_checkable
class _Closable(Protocol):
    async def aclose(self) -> None: ...


def _scheduled(
    main: LLM | None, judge: LLM | None, clock: Clock
) -> tuple[LLM | None, LLM | None, dict[int, ScheduledLLM]]:
    """Put each distinct model behind one door: a priority queue (replies first), a
    circuit breaker for every purpose, and callers' deadlines on ``clock``.

    The judge and the main model share the door when they are the same model. A local
    model runs one call at a time; a server is allowed a few calls at once.
    """
    made: dict[int, ScheduledLLM] = {}

    def wrap(llm: LLM | None) -> LLM | None:
        if llm is None or isinstance(llm, ScheduledLLM):
            return llm
        if id(llm) not in made:
            local = isinstance(llm, Warmable)
            made[id(llm)] = ScheduledLLM(
                llm, concurrency=1 if local else 4, clock=clock, breaker=CircuitBreaker(clock)
            )
        return made[id(llm)]

    m, j = wrap(main), wrap(judge)
    by_wrapper = {id(w): w for w in made.values()}
    return m, j, by_wrapper


def build_toolbox(settings: Settings, clock: Clock, memory: Any = None) -> Toolbox:
    """The tools replies may use: those named in ``tools.enabled`` (built-ins and plugins,
    kuuki.respond.tools.registry) and every `[[tools.http]]` declared. Only the responder gets it:
    the judge never calls tools."""
    from kuuki.respond.tools.http import HttpJsonTool
    from kuuki.respond.tools.registry import ToolHost, create

    t = settings.tools
    host = ToolHost(t, clock, memory)
    declared = {spec.name for spec in t.http}
    tools = [create(name, host) for name in dict.fromkeys(t.enabled) if name not in declared]
    tools += [HttpJsonTool(spec, timeout_s=t.timeout_s) for spec in t.http]
    return Toolbox(tools, clock=clock, timeout_s=t.timeout_s, result_chars=t.result_chars,
                   max_rounds=t.max_rounds)


def tools_off(s: LLMSettings, llm: LLM | None) -> str | None:
    """Why the main model is not offered tools, or None when it is.

    ``llm.tools = auto`` offers them to every model but the shipped SmolLM2-135M, which was
    measured unable to choose a tool sensibly through the grammar-constrained call format
    (docs/benchmarks.md, "Tools"); ``on`` offers them anyway, ``off`` never.
    """
    if s.tools == "off":
        return "switched off (llm.tools = off)"
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if s.tools == "auto" and isinstance(inner, EmbeddedLLM) and inner.shipped:
        return ("the shipped SmolLM2-135M cannot choose tools reliably (docs/benchmarks.md); "
                "set llm.tools = on to try it anyway")
    return None


def judge_mode_for(mode: str, judge_llm: LLM | None) -> str:
    """The judge mode in effect: ``auto`` is ``hybrid``, but ``rules`` when the judge's model
    is the shipped SmolLM2-135M, whose judgments made the scenario suite's decisions worse
    than the local stage alone (docs/decisions.md, docs/benchmarks.md), or the counting
    `stub`, whose answers are all "do nothing" (`kuuki bench judge` asks for hybrid)."""
    if mode != "auto":
        return mode
    inner = judge_llm.inner if isinstance(judge_llm, ScheduledLLM) else judge_llm
    if isinstance(inner, EmbeddedLLM) and inner.shipped:
        return "rules"
    if isinstance(inner, StubLLM):  # it answers "do nothing" to everything: no judgment
        return "rules"
    return "hybrid"


def model_languages(s: LLMSettings, llm: LLM | None) -> frozenset[str]:
    """The languages the model writes: the setting, or what is known of it.

    The shipped SmolLM2-135M writes English; asked for Japanese it writes Japanese
    characters that are no Japanese (tests/guard/corpus), which the guard cannot always
    tell from the real thing. Any other model is trusted with both.
    """
    if s.languages:
        return frozenset(s.languages)
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if isinstance(inner, EmbeddedLLM) and inner.shipped:
        return frozenset({"en"})
    return frozenset(LANGUAGES)


def prompt_budget(s: LLMSettings, llm: LLM | None) -> int | None:
    """How many prompt tokens a model gets: the setting, or what its kind reads quickly.

    The shipped SmolLM2-135M reads about 200 prompt tokens a second on two cores, so its
    prompts are kept near 450 tokens (a reply in ~3 s); another local GGUF gets 1,500; a
    server is not limited here (its own context limit applies).
    """
    if s.prompt_tokens:
        return s.prompt_tokens
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if isinstance(inner, EmbeddedLLM):
        return 450 if inner.shipped else 1500
    return None


def context_builder(
    persona: Persona, prompts: Prompts, s: LLMSettings, llm: LLM | None
) -> ContextBuilder:
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    count = inner.count_tokens if isinstance(inner, TokenCounter) else None
    return ContextBuilder(persona, prompts, budget=prompt_budget(s, llm), count=count)


def reply_guard(settings: Settings, prompts: Prompts) -> ReplyGuard:
    """The output guard, taught every template in effect and the persona's prompts."""
    persona = settings.persona
    scaffold = Scaffold.from_prompts(
        prompts, persona_prompts=[persona.prompt_for(lang) for lang in LANGUAGES]
    )
    return ReplyGuard(scaffold, persona.names)
