"""Wiring: Settings in, a running Engine out. The composition root of every front end."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kuuki.app.engine import make_engine, prefetcher, tracker_factory
from kuuki.app.models import judge_mode_for, model_languages, prompt_budget, tools_off
from kuuki.app.policies import ChannelPolicies
from kuuki.clock import Clock
from kuuki.decide.judge.base import Judge
from kuuki.decide.pipeline import Pipeline
from kuuki.embed import Embedder
from kuuki.engine.config import SINGLE_PROCESS
from kuuki.engine.core import Engine, EngineOptions
from kuuki.errors import ConfigError
from kuuki.guard.reply import ReplyGuard
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage, TokenCounter, Warmable
from kuuki.llm.breaker import CircuitBreaker
from kuuki.llm.registry import create
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.memory.context import ContextBuilder
from kuuki.ports import (
    Outbox,
)
from kuuki.prompts import LANGUAGES, Prompts
from kuuki.respond.responder import ModelResponder, PromptDump
from kuuki.respond.tools.toolbox import Toolbox
from kuuki.settings import LLMSettings, Persona, Settings, remember_secrets

if TYPE_CHECKING:
    from kuuki.memory.service import MemoryService
    from kuuki.store import Store


__all__ = [
    "FROM_SETTINGS",
    "App",
    "FromSettings",
    "PromptDumper",
    "build_app",
    "make_llm",
]


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
    responder: ModelResponder
    closers: list[Any] = field(default_factory=list)
    memory: Any = None  # kuuki.memory.service.MemoryService when a store is in use
    policies: ChannelPolicies | None = None  # each channel's policy, `/kuuki mode`'s changes
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


class FromSettings(Enum):
    """A part `build_app` makes as the settings say, when it is not handed one."""

    SETTINGS = "settings"


FROM_SETTINGS = FromSettings.SETTINGS


LLMChoice = LLM | None | FromSettings


async def build_app(
    settings: Settings,
    *,
    clock: Clock,
    outbox: Outbox,
    llm: LLMChoice = FROM_SETTINGS,
    judge_llm: LLMChoice = FROM_SETTINGS,
    store: Store | str | FromSettings | None = FROM_SETTINGS,
    dump: PromptDump | None = None,
    embedder: Embedder | FromSettings | None = FROM_SETTINGS,
    judge: Judge | None = None,
    bot_user_ids: Sequence[str] = (),
    engine: EngineOptions = SINGLE_PROCESS,
    shadow: bool = False,
) -> App:
    """The engine and its parts for ``settings``; each part given is used as it is, each
    left `FROM_SETTINGS` made as the settings say. ``store``: an open store (the app closes
    it), a URL, or None; ``llm``/``judge_llm``/``embedder``: one, or None for none; ``engine``:
    a scale-out process's relay or seen ids; ``shadow``: decide but post nothing."""
    remember_secrets(settings)  # settings made in code were never loaded
    main_llm, j_llm = _chosen_llms(settings, llm, judge_llm)
    opened = await _open_store(settings, store)
    writer = None if opened is None else opened.writer
    try:
        embedder = _embedder(embedder)
        prompts = Prompts(settings.persona.default_language, settings.prompts_dir or None)
        main_llm, j_llm, scheduled = _scheduled(main_llm, j_llm, clock)
        guard = reply_guard(settings, prompts)
        memory = await _open_memory(
            settings, opened, clock, main_llm, embedder, prompts, dump, bot_user_ids, guard,
            scheduled.get(id(main_llm)),
        )
        policies = await ChannelPolicies.open(settings, opened, clock)
        provider = memory.provider() if memory is not None else None
        responder = _responder(settings, prompts, main_llm, guard, dump, provider, clock)
        responder.policy_of = policies.of
        settings = replace(settings, judge_mode=judge_mode_for(settings.judge_mode, j_llm))
        if judge is None:
            judge = _judge(settings, j_llm, clock, embedder, dump, memory, prompts, guard,
                           policies)
        made = make_engine(
            settings, clock=clock, store=opened, writer=writer, outbox=outbox,
            responder=responder, judge=judge, tracker_factory=tracker_factory(settings, embedder),
            bot_user_ids=bot_user_ids, memory_hooks=[memory] if memory is not None else (),
            prepare=prefetcher(embedder), inbox=None if opened is None else opened.inbox,
            options=engine, policy_of=policies.of, shadow=shadow,
        )
        if memory is not None:
            memory.attach(made)
        models = list({id(m): m for m in scheduled.values()}.values())
        # HTTP back-ends hold a connection pool: closed with the app.
        closers: list[Any] = [m.inner.aclose for m in models if isinstance(m.inner, _Closable)]
        return App(settings, made, clock, opened, writer, main_llm, j_llm, responder,
                   memory=memory, models=models, closers=closers, policies=policies)
    except BaseException:
        # A start-up that fails past this point (a bad setting, a model file) must not
        # leave the store's connection threads behind: the process would never exit.
        if opened is not None:
            await opened.close()
        raise


