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
from importlib.metadata import entry_points
from typing import Any

from kuuki.errors import ConfigError
from kuuki.llm.base import LLM

Factory = Callable[..., LLM]

_FACTORIES: dict[str, Factory] = {}
_plugins_loaded = False


def register(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``create(name, ...)``; a later registration wins."""
    _FACTORIES[name] = factory


def names() -> list[str]:
    """The back-end names that `create` accepts, sorted."""
    _load_plugins()
    return sorted(_FACTORIES)


def create(name: str, /, **config: Any) -> LLM:
    """Build the back-end registered as ``name`` with ``config`` as its settings."""
    _load_plugins()
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError("llm.backend", f"unknown back-end {name!r}; choose one of {names()}")
    try:
        return factory(**config)
    except TypeError as exc:
        # A misspelt or unsupported setting: say which back-end, not a bare TypeError.
        raise ConfigError(f"llm.{name}", str(exc)) from exc


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in entry_points(group="kuuki.llm"):
        entry.load()(register)


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
