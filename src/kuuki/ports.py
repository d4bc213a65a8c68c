"""The ports: what the engine needs from the outside, and what others need of it.

What the engine reads: adapters (platforms, the terminal, replay) implement `Outbox`; the
store implements `MessageStore` and `Writer`; the memory layer `MemoryHook`; the
conversation package `Tracker` (the full surface the engine and the judge read,
kuuki.conversation.tracker); the short-term memory `Buffer` (kuuki.memory.buffer, made per
channel by a `BufferFactory`); step 5, the decision pipeline, `Decider` (kuuki.decide);
steps 6's generation `Responder` (kuuki.respond). The responder and the judge's LLM stage
read memory through `MemoryProvider`.

What others read of the engine (kuuki.engine.core.Engine implements them): the memory
layer `EngineControl` (proactive talk, forgetting a person, maintenance); the platform
adapters `ReadBack` (a channel that lost events to the store is read back) and the
`/kuuki` commands `EngineCommands`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from kuuki.domain import Action, Channel, Decision, DecisionTrace, Message, Verdict

if TYPE_CHECKING:
    from kuuki.llm.base import ChatMessage
    from kuuki.memory.context import PromptContext

# Where prompts are written for inspection (kuuki replay --dump-prompts): key, messages.
PromptDump = Callable[[str, Sequence["ChatMessage"]], None]


class MemoryProvider(Protocol):
    """Fills the memory fields of a PromptContext for one channel and trigger message.

    Implementations apply the privacy rule: only memories whose source is the channel
    itself or a public channel of the same workspace.
    """

    async def fill(self, ctx: PromptContext, trace: DecisionTrace) -> None: ...


class Outbox(Protocol):
    """Where actions go: a platform adapter, the terminal, the replay printer.

    `send` performs the action in `channel` and returns the bot's posted Message for reply
    and ack (so it joins the timeline), None for reactions. It may raise; the engine
    records the failure in the decision's trace. `typing` shows a typing indicator while
    the body runs (a no-op where the platform has none).
    """

    async def send(self, channel: Channel, action: Action) -> Message | None: ...

    def typing(self, channel: Channel) -> contextlib.AbstractAsyncContextManager[None]: ...


class Tracker(Protocol):
    """A channel's live conversation structure (kuuki.conversation.tracker): which
    conversation a message joined, which questions are still open."""

    def observe(self, msg: Message) -> Any: ...

    def conversation_of(self, message_id: str) -> str | None: ...

    def edit(self, message_id: str, text: str) -> None: ...

    def delete(self, message_id: str) -> None: ...

    def same_conversation(
        self, conversation_id: str | None, message_id: str
    ) -> tuple[bool, float]: ...

    def unanswered_questions(self, now: datetime, min_age_s: float) -> list[Message]: ...

    def vector_of(self, message_id: str) -> Any: ...

    def embed_words(self, texts: Sequence[str]) -> Any: ...


class MessageStore(Protocol):
    """The messages as the engine's steps change them: a channel's recent messages (read
    when its queue starts), edits, deletes and reactions (the store's messages part)."""

    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: Any = None
    ) -> list[Message]: ...

    async def edit_message(self, message_id: str, text: str) -> bool: ...

    async def delete_message(self, message_id: str) -> bool: ...

    async def add_reaction(self, message_id: str, user_id: str, emoji: str, at: Any) -> None: ...


class CatchUpHistory(Protocol):
    """What the decider asks when it catches up (the store's history part): which messages
    were decided or answered, which re-checks were still open, messages by id."""

    async def decided(self, message_ids: Sequence[str]) -> set[str]: ...

    async def answered(self, message_ids: Sequence[str], bot_ids: Iterable[str]) -> set[str]: ...

    async def open_rechecks(self, channel_id: str, since: Any) -> list[tuple[str, Any]]: ...

    async def messages_by_ids(self, message_ids: Sequence[str]) -> list[Message]: ...


class DecisionLog(Protocol):
    """The decisions stored, for `/kuuki why` (the store's browse part)."""

    async def latest_decision(self, channel_id: str | None = None) -> dict[str, Any] | None: ...


class EngineStorage(Protocol):
    """The parts of the store the engine's steps use (kuuki.store.Store has them); each
    step is handed the one it needs."""

    @property
    def messages(self) -> MessageStore: ...

    @property
    def history(self) -> CatchUpHistory: ...

    @property
    def browse(self) -> DecisionLog: ...


class Writer(Protocol):
    """Write-behind for the hot path: messages, decisions, and inbox events handled.

    `handled` marks an inbox event done in the same transaction as everything queued
    before it, so a crash never separates what handling wrote from the mark.
    """

    async def add_message(self, m: Message, *, conversation_id: str | None = None) -> None: ...

    async def add_decision(self, d: Decision) -> None: ...

    async def handled(self, event_id: str) -> None: ...

    async def flush(self) -> Any: ...


class MemoryHook(Protocol):
    """Step 4: sees every recorded message; must return quickly (schedule, don't work)."""

    async def observe(self, channel: Channel, msg: Message, *, from_bot: bool) -> None: ...


