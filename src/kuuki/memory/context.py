"""The shared context builder: persona and memories rendered broad → narrow.

Every prompt that needs context (reply, ack, judge, proactive talk, summaries) is built
here, so the judge sees the same world the reply generator sees: persona, workspace
memories, channel list and channel memories, thread summaries, the channel's situation,
the speaker, related facts, the channel's other conversations and, last, the target
conversation in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..domain import Channel, Message
from ..prompts import Prompts
from ..settings import Persona


@dataclass(frozen=True, slots=True)
class ChannelMemoryView:
    name: str
    long_term: str = ""
    short_term: str = ""

    @property
    def has_memory(self) -> bool:
        return bool(self.long_term or self.short_term)


@dataclass(frozen=True, slots=True)
class ChannelContextView:
    topics: str
    mood: str
    participants: str
    summary: str


@dataclass(frozen=True, slots=True)
class UserView:
    name: str
    text: str


@dataclass(slots=True)
class PromptContext:
    """Everything one prompt may show. Memory fields are filled by the memory layer,
    which is also where the privacy rule (what may be shown in which channel) is applied."""

    channel: Channel
    now: datetime
    conversation: Sequence[Message]
    other_messages: Sequence[Message] = ()
    workspace_long_term: str = ""
    workspace_short_term: str = ""
    channels: Sequence[ChannelMemoryView] = ()
    thread_memories: dict[str, str] = field(default_factory=dict)
    channel_context: ChannelContextView | None = None
    user_profile: UserView | None = None
    facts: Sequence[str] = ()
    trigger: Message | None = None


class ContextBuilder:
    def __init__(self, persona: Persona, prompts: Prompts) -> None:
        self.persona = persona
        self.prompts = prompts

    def render(self, task: str, ctx: PromptContext, **extra: Any) -> str:
        return self.prompts.render(
            task,
            persona_prompt=self.persona.prompt,
            persona_name=self.persona.name,
            channel=ctx.channel,
            now=ctx.now,
            conversation=list(ctx.conversation),
            other_messages=list(ctx.other_messages),
            workspace_long_term=ctx.workspace_long_term,
            workspace_short_term=ctx.workspace_short_term,
            channels=list(ctx.channels),
            thread_memories=ctx.thread_memories,
            channel_context=ctx.channel_context,
            user_profile=ctx.user_profile,
            facts=list(ctx.facts),
            **extra,
        )
