"""The engine from settings: its config, each channel's buffer and tracker, and the
decision pipeline it runs (`make_engine`; `build_app` adds the store, memory and models).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from kuuki.clock import Clock
from kuuki.decide.judge.base import AddressedOnlyJudge, Judge
from kuuki.decide.pipeline import Pipeline, build_pipeline
from kuuki.decide.stages.channel_policy import PolicyOf
from kuuki.domain import Channel
from kuuki.engine.config import SINGLE_PROCESS
from kuuki.engine.core import Engine, EngineConfig, EngineOptions
from kuuki.engine.intake import Inbox
from kuuki.engine.worker import Prepare
from kuuki.memory.buffer import ChannelBuffer
from kuuki.ports import (
    Buffer,
    BufferFactory,
    EngineStorage,
    MemoryHook,
    Outbox,
    Responder,
    Tracker,
    Writer,
)
from kuuki.settings import Settings


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
    store: EngineStorage | None = None,
    writer: Writer | None = None,
    inbox: Inbox | None = None,
    tracker_factory: Callable[[Channel], Tracker | None] | None = None,
    memory_hooks: Sequence[MemoryHook] = (),
    bot_user_ids: Sequence[str] = (),
    prepare: Prepare | None = None,
    options: EngineOptions = SINGLE_PROCESS,
    policy_of: PolicyOf | None = None,
    shadow: bool = False,
) -> Engine:
    """An `Engine` for ``settings``: ``judge`` is the decision pipeline built once at
    start-up, or a bare `Judge` (tests, plugins) run behind the pipeline's gates (None:
    reply when addressed); ``policy_of``: each channel's policy (a `listen` channel is in
    shadow mode); ``shadow``: everywhere, whatever the settings say (as `settings.shadow`
    does); the rest are the engine's collaborators."""
    pipeline = (
        judge
        if isinstance(judge, Pipeline)
        else build_pipeline(settings, judge=judge or AddressedOnlyJudge(), policy_of=policy_of)
    )
    config = engine_config(settings)
    return Engine(
        replace(config, shadow=True) if shadow or settings.shadow else config, clock=clock,
        outbox=outbox,
        responder=responder, pipeline=pipeline, buffer_factory=buffer_factory(settings),
        store=store, writer=writer, inbox=inbox, tracker_factory=tracker_factory,
        memory_hooks=memory_hooks, bot_user_ids=bot_user_ids, prepare=prepare,
        options=options, listen_only=None if policy_of is None else _listens(policy_of),
    )


def _listens(policy_of: PolicyOf) -> Callable[[Channel], bool]:
    def listen_only(channel: Channel) -> bool:
        return policy_of(channel).mode == "listen"

    return listen_only


def prefetcher(embedder: Any) -> Callable[[Any], Any] | None:
    from kuuki.embed import BatchPrefetcher, USEEmbedder

    if not isinstance(embedder, USEEmbedder):
        return None
    batcher = BatchPrefetcher(embedder)

    async def prepare(msgs: Any) -> None:
        await batcher.prefetch([m.text for m in msgs])

    return prepare
