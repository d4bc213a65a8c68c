"""Step 6 of the path: turn a verdict into an Action, generating text with the shared context.

Safe defaults when generation fails (the trace records which one was used):
- reply or ack whose generation fails or comes back empty → a reaction with the persona's
  first emoji, so the person still sees they were heard;
- no LLM configured (`--llm none`) → the action stands with no text (replay prints null).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .domain import Action, ActionKind, Channel, DecisionTrace, Message
from .llm.base import LLM, ChatMessage
from .llm.record import call_llm
from .memory.context import ContextBuilder, PromptContext
from .safety import defuse_mentions
from .settings import Persona

PromptDump = Callable[[str, Sequence[ChatMessage]], None]

_REACT_CUES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("thank", "thx", "ありがと", "感謝", "助かった"), "😊"),
    (("?", "？", "why", "how", "なぜ", "どう"), "🤔"),
    (("idea", "think", "思いつ", "アイデア", "ひらめ"), "💡"),
    (("great", "awesome", "nice", "cool", "done", "すごい", "やった", "できた", "最高"), "✨"),
    (("ok", "sure", "agree", "了解", "いいね", "賛成", "おけ"), "👍"),
)


class MemoryProvider(Protocol):
    """Fills the memory fields of a PromptContext for one channel and trigger message.

    Implementations apply the privacy rule: only memories whose source is the channel
    itself or a public channel of the same workspace.
    """

    async def fill(self, ctx: PromptContext, trace: DecisionTrace) -> None: ...


def pick_emoji(text: str, emoji: Sequence[str]) -> str:
    """A reaction that fits the message, from the persona's set."""
    lowered = text.lower()
    for cues, candidate in _REACT_CUES:
        if candidate in emoji and any(c in lowered for c in cues):
            return candidate
    return emoji[0] if emoji else "👀"


@dataclass(slots=True)
class Responder:
    persona: Persona
    builder: ContextBuilder
    llm: LLM | None
    memory: MemoryProvider | None = None
    dump: PromptDump | None = None
    reply_max_tokens: int = 120
    ack_max_tokens: int = 24
    max_sentences: int = 4

    async def act(
        self,
        kind: ActionKind,
        channel: Channel,
        trigger: Message,
        conversation: Sequence[Message],
        other: Sequence[Message],
        trace: DecisionTrace,
        *,
        emoji: str | None = None,
        task: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> Action:
        thread = trigger.thread
        if kind is ActionKind.NONE:
            return Action.none(channel.id, trigger.id)
        if kind is ActionKind.REACT:
            chosen = emoji or pick_emoji(trigger.text, self.persona.emoji)
            return Action(ActionKind.REACT, channel.id, trigger.id, emoji=chosen, thread=thread)
        if self.llm is None:
            trace.step("generation off: action without text")
            return Action(kind, channel.id, trigger.id, text=None, thread=thread)
        ctx = PromptContext(
            channel=channel,
            now=trace.started_at,
            conversation=conversation,
            other_messages=other,
            trigger=trigger,
        )
        if self.memory is not None:
            try:
                await self.memory.fill(ctx, trace)
            except Exception as exc:  # memory must never cost the reply
                trace.error(f"memory context failed: {type(exc).__name__}: {exc}")
        name = task or ("ack" if kind is ActionKind.ACK else "reply")
        system = self.builder.render(name, ctx, **(extra or {}))
        instruction = (
            f"({self.persona.name}'s next message)"
            if self.persona.language == "en"
            else f"（{self.persona.name}の次の発言）"
        )
        messages = [ChatMessage("system", system), ChatMessage("user", instruction)]
        completion = await call_llm(
            self.llm,
            trace,
            name,
            messages,
            max_tokens=self.ack_max_tokens if kind is ActionKind.ACK else self.reply_max_tokens,
            temperature=0.7,
            dump=self._dump_for(trace),
        )
        text = self.clean(completion.text if completion else "")
        if not text:
            fallback = pick_emoji(trigger.text, self.persona.emoji)
            trace.step(f"{name}: no usable text from the model → react {fallback}")
            return Action(ActionKind.REACT, channel.id, trigger.id, emoji=fallback, thread=thread)
        return Action(kind, channel.id, trigger.id, text=text, thread=thread, reply_to=trigger.id)

    def _dump_for(self, trace: DecisionTrace) -> PromptDump | None:
        dump = self.dump
        if dump is None:
            return None
        prefix = f"{trace.channel_id}-{trace.message_id}"
        return lambda purpose, messages: dump(f"{prefix}-{purpose}", messages)

    def clean(self, text: str) -> str:
        """The model's text as a chat message: no name prefix, one paragraph, no pings."""
        text = text.strip().strip('"').strip()
        # Small models like to prefix their own name ("Kuu: ...") or a timestamp line.
        text = re.sub(r"^\**\d{4}-\d\d-\d\d[^\n]*\n", "", text)
        for name in self.persona.names:
            text = re.sub(rf"^\**{re.escape(name)}\**\s*[:：]\s*", "", text, flags=re.I)
        # A chat member writes one short message, not an essay: keep the first paragraph
        # and at most a few sentences of it (small models ramble and repeat).
        text = text.strip().split("\n\n")[0].strip()
        sentences = re.findall(r"[^.!?。！？]+[.!?。！？]*\s*", text)
        if len(sentences) > self.max_sentences:
            text = "".join(sentences[: self.max_sentences]).strip()
        return defuse_mentions(text)
