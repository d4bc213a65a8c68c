"""Named LLM back-ends, created from settings.

Every back-end, built-in or plugin, gets in through `register(name, factory)`; a factory
takes the back-end's settings as keyword arguments and returns an `LLM`. The built-ins
(`embedded`, `openai`, `stub`) register themselves below exactly as a plugin would, with
factories that import their module only when used, so choosing `stub` never loads
llama.cpp and choosing `embedded` never imports the OpenAI SDK. `scripted` is registered
by importing `kuuki.testing.llm`. Third-party packages can also expose a
``kuuki.llm`` entry point: a callable that receives `register`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuuki.errors import ConfigError
from kuuki.llm.base import LLM
from kuuki.registry import Registry

Factory = Callable[..., LLM]

REGISTRY: Registry[Factory] = Registry("kuuki.llm")
register = REGISTRY.register
names = REGISTRY.names  # the back-end names that `create` accepts, sorted


def create(name: str, /, **config: Any) -> LLM:
    """Build the back-end registered as ``name`` with ``config`` as its settings."""
    factory = REGISTRY.get(name)
    if factory is None:
        raise ConfigError("llm.backend", f"unknown back-end {name!r}; choose one of {names()}")
    try:
        return factory(**config)
    except TypeError as exc:
        # A misspelt or unsupported setting: say which back-end, not a bare TypeError.
        raise ConfigError(f"llm.{name}", str(exc)) from exc


def _embedded(**config: Any) -> LLM:
    from kuuki.llm.embedded import EmbeddedLLM

    return EmbeddedLLM(**config)


def _openai(**config: Any) -> LLM:
    from kuuki.llm.openai_compat import OpenAICompatLLM

    return OpenAICompatLLM(**config)


def _stub(**config: Any) -> LLM:
    from kuuki.llm.stub import StubLLM

    return StubLLM(**config)


register("embedded", _embedded)
register("openai", _openai)
register("stub", _stub)
