"""Short-term memory: a ring buffer of recent messages per channel, with a time limit
(the engine's `Buffer` port, made per channel by the factory kuuki.app.build passes it)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

from kuuki.domain import Message


class ChannelBuffer:
    """The last `size` messages of one channel, none older than `ttl` (seed: 50 / 30 min)."""

    def __init__(self, size: int, ttl: timedelta) -> None:
        self._items: deque[Message] = deque(maxlen=size)
        self.ttl = ttl

    @property
    def size(self) -> int:
        return self._items.maxlen or 0

    def add(self, msg: Message) -> None:
        self._items.append(msg)

    def prune(self, now: datetime) -> int:
        cutoff = now - self.ttl
        dropped = 0
        while self._items and self._items[0].ts < cutoff:
            self._items.popleft()
            dropped += 1
        return dropped

    def recent(self, now: datetime | None = None, limit: int | None = None) -> list[Message]:
        if now is not None:
            self.prune(now)
        items = list(self._items)
        return items[-limit:] if limit else items

    def get(self, message_id: str) -> Message | None:
        for m in reversed(self._items):
            if m.id == message_id:
                return m
        return None

    def edit(self, message_id: str, text: str) -> bool:
        for i, m in enumerate(self._items):
            if m.id == message_id:
                self._items[i] = replace(m, text=text, edited=True)
                return True
        return False

    def delete(self, message_id: str) -> bool:
        for m in list(self._items):
            if m.id == message_id:
                self._items.remove(m)
                return True
        return False

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        return iter(list(self._items))
