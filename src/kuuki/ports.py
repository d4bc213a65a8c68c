"""The engine's ports: what it needs from the outside, as Protocols.

Adapters (platforms, the terminal, replay) implement `Outbox`; the store implements
`MessageStore` and `Writer`; the memory layer `MemoryHook`; the conversation package
`Tracker` (the full surface the engine and the judge read, kuuki.conversation.tracker);
the responder and the judge's LLM stage read memory through `MemoryProvider`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from kuuki.domain import Action, Channel, Decision, DecisionTrace, Message

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
    conversation a message joined, who talks to whom, which questions are still open."""

    def observe(self, msg: Message) -> Any: ...

    def conversation_of(self, message_id: str) -> str | None: ...

    def edit(self, message_id: str, text: str) -> None: ...

    def delete(self, message_id: str) -> None: ...

    def same_conversation(
        self, conversation_id: str | None, message_id: str
    ) -> tuple[bool, float]: ...

    def is_one_to_one(self, conversation_id: str) -> bool: ...

    def who_talks_to_whom(self, conversation_id: str) -> dict[tuple[str, str], int]: ...

    def unanswered_questions(self, now: datetime, min_age_s: float) -> list[Message]: ...


class MessageStore(Protocol):
    async def upsert_channel(self, ch: Channel) -> None: ...

    async def recent_messages(
        self, channel_id: str, *, limit: int = 50, since: Any = None
    ) -> list[Message]: ...

    async def edit_message(self, message_id: str, text: str) -> bool: ...

    async def delete_message(self, message_id: str) -> bool: ...

    async def add_reaction(self, message_id: str, user_id: str, emoji: str, at: Any) -> None: ...

    async def decided(self, message_ids: Sequence[str]) -> set[str]: ...

    async def answered(self, message_ids: Sequence[str], bot_ids: Iterable[str]) -> set[str]: ...

    async def open_rechecks(self, channel_id: str, since: Any) -> list[tuple[str, Any]]: ...

    async def messages_by_ids(self, message_ids: Sequence[str]) -> list[Message]: ...


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


@dataclass(slots=True)
class Usage:
    """LLM use per UTC day, for `/kuuki status`."""

    day: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
