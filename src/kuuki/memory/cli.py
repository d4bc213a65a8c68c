"""`kuuki memory list|show|forget`: what the bot remembers, for the operator.

Each opens the configured store (or `--store`), loads the memory layer without any model
(nothing here needs an LLM or embeddings), and prints plain text written for the person
running the bot (`report` renders it). The CLI module wires the arguments.
"""

from __future__ import annotations

from typing import TextIO

from ..clock import RealClock
from ..errors import KuukiError
from ..settings import Settings
from .report import render_channel, render_overview, render_person
from .service import MemoryService


async def _open(settings: Settings) -> tuple[object, MemoryService]:
    from ..store import Store

    store = await Store.open(settings.store_url or None)
    service = await MemoryService.open(settings, store=store, clock=RealClock(), llm=None)
    return store, service


async def _close(store: object, service: MemoryService) -> None:
    await service.close()
    await store.close()  # type: ignore[attr-defined]


async def run_memory_list(settings: Settings, out: TextIO) -> int:
    """Per channel, who and what is remembered; then everyone the bot knows."""
    store, service = await _open(settings)
    try:
        channels, people = service.report()
    finally:
        await _close(store, service)
    out.write(render_overview(channels, people) + "\n")
    return 0


async def run_memory_show(
    settings: Settings, out: TextIO, *, user: str | None = None, channel: str | None = None
) -> int:
    """What the bot remembers about a person (`user`: id) or a channel (id or name)."""
    store, service = await _open(settings)
    try:
        channels, people = service.report()
    finally:
        await _close(store, service)
    shown: list[str] = []
    if channel is not None:
        wanted = channel.lstrip("#")
        found = [c for c in channels if wanted in (c.channel_id, c.name.lstrip("#"))]
        if not found:
            known = ", ".join(c.name for c in channels) or "none yet"
            raise KuukiError(f"no channel {channel!r} in memory (channels: {known})")
        shown += [render_channel(c) for c in found]
    if user is not None:
        person = next((p for p in people if user in (p.user_id, p.name)), None)
        if person is None:
            shown.append(f"Nothing is remembered about {user}. `kuuki memory list` shows who is.")
        else:
            shown.append(render_person(person))
            shown.append(f"To forget all of this: kuuki memory forget --user {person.user_id}")
    out.write("\n\n".join(shown) + "\n")
    return 0


async def run_memory_forget(settings: Settings, user: str, out: TextIO) -> int:
    """Forget what the bot learned from ``user`` and say how much that was."""
    store, service = await _open(settings)
    try:
        removed = await service.forget_user(user)
    finally:
        await _close(store, service)
    out.write(f"Forgot {removed} remembered {'item' if removed == 1 else 'items'} about {user}.\n")
    return 0