def _embedder(embedder: Embedder | FromSettings | None) -> Embedder | None:
    if embedder is FROM_SETTINGS:
        from kuuki.embed import default_embedder

        return default_embedder()
    return embedder


def _chosen_llms(
    settings: Settings, llm: LLMChoice, judge_llm: LLMChoice
) -> tuple[LLM | None, LLM | None]:
    """The main and judge models: those given, or those the settings name."""
    main_llm = make_llm(settings.llm) if llm is FROM_SETTINGS else llm
    if judge_llm is not FROM_SETTINGS:
        return main_llm, judge_llm
    return main_llm, make_llm(settings.judge) if settings.judge_llm else main_llm


async def _open_store(
    settings: Settings, store: Store | str | FromSettings | None
) -> Store | None:
    """The store given, or the one at the URL given or set, or None for none."""
    from kuuki.store import Store

    if store is None or isinstance(store, Store):
        return store
    return await Store.open(settings.store_url or None if store is FROM_SETTINGS else store)


async def _open_memory(
    settings: Settings, store: Store | None, clock: Clock, main_llm: LLM | None,
    embedder: Embedder | None,
    prompts: Prompts, dump: PromptDump | None, bot_user_ids: Sequence[str], guard: ReplyGuard,
    model_calls: ScheduledLLM | None,
) -> MemoryService | None:
    """Memory: none without a store."""
    if store is None:
        return None
    from kuuki.memory.service import MemoryService

    return await MemoryService.open(
        settings, store=store, clock=clock, llm=main_llm, embedder=embedder,
        prompts=prompts, dump=dump, bot_user_ids=tuple(bot_user_ids),
        scaffold=guard.scaffold, model_calls=model_calls,
        languages=model_languages(settings.llm, main_llm),
    )


def _responder(
    settings: Settings, prompts: Prompts, main_llm: LLM | None, guard: ReplyGuard,
    dump: PromptDump | None, provider: Any, clock: Clock,
) -> ModelResponder:
    return ModelResponder(
        settings.persona, context_builder(settings.persona, prompts, settings.llm, main_llm),
        main_llm, guard, dump=dump,
        memory=provider,
        languages=model_languages(settings.llm, main_llm),
        clock=clock, budget_s=settings.llm.reply_budget_s,
        toolbox=build_toolbox(settings, clock, provider),
        tools_off=tools_off(settings.llm, main_llm),
    )


def _judge(
    settings: Settings, j_llm: LLM | None, clock: Clock, embedder: Any,
    dump: PromptDump | None, memory: MemoryService | None, prompts: Prompts, guard: ReplyGuard,
    policies: ChannelPolicies,
) -> Pipeline:
    from kuuki.decide.judge.build import build_judge

    return build_judge(
        settings, j_llm, clock, embedder=embedder, dump=dump,
        memory=memory.provider(retrieve_facts=False) if memory is not None else None,
        builder=context_builder(settings.persona, prompts, settings.judge, j_llm),
        scaffold=guard.scaffold, policy_of=policies.of,
    )


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
