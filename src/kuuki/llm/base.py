"""The LLM port: one async `complete` call, whatever runs behind it."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool the model asked for: ``arguments`` is the JSON text exactly as written
    (untrusted: kuuki.respond.tools validates it against the tool's schema before anything runs)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a model is told about it: name, what it does, a JSON schema for its
    arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn. An assistant turn may carry ``tool_calls``; a ``tool`` turn answers the
    call whose id is ``tool_call_id`` (the standard chat-completions shape)."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completion:
    """What a back-end returned.

    ``text`` is the raw text; ``data`` is the parsed JSON object when a ``json_schema`` was
    given (already validated against it by the back-end), else None.
    """

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    data: Any = None
    latency_ms: float = 0.0
    # "stop" when the model ended its answer, "length" when max_tokens cut it off (the
    # output guard then drops the unfinished sentence).
    finish_reason: str = "stop"
    # The tools the model asked for (only from `ToolCalling.complete_tools`); ``text`` may
    # then be empty.
    tool_calls: tuple[ToolCall, ...] = ()


class LLM(Protocol):
    """A chat-completion back-end.

    `complete` sends the messages and returns a Completion. With ``json_schema`` the
    back-end constrains or requests JSON and returns the parsed object in ``data``; if it
    cannot produce an object that matches the schema it raises LLMBadOutput. Timeouts
    raise LLMTimeout, an unreachable service LLMUnavailable; nothing else escapes except
    LLMError subclasses. `name` identifies the model in traces.
    """

    name: str

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion: ...


@runtime_checkable
class ToolCalling(Protocol):
    """A back-end that can offer the model tools while it answers.

    `complete_tools` sends the messages (which may hold earlier tool calls and ``tool``
    turns with their results) and the tools the model may ask for; it returns a Completion
    whose ``tool_calls`` holds the calls, or whose text is the answer. With ``tools`` empty
    the model must answer in text. Errors are LLMErrors, as for `complete`.
    `tool_support` is None when tools work, else a sentence saying why not (for the trace).
    """

    def tool_support(self) -> str | None: ...

    async def complete_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion: ...


@runtime_checkable
class Warmable(Protocol):
    """A back-end with a slow first call (a local model to load) that can pay it up front.

    `warm` loads what the first call would load and returns when the model is ready; it
    raises LLMError like `complete` would. The app calls it at start-up, so the first
    person who talks to the bot does not wait for a model load.
    """

    async def warm(self) -> None: ...


@runtime_checkable
class TokenCounter(Protocol):
    """A back-end that can count a text's tokens the way its model will read them."""

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class Interruptible(Protocol):
    """A back-end whose running call can be ended early (a local model at shutdown)."""

    def interrupt(self) -> None: ...


# What the current call is for ("judge", "reply", …), set by `kuuki.llm.record.call_llm`
# around each call. A context variable rather than a `complete` argument keeps the port
# small; back-ends that count or label calls (the stub) read it, the others ignore it.
current_purpose: ContextVar[str | None] = ContextVar("kuuki_llm_purpose", default=None)

# When the current call must be over, on the clock's monotonic scale (`Clock.monotonic`),
# or None for no limit beyond the back-end's own timeout. The responder sets it for a reply
# (its budget, `llm.reply_budget_s`); `ScheduledLLM` enforces it, queue wait included.
current_deadline: ContextVar[float | None] = ContextVar("kuuki_llm_deadline", default=None)


def render_messages(messages: Sequence[ChatMessage]) -> str:
    """The messages as plain text, one ``role: content`` block each, for traces and dumps."""
    return "\n\n".join(_rendered(m) for m in messages)


def _rendered(m: ChatMessage) -> str:
    calls = "".join(f"\n  → {c.name}({c.arguments})" for c in m.tool_calls)
    return f"{m.role}: {m.content}{calls}"
