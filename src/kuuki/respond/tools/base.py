"""What a tool is, and what it may see.

A tool has a name, a description and a JSON schema for its arguments (all three are what
the model is told), and an async `run`. It gets a `ToolContext` — the channel the question
was asked in, who asked, and the time — and nothing else: no outbox, no engine, no other
channel. A tool can only return text (or JSON) for the model to read; posting, pinging and
acting stay with the engine, which posts the final reply in the asking channel only.

`run` raises `ToolError` with a short sentence for anything the model should hear about
("no such city"); any other exception is caught by the toolbox and told as an error too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from kuuki.domain import Channel, User


class ToolError(Exception):
    """A tool could not answer; the message is what the model is told (keep it short)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Everything a tool may know about the question: where, who, when."""

    channel: Channel
    user: User
    now: datetime


@runtime_checkable
class Tool(Protocol):
    """A tool the model may call while it writes a reply.

    ``parameters`` is a JSON schema (an object schema) that arguments are validated against
    before `run` sees them. `run` returns text or a JSON-serialisable value; the toolbox
    caps its size before it reaches the prompt.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any: ...


class Hit(Protocol):
    """One remembered thing: what kind, where from, what it says."""

    @property
    def kind(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def text(self) -> str: ...


class MemorySearch(Protocol):
    """The memory layer's search, under the prompts' privacy rule
    (`kuuki.memory.provider.MemoryContextProvider.recall`)."""

    def recall(
        self, target: Channel, query: str, *, now: datetime, limit: int = 5
    ) -> Sequence[Hit]: ...
