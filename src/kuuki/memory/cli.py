"""`kuuki memory list|show|forget|unforget`: what the bot remembers, for the operator.

Each opens the configured store (or `--store`), loads the memory layer without any model
(nothing here needs an LLM or embeddings), and prints plain text written for the person
running the bot (`report` renders it). The CLI module wires the arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from kuuki.clock import RealClock
from kuuki.errors import KuukiError
from kuuki.memory.report import render_channel, render_overview, render_person
from kuuki.memory.service import MemoryService
from kuuki.settings import Settings
from kuuki.text.wording import ECHO_CHARS, echoed, plural

if TYPE_CHECKING:
    from kuuki.store import Store


async def _open(settings: Settings, *, to_read: bool = False) -> tuple[Store, MemoryService]:
    """The store and the memory layer over it; ``to_read``: opened only to read
    (`Store.open_to_read`: `list` and `show` change nothing)."""
    from kuuki.store import Store

    url = settings.store_url or None
    store = await (Store.open_to_read(url) if to_read else Store.open(url))
    try:
        service = await MemoryService.open(settings, store=store, clock=RealClock(), llm=None)
    except BaseException:
        await store.close()
        raise
    return store, service


async def _close(store: Store, service: MemoryService) -> None:
    if store.read_only:
        await service.close_without_writing()
    else:
        await service.close()
    await store.close()


async def run_memory_list(settings: Settings, out: TextIO) -> int:
    """Per channel, who and what is remembered; then everyone the bot knows."""
    store, service = await _open(settings, to_read=True)
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
    store, service = await _open(settings, to_read=True)
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
            raise KuukiError(f"no channel {echoed(channel)!r} in memory (channels: {known})")
        shown += [render_channel(c) for c in found]
    if user is not None:
        person = next((p for p in people if user in (p.user_id, p.name)), None)
        if person is None:
            shown.append(f"Nothing is remembered about {echoed(user)}. `kuuki memory list` "
                         "shows who is.")
        else:
            shown.append(render_person(person))
            shown.append(f"To forget all of this: kuuki memory forget --user {person.user_id}")
    out.write("\n\n".join(shown) + "\n")
    return 0


async def run_memory_forget(settings: Settings, user: str, out: TextIO) -> int:
    """Forget ``user`` (kuuki.store.forgetting) and say what that removed.

    Safe while the bot runs on the same store: the tombstone this leaves makes the store
    refuse anything of theirs the bot still holds, and the bot purges its memory when it
    next reads the tombstones (kuuki.memory.forgetting).
    """
    store, service = await _open(settings)
    try:
        gone = await service.forget(user)
    finally:
        await _close(store, service)
    parts = [
        plural(gone.messages, "message"), plural(gone.bot_answers, "answer") + " of the bot's",
        plural(gone.decisions, "decision"), plural(gone.memories, "memory", "memories"),
        plural(gone.facts, "fact"),
    ]
    again = user if len(user) <= ECHO_CHARS else "ID"  # a command to copy, or its shape
    out.write(f"Forgot {echoed(user)}: erased {', '.join(parts)}.\n")
    out.write(f"Nothing about {echoed(user)} will be learned again; to lift this: "
              f"kuuki memory unforget --user {again}\n")
    return 0


async def run_memory_unforget(settings: Settings, user: str, out: TextIO) -> int:
    """Lift ``user``'s tombstone: the bot may learn about them again from now on."""
    store, service = await _open(settings)
    try:
        lifted = await service.unforget_user(user)
    finally:
        await _close(store, service)
    if lifted:
        out.write(f"{echoed(user)} is no longer forgotten: the bot may learn about them again "
                  "(what was erased stays erased).\n")
    else:
        out.write(f"{echoed(user)} was not forgotten: nothing changed.\n")
    return 0
