"""A back-end that answers instantly with "nothing to do".

Used to measure how many LLM calls a pipeline would make without running a model: every
structured request gets the most passive object its schema allows (booleans false,
numbers at their minimum, empty strings and lists, a "none"-like enum value where one is
recognisable). A free-text request for something the bot says (a reply, an ack, proactive
talk) gets one short fixed sentence in the language of the message it answers, so the
whole path — the guard, the send, what is recorded — runs as with a model; every other
free-text request gets "". Its judgments are not judgments: the judge mode ``auto`` never
asks it (kuuki.app.judge_mode_for).
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kuuki.llm.base import ChatMessage, Completion, current_purpose
from kuuki.text.language import detect

# What the stub says when the bot speaks, by language: plain, complete and in no way an
# echo of the prompt, so the output guard lets it through; one picked by the message it
# answers, so the bot does not say the same thing twice in a row.
SAYS = {
    "en": ("Sounds good to me.", "I see, thanks for telling me.", "That makes sense.",
           "Good to know.", "Nice, I like that."),
    "ja": ("なるほど、いいと思います。", "そうなんですね、教えてくれてありがとう。",
           "たしかに、それはわかります。", "いいですね、覚えておきます。",
           "それは気になりますね。"),
}
_SPOKEN = ("reply", "ack", "proactive")

# Enum values that mean "do nothing"/"no change", in order of preference.
_PASSIVE_WORDS = (
    "none",
    "nothing",
    "no",
    "no_action",
    "noop",
    "skip",
    "ignore",
    "silent",
    "wait",
    "pass",
    "same",
    "keep",
    "stay",
    "unchanged",
    "false",
    "off",
)


def passive_value(schema: dict[str, Any]) -> Any:
    """The most "do nothing" value that still matches ``schema``."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return _passive_choice(list(schema["enum"]))
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        # Prefer null where allowed: "no value" is as passive as it gets.
        kind = "null" if "null" in kind else kind[0]
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {key: passive_value(sub) for key, sub in props.items()}
    if kind == "array":
        item_schema = schema.get("items", {})
        return [passive_value(item_schema) for _ in range(schema.get("minItems", 0))]
    if kind == "boolean":
        return False
    if kind in ("number", "integer"):
        return _passive_number(schema, integer=kind == "integer")
    if kind == "string":
        return "-" * schema.get("minLength", 0)
    return None


def _passive_choice(options: list[Any]) -> Any:
    by_word = {str(o).strip().lower(): o for o in options}
    for word in _PASSIVE_WORDS:
        if word in by_word:
            return by_word[word]
    return options[0] if options else None


def _passive_number(schema: dict[str, Any], *, integer: bool) -> float | int:
    value: float = 0
    if "minimum" in schema and schema["minimum"] > value:
        value = schema["minimum"]
    if "maximum" in schema and schema["maximum"] < value:
        value = schema["maximum"]
    return int(value) if integer else value


class StubLLM:
    """Counts calls and answers each one with the passive value for its schema.

    ``calls`` is the total; ``by_purpose`` splits it by the purpose `call_llm` was given,
    falling back to the schema's ``title`` or to "text" / "json".
    """

    def __init__(self, name: str = "stub") -> None:
        self.name = name
        self.calls = 0
        self.by_purpose: Counter[str] = Counter()

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        self.calls += 1
        self.by_purpose[self._purpose(json_schema)] += 1
        if json_schema is None:
            return Completion(text=self._says(messages), model=self.name)
        data = passive_value(json_schema)
        return Completion(text=json.dumps(data), model=self.name, data=data)

    @staticmethod
    def _says(messages: Sequence[ChatMessage]) -> str:
        purpose = (current_purpose.get() or "").split("-")[0]
        if purpose not in _SPOKEN or not messages:
            return ""
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        # the prompt is written in the conversation's language; the message may be too short
        lang = detect(messages[0].content) or detect(last) or "en"
        options = SAYS.get(lang, SAYS["en"])
        return options[zlib.crc32(last.encode("utf-8", "replace")) % len(options)]

    @staticmethod
    def _purpose(json_schema: dict[str, Any] | None) -> str:
        purpose = current_purpose.get()
        if purpose:
            return purpose
        if json_schema is None:
            return "text"
        return str(json_schema.get("title", "json"))
