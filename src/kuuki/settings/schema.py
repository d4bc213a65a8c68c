"""The values settings are made of: the persona, one LLM back-end's settings, and the
choices a setting may take. Frozen dataclasses, no I/O (kuuki.settings.core holds `Settings`
and the table of every setting; kuuki.settings.loader reads them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kuuki.text.secrets import MASK

LANGUAGES = ("ja", "en")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
JUDGE_MODES = ("auto", "hybrid", "llm", "rules")
SLACK_MODES = ("socket", "http")
MAX_SHARDS = 65_536
# The LLM back-ends are the registry's one list (kuuki.llm.registry; see llm_backends).
# Whether the main model is offered tools: auto is on, except for the shipped SmolLM2-135M
# (measured unable to pick a tool; kuuki.app.tools_for, docs/decisions.md).
LLM_TOOL_MODES = ("auto", "on", "off")

DEFAULT_EMOJI = ("👀", "😊", "👍", "🤔", "✨", "💡")
DEFAULT_SYSTEM_PROMPT = {
    "en": (
        "You are {name}, a friendly regular member of this chat. You speak casually and "
        "briefly, like a considerate friend, and you never dominate the conversation."
    ),
    "ja": (
        "あなたは「{name}」という名前の、このチャットの気さくな常連メンバーです。"
        "友達のように短く自然に話し、会話を独占しません。"
    ),
}


@dataclass(frozen=True, slots=True)
class Persona:
    """Who the bot is. ``language`` is only the default: each conversation is answered in
    its own language (kuuki.text.language); "" means "unset", and then a persona whose
    name or aliases are written in Japanese defaults to ``ja``, any other to ``en``."""

    name: str = "Kuu"
    aliases: tuple[str, ...] = ("くう", "クウ", "空気")
    language: str = ""
    system_prompt: str = ""
    keywords: tuple[str, ...] = ()
    emoji: tuple[str, ...] = DEFAULT_EMOJI

    @property
    def default_language(self) -> str:
        if self.language in LANGUAGES:
            return self.language
        japanese = any(_JAPANESE.search(n) for n in self.names)
        return "ja" if japanese else "en"

    @property
    def prompt(self) -> str:
        return self.prompt_for(self.default_language)

    def prompt_for(self, language: str) -> str:
        """The persona prompt for a conversation in ``language``: the user's own prompt
        (whatever its language) if set, else the built-in one in that language."""
        template = self.system_prompt or DEFAULT_SYSTEM_PROMPT.get(
            language, DEFAULT_SYSTEM_PROMPT[self.default_language]
        )
        return template.replace("{name}", self.name)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, slots=True)
class LLMSettings:
    backend: str = "embedded"
    model: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    model_path: str = ""
    timeout_s: float = 60.0
    max_retries: int = 3
    # A reply (or ack) that is not written within this many seconds, waiting for the
    # model included, becomes the fallback, so the channel's other messages never wait
    # longer behind it (kuuki.respond.responder; docs/decisions.md, "The reply budget").
    reply_budget_s: float = 15.0
    prompt_tokens: int = 0  # 0: sized for the kind of model (kuuki.app.prompt_budget)
    # The languages the model can write; () means "as known for the model": the shipped
    # SmolLM2 writes English only, any other model is trusted with both (kuuki.app).
    languages: tuple[str, ...] = ()
    tools: str = "auto"
    # What 1,000 tokens (prompt and completion) cost, per model name as the traces record
    # it ("*": any model); empty: no cost is shown (`kuuki stats`, kuuki.explain.stats).
    price_per_1k_tokens: Mapping[str, float] = field(default_factory=dict)

    def redacted(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": self.base_url,
            "api_key": MASK if self.api_key else "",
            "model_path": self.model_path,
            "timeout_s": self.timeout_s,
        }
