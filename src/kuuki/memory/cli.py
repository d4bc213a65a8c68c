"""`kuuki memory show --user U` and `kuuki memory forget --user U`.

Both open the configured store, load the memory layer without any model (nothing here
needs an LLM or embeddings), and print plain text. The CLI module wires the arguments.
"""

from __future__ import annotations

from typing import TextIO

from ..clock import RealClock
from ..settings import Settings
from .service import MemoryService


async def _open(settings: Settings) -> tuple[object, MemoryService]:
    from ..store import Store

    store = await Store.open(settings.store_url or None)
    service = await MemoryService.open(settings, store=store, clock=RealClock(), llm=None)
    return store, service


async def run_memory_show(settings: Settings, user: str, out: TextIO) -> int:
    """Print what the bot remembers about ``user``."""
    store, service = await _open(settings)
    try:
        out.write(await service.describe_user(user) + "\n")
    finally:
        await service.close()
        await store.close()  # type: ignore[attr-defined]
    return 0


async def run_memory_forget(settings: Settings, user: str, out: TextIO) -> int:
    """Forget what the bot learned from ``user`` and say how much that was."""
    store, service = await _open(settings)
    try:
        removed = await service.forget_user(user)
    finally:
        await service.close()
        await store.close()  # type: ignore[attr-defined]
    out.write(f"Forgot {removed} remembered items about {user}.\n")
    return 0
