"""The memory panel: what the bot remembers about a channel, written for people
(kuuki.explain.memory_view renders it; the terminal's `/memory` uses the same words).

The panel reads a `ChannelMemory` (kuuki.memory.snapshot), by default from the App's memory
service, `MemoryService.snapshot`, which applies the privacy rule for the channel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kuuki.explain.memory_view import failed, render
from kuuki.memory.snapshot import ChannelMemory

MemorySnapshot = Callable[[str], Awaitable[ChannelMemory]]
"""``await snapshot(channel_id)`` → the channel's `ChannelMemory`. It may raise; the
panel then shows the error instead."""

__all__ = ["MemorySnapshot", "failed", "render"]
