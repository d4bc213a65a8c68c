"""`ScriptedLLM`: the one scripted model of the tests, answering by purpose.

In the spirit of simonw/llm's test model: `enqueue` answers, read `history`. Every call
comes with its purpose (``judge``, ``state``, ``reply``, ``reply-retry``, ``reply-round2``,
``ack``, ``proactive``, ``memory_summary``, ``memory_workspace``, ``memory_reflection``…,
set by `kuuki.llm.record.call_llm`), and the answer is taken, in this order, from

1. the queue of that exact purpose (``enqueue(answer, purpose="memory_summary")``): memory
   jobs run in the background and interleave with replies in ways one queue cannot script;
2. the shared queue (``enqueue(answer)``, or the constructor's items), which answers every
   purpose, or only those named in ``queue_for`` (by family: ``"reply"`` covers
   ``reply-retry`` and ``reply-round2``), so that a scripted reply is never eaten by a
   summary that happened to run first;
3. the default of that purpose (``defaults``), else the ``default``.

It can call tools: an enqueued `ToolCalls` (made with `tool_call`) is the model asking for
tools in a tool round. `ScriptedLocalLLM` is the same model with a load to wait for.
Importing this module registers `ScriptedLLM` as the ``scripted`` back-end.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kuuki.llm.base import ChatMessage, Completion, ToolCall, ToolSpec, Usage, current_purpose
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

# The purposes a written reply is asked under (with their -retry and -roundN forms).
REPLIES = ("reply", "ack")


def family(purpose: str) -> str:
    """``reply-round2`` → ``reply``: the purpose without its retry or round suffix."""
    return purpose.split("-")[0]


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """What one `complete` (or `complete_tools`) call was asked."""

    messages: tuple[ChatMessage, ...]
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float
    # The tools offered (None: a plain `complete` call, which can offer none).
    tools: tuple[ToolSpec, ...] | None = None
    # What the call was for ("" when made outside `call_llm`).
    purpose: str = ""

    @property
    def prompt(self) -> str:
        return "\n".join(m.content for m in self.messages)


# A default may also be worked out from the call (the crash tests' tagged answers).
Default = Scripted | Callable[[ScriptedCall], Scripted]


class _Unset:
    pass


_UNSET = _Unset()


class ScriptedLLM:
    """An `LLM` that replays enqueued answers by purpose and records every call in
    ``history`` (see the module doc for where an answer is taken from).

    An answer that is a string is the answer text (parsed and validated when a schema was
    given, so garbage raises LLMBadOutput as a real back-end would), a dict or list is the
    answer data (validated against the schema, if any), an exception instance is raised.
    A default may be a function of the `ScriptedCall`. Left unset, the default is "" for
    text and the schema's passive object for JSON; ``default=None`` makes an unexpected
    call fail the test with AssertionError.

    Clearing ``hold`` (a threading Event, set at first) makes the next replies (`REPLIES`)
    wait, as a slow model would, until it is set again; a test may drive the app from
    another thread (Starlette's TestClient).
    """

    def __init__(
        self,
        *items: Scripted,
        default: Default | _Unset | None = _UNSET,
        defaults: Mapping[str, Default] | None = None,
        queue_for: Collection[str] | None = None,
        name: str = "scripted",
        tools: bool = True,
    ) -> None:
        self.name = name
        self.tools = tools
        self.default = default
        self.defaults: dict[str, Default] = dict(defaults or {})
        self.queue_for = queue_for
        self.history: list[ScriptedCall] = []
        self.hold = threading.Event()
        self.hold.set()
        self._queue: deque[Scripted] = deque(items)
        self._routes: dict[str, deque[Scripted]] = {}

    def enqueue(self, *items: Scripted, purpose: str | None = None) -> ScriptedLLM:
        """Add answers for the next calls (of ``purpose`` only, if given), in order;
        returns self for chaining."""
        queue = self._queue if purpose is None else self._routes.setdefault(purpose, deque())
        queue.extend(items)
        return self

    @property
    def pending(self) -> int:
        return len(self._queue) + sum(len(q) for q in self._routes.values())

    @property
    def calls(self) -> int:
        return len(self.history)

    @property
    def purposes(self) -> list[str]:
        """The purpose of each call received, in order."""
        return [c.purpose for c in self.history]

    def prompts(self, purpose: str) -> list[str]:
        """The prompts of the calls made for exactly ``purpose``, in order."""
        return [c.prompt for c in self.history if c.purpose == purpose]

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        call = await self._received(messages, json_schema, max_tokens, temperature, None)
        item = self._next(call)
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
        call = await self._received(messages, None, max_tokens, temperature, tuple(tools))
        item = self._next(call)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ToolCalls):
            done = self._completion(item.text, None, messages)
            return Completion(done.text, done.model, done.usage, tool_calls=item.calls,
                              finish_reason="tool_calls")
        text = item if isinstance(item, str) else json.dumps(item)
        return self._completion(text, None, messages)

    async def _received(
        self,
        messages: Sequence[ChatMessage],
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        tools: tuple[ToolSpec, ...] | None,
    ) -> ScriptedCall:
        purpose = current_purpose.get() or ""
        if family(purpose) in REPLIES and not self.hold.is_set():
            await asyncio.to_thread(self.hold.wait, 30)
        call = ScriptedCall(tuple(messages), json_schema, max_tokens, temperature, tools, purpose)
        self.history.append(call)
        return call

    def _next(self, call: ScriptedCall) -> Scripted:
        routed = self._routes.get(call.purpose)
        if routed:
            return routed.popleft()
        if self._queue and (self.queue_for is None or family(call.purpose) in self.queue_for):
            return self._queue.popleft()
        default = self.defaults.get(call.purpose, self.default)
        if default is None:
            raise AssertionError(f"{self.name}: unexpected LLM call, nothing scripted")
        if isinstance(default, _Unset):
            return passive_value(call.json_schema) if call.json_schema is not None else ""
        if callable(default):
            return default(call)
        return default

    def _completion(self, text: str, data: Any, messages: Sequence[ChatMessage]) -> Completion:
        # Rough token counts (words), so traces and budgets see plausible numbers.
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        return Completion(
            text=text, model=self.name, usage=Usage(prompt_tokens, len(text.split())), data=data
        )


class ScriptedLocalLLM(ScriptedLLM):
    """The scripted model as a local model with a load to wait for.

    It is `Warmable`, so the app treats it as a local model (loaded at start-up, one call
    at a time); that is a matter of type, hence a class of its own. `warm` counts how often
    it was asked to load, sets ``warming`` (a threading Event: the load has begun) and
    returns once ``loaded`` (a threading Event) is set: set from the start, or by the test
    when made with ``loaded=False``. Like llama.cpp, it writes
    nothing before its load has finished: a call during the load waits for it, a call
    before any load fails the test.
    """

    def __init__(self, *items: Scripted, loaded: bool = True, name: str = "local-test",
                 **kw: Any) -> None:
        super().__init__(*items, name=name, **kw)
        self.loaded = threading.Event()
        if loaded:
            self.loaded.set()
        self.warms = 0
        self.warming = threading.Event()
        self._load_done: asyncio.Event | None = None  # made on the app's own loop

    async def warm(self) -> None:
        self.warms += 1
        self.warming.set()
        if self._load_done is None:
            self._load_done = asyncio.Event()
        if not self.loaded.is_set():
            await asyncio.to_thread(self.loaded.wait, 30)
        self._load_done.set()

    async def complete(self, messages: Sequence[ChatMessage], **kw: Any) -> Completion:
        await self._after_load()
        return await super().complete(messages, **kw)

    async def complete_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                             **kw: Any) -> Completion:
        await self._after_load()
        return await super().complete_tools(messages, tools, **kw)

    async def _after_load(self) -> None:
        if self._load_done is None:
            raise AssertionError(f"{self.name}: a local model writes nothing before its load")
        await self._load_done.wait()


register("scripted", ScriptedLLM)
