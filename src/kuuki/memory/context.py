"""The shared context builder: persona and memories rendered broad → narrow.

Every prompt that needs context (reply, ack, judge, proactive talk, summaries) is built
here, so the judge sees the same world the reply generator sees: persona, workspace
memories, channel list and channel memories, thread summaries, the channel's situation,
the speaker, related facts, the channel's other conversations and, last, the target
conversation in full.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from kuuki.domain import Channel, Message
from kuuki.prompts import Prompts
from kuuki.settings import Persona

_JA = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")


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
    # The language the prompt is written in (the conversation's); memory rendered into
    # it (a profile, the channel's situation) follows it. None: the persona's default.
    language: str | None = None
    # The channel's own system prompt (its policy's), or None for the persona's.
    persona_prompt: str | None = None


def estimate_tokens(text: str) -> int:
    """A cautious token count for budgeting when the model cannot count for itself:
    about four Latin characters a token, and a token or more for every Japanese one."""
    ja = len(_JA.findall(text))
    return int((len(text) - ja) / 3.5 + ja * 1.3) + 1


TokenCount = Callable[[str], int]


class ContextBuilder:
    """Renders a task's prompt with the shared context, within a token budget.

    ``budget`` (tokens, None for no limit) is what the model can read quickly: a small
    local model reads ~200 prompt tokens a second on two cores, so its prompts are cut to
    what matters. Over budget, the least needed goes first: the channel's other
    conversations, timestamps, memories of other channels and the workspace, thread
    summaries, the channel's situation, the speaker's profile, all but one fact, and last
    the oldest messages of the conversation itself (never fewer than three).
    """

    def __init__(
        self,
        persona: Persona,
        prompts: Prompts,
        *,
        budget: int | None = None,
        count: TokenCount | None = None,
    ) -> None:
        self.persona = persona
        self.prompts = prompts
        self.budget = budget
        self.count: TokenCount = count or estimate_tokens

    def render(
        self, task: str, ctx: PromptContext, *, language: str | None = None, **extra: Any
    ) -> str:
        lang = language or self.persona.default_language
        text = self._render(task, ctx, lang, False, extra)
        if self.budget is None or self.count(text) <= self.budget:
            return text
        compact = False
        for cut in _CUTS:
            if cut == "compact":
                compact = True
            else:
                ctx = replace(ctx, **{cut: _EMPTY[cut]})
            text = self._render(task, ctx, lang, compact, extra)
            if self.count(text) <= self.budget:
                return text
        conversation = list(ctx.conversation)
        while len(conversation) > MIN_MESSAGES:
            conversation = conversation[1:]
            text = self._render(task, replace(ctx, conversation=conversation), lang, True, extra)
            if self.count(text) <= self.budget:
                break
        return text

    def _render(
        self, task: str, ctx: PromptContext, lang: str, compact: bool, extra: dict[str, Any]
    ) -> str:
        return self.prompts.render(
            task,
            language=lang,
            persona_prompt=ctx.persona_prompt or self.persona.prompt_for(lang),
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
            trigger=ctx.trigger,
            compact=compact,
            **extra,
        )


MIN_MESSAGES = 3
# What goes first when a prompt is over its budget, in order ("compact": no timestamps).
_CUTS = (
    "other_messages", "compact", "channels", "workspace_long_term", "workspace_short_term",
    "thread_memories", "channel_context", "user_profile", "facts",
)
_EMPTY: dict[str, Any] = {
    "other_messages": (), "channels": (), "workspace_long_term": "", "workspace_short_term": "",
    "thread_memories": {}, "channel_context": None, "user_profile": None, "facts": (),
}
