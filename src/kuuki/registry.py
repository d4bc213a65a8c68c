"""Named factories with entry-point plugins: the one mechanism behind the LLM back-end
registry (kuuki.llm.registry) and the tool registry (kuuki.respond.tools.registry).

Built-ins register themselves like any plugin; third-party packages expose an entry point
in ``group``, a callable that receives `register`. Plugins load once, on the first
lookup, so importing a registry costs nothing.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Generic, TypeVar

F = TypeVar("F")


class Registry(Generic[F]):
    def __init__(self, group: str) -> None:
        self.group = group
        self.factories: dict[str, F] = {}
        self.plugins_loaded = False

    def register(self, name: str, factory: F) -> None:
        """Make ``factory`` available under ``name``; a later registration wins."""
        self.factories[name] = factory

    def names(self) -> list[str]:
        """The registered names, sorted."""
        self._load_plugins()
        return sorted(self.factories)

    def get(self, name: str) -> F | None:
        self._load_plugins()
        return self.factories.get(name)

    def _load_plugins(self) -> None:
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        for entry in entry_points(group=self.group):
            entry.load()(self.register)