class Buffer(Protocol):
    """A channel's short-term memory (kuuki.memory.buffer.ChannelBuffer): the last ``size``
    messages, none older than ``ttl``, oldest first. `edit` and `delete` return whether
    the message was held; `prune` drops the expired ones and returns how many."""

    @property
    def size(self) -> int: ...

    @property
    def ttl(self) -> timedelta: ...

    def add(self, msg: Message) -> None: ...

    def prune(self, now: datetime) -> int: ...

    def recent(self, now: datetime | None = None, limit: int | None = None) -> list[Message]: ...

    def edit(self, message_id: str, text: str) -> bool: ...

    def delete(self, message_id: str) -> bool: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Message]: ...


# A new, empty buffer for a channel the engine opens (sized by the settings).
BufferFactory = Callable[[], Buffer]


class Generated(Protocol):
    """What step 6 produced: the action, and when it is a fallback, why."""

    @property
    def action(self) -> Action: ...

    @property
    def fallback(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Scene:
    """What an action is about: the channel, the message (``trigger``), the conversation
    it belongs to (oldest first, the message included) and the channel's other recent
    messages."""

    channel: Channel
    trigger: Message
    conversation: Sequence[Message]
    other: Sequence[Message]


class Responder(Protocol):
    """Step 6's generation with the output guard (kuuki.respond.responder.ModelResponder).

    `act` carries out a verdict about the scene's message: the action, with the text the
    model wrote; a model failure or a rejected text ends in the documented fallback (said
    in ``Generated.fallback``), never in an exception from the model. `fallback` is that
    safe default, for a failure the engine caught itself.
    """

    async def act(self, verdict: Verdict, scene: Scene, trace: DecisionTrace) -> Generated: ...

    def fallback(
        self, verdict: Verdict, scene: Scene, trace: DecisionTrace, why: str
    ) -> Generated: ...


@dataclass(frozen=True, slots=True)
class LiveChannel:
    """A live channel as proactive talk reads it: its buffer (oldest first) and the last
    message of a person in it."""

    recent: list[Message]
    last_human: Message | None


class EngineControl(Protocol):
    """What the memory layer asks of the running engine, which carries it out on its own
    state (kuuki.memory.service, .proactive, .forgetting).

    `propose` offers proactive talk about ``wake``: it goes on the channel's queue and
    through the decision pipeline; returns the decision, or None when the channel is not
    live. `live` reads a live channel (None when it is not). `channels_of` names the live
    channels whose buffers hold a message of ``user_id``; `forget_person` erases their
    messages (and the bot's answers to them) from buffers and trackers and returns the
    channels it erased from. `prune_buffers` drops expired buffer messages (how many);
    `evict_idle` drops idle channels (how many); `live_channels` and `buffered` count the
    live channels and the messages their buffers hold. `on_decision` calls ``listener``
    with every finished decision (memory counts who talked to the bot from them).
    """

    def on_decision(self, listener: Callable[[Decision], Any]) -> None: ...

    async def propose(
        self, channel: Channel, wake: Message, *, topic: str, score: float, reason: str
    ) -> Decision | None: ...

    def live(self, channel_id: str) -> LiveChannel | None: ...

    def channels_of(self, user_id: str) -> set[str]: ...

    def forget_person(self, user_id: str) -> set[str]: ...

    def prune_buffers(self, now: datetime) -> int: ...

    def evict_idle(self) -> int: ...

    def live_channels(self) -> int: ...

    def buffered(self) -> int: ...


class ReadBack(Protocol):
    """What an adapter that reads lost events back from a platform's history uses
    (kuuki.platforms.retry): `read_back_on_refusal` makes a channel whose events the store
    refused refuse newer ones until `reopen` (so none is stored past a lost one), which
    also queues what the store took in of them while it refused (a commit whose answer was
    lost, an event whose handling the store failed under); its ``left`` is told a channel
    whose work the store failed under (an event, the caught-up marker), to reopen and read
    back once the store answers; `last_taken` is the last message of a channel taken in
    durably, where reading starts."""

    def read_back_on_refusal(self, left: Callable[[str], object] | None = None) -> None: ...

    async def reopen(self, channel_ids: Iterable[str]) -> None: ...

    def last_taken(self, channel_id: str) -> str | None: ...


class EngineCommands(Protocol):
    """What the `/kuuki` commands ask of the engine (kuuki.platforms.commands): `status`
    as a dict of display values, `quiet` for ``minutes`` (0 ends it; returns until when),
    and the channel's latest stored decision (None without a store or a decision)."""

    def status(self, channel: Channel) -> dict[str, Any]: ...

    async def quiet(self, channel: Channel, minutes: float) -> datetime | None: ...

    async def latest_decision(self, channel_id: str) -> dict[str, Any] | None: ...


@dataclass(slots=True)
class DailyUsage:
    """LLM use per UTC day, for `/kuuki status`."""

    day: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
