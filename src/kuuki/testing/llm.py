"""`ScriptedLLM`: a test double that answers from a queue.

Importing this module registers it as the ``scripted`` back-end. It can call tools: an
enqueued `ToolCalls` (made with `tool_call`) is the model asking for tools in a tool round.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kuuki.llm.base import ChatMessage, Completion, ToolCall, ToolSpec, Usage
from kuuki.llm.registry import register
from kuuki.llm.schema import parse_json, validate
from kuuki.llm.stub import passive_value


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """A scripted answer that asks for tools (``text`` beside them, usually empty)."""

    calls: tuple[ToolCall, ...]
    text: str = ""

    def __add__(self, other: ToolCalls) -> ToolCalls:
        return ToolCalls(self.calls + other.calls, self.text or other.text)


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *,
              id: str = "") -> ToolCalls:
    """The model asking for one tool; ``arguments`` as a dict, or raw text (to script a
    malformed call). Add two with ``+`` for several calls in one round."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCalls((ToolCall(id, name, raw),))


Scripted = str | dict[str, Any] | list[Any] | BaseException | ToolCalls


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """What one `complete` (or `complete_tools`) call was asked."""

    messages: tuple[ChatMessage, ...]
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float
    # The tools offered (None: a plain `complete` call, which can offer none).
    tools: tuple[ToolSpec, ...] | None = None

    @property
    def prompt(self) -> str:
        return "\n".join(m.content for m in self.messages)


class _Unset:
    pass


_UNSET = _Unset()


class ScriptedLLM:
    """An `LLM` that replays enqueued answers and records every call in ``history``.

    Each call takes the next item: a string is the answer text (parsed and validated
    when a schema was given, so garbage raises LLMBadOutput as a real back-end would), a
    dict or list is the answer data (validated against the schema, if any), an exception
    instance is raised. With the queue empty the ``default`` answers; left unset, that is
    "" for text and the schema's passive object for JSON; ``default=None`` makes an
    unexpected call fail the test with AssertionError.
    """

    def __init__(
        self,
        *items: Scripted,
        default: Scripted | _Unset | None = _UNSET,
        name: str = "scripted",
        tools: bool = True,
    ) -> None:
        self.name = name
        self.tools = tools
        self.default = default
        self.history: list[ScriptedCall] = []
        self._queue: deque[Scripted] = deque(items)

    def enqueue(self, *items: Scripted) -> ScriptedLLM:
        """Add answers for the next calls, in order; returns self for chaining."""
        self._queue.extend(items)
        return self

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def calls(self) -> int:
        return len(self.history)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        self.history.append(ScriptedCall(tuple(messages), json_schema, max_tokens, temperature))
        item = self._next(json_schema)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ToolCalls):
            raise AssertionError(f"{self.name}: tool calls scripted for a call without tools")
        if isinstance(item, str):
            data = parse_json(item, json_schema) if json_schema is not None else None
            return self._completion(item, data, messages)
        if json_schema is not None:
            validate(item, json_schema)
        return self._completion(json.dumps(item), item, messages)

    def tool_support(self) -> str | None:
        return None if self.tools else f"{self.name} is scripted without tools"

    async def complete_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        self.history.append(ScriptedCall(tuple(messages), None, max_tokens, temperature,
                                         tuple(tools)))
        item = self._next(None)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ToolCalls):
            done = self._completion(item.text, None, messages)
            return Completion(done.text, done.model, done.usage, tool_calls=item.calls,
                              finish_reason="tool_calls")
        text = item if isinstance(item, str) else json.dumps(item)
        return self._completion(text, None, messages)

    def _next(self, json_schema: dict[str, Any] | None) -> Scripted:
        if self._queue:
            return self._queue.popleft()
        if self.default is None:
            raise AssertionError(f"{self.name}: unexpected LLM call, nothing scripted")
        if isinstance(self.default, _Unset):
            return passive_value(json_schema) if json_schema is not None else ""
        return self.default

    def _completion(self, text: str, data: Any, messages: Sequence[ChatMessage]) -> Completion:
        # Rough token counts (words), so traces and budgets see plausible numbers.
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        return Completion(
            text=text, model=self.name, usage=Usage(prompt_tokens, len(text.split())), data=data
        )


register("scripted", ScriptedLLM)
