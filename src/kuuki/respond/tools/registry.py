"""Named tools, created for an app — the same mechanism as the LLM back-ends (kuuki.registry).

Every tool, built-in or plugin, gets in through `register(name, factory)`; a factory takes
a `ToolHost` (what a tool may be built from: settings, the clock, the memory search) and
returns a `Tool`. The built-ins `recall` and `now` register themselves below exactly as a
plugin would. Third-party packages expose a ``kuuki.tools`` entry point: a callable that
receives `register`. A registered tool is offered to the model only when its name is in
the ``tools.enabled`` setting (recall and now by default); HTTP JSON tools are declared in
kuuki.toml (`[[tools.http]]`) and need no code (kuuki.respond.tools.http).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kuuki.clock import Clock
from kuuki.errors import ConfigError
from kuuki.registry import Registry
from kuuki.respond.tools.base import MemorySearch, Tool
from kuuki.settings.tools import ToolSettings


@dataclass(frozen=True, slots=True)
class ToolHost:
    """What a tool factory may build from. Deliberately no outbox and no engine."""

    settings: ToolSettings
    clock: Clock
    memory: MemorySearch | None = None


Factory = Callable[[ToolHost], Tool]

REGISTRY: Registry[Factory] = Registry("kuuki.tools")
register = REGISTRY.register
names = REGISTRY.names  # the tool names `create` accepts, sorted


def create(name: str, host: ToolHost) -> Tool:
    """Build the tool registered as ``name``."""
    factory = REGISTRY.get(name)
    if factory is None:
        raise ConfigError(
            "tools.enabled",
            f"unknown tool {name!r}; choose from {names()} or declare it in [[tools.http]]",
        )
    return factory(host)


def _recall(host: ToolHost) -> Tool:
    from kuuki.respond.tools.builtin import RecallTool

    return RecallTool(host.memory)


def _now(host: ToolHost) -> Tool:
    from kuuki.respond.tools.builtin import NowTool

    return NowTool(host.clock, host.settings)


register("recall", _recall)
register("now", _now)
