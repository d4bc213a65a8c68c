"""Channels to read back once the store answers again (both platform adapters).

When the store cannot take events in (an outage), an adapter cannot keep them: Slack will
deliver unacknowledged envelopes again, a few times; Discord never will. Either way the
adapter notes the channel here, and `Retrier` keeps trying to catch it up from the
platform's history, with growing pauses, until that succeeds: what was said while the
store was down is then read back and handled, once (the engine dedupes by event id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

log = logging.getLogger("kuuki.platforms")

FIRST_PAUSE_S = 1.0
MAX_PAUSE_S = 30.0


class Retrier:
    """Calls ``catch_up(channel_ids)`` for the channels noted as missed until it succeeds."""

    def __init__(
        self, catch_up: Callable[[Sequence[str]], Awaitable[object]], *, name: str
    ) -> None:
        self.catch_up = catch_up
        self.name = name
        self._missed: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0

    def missed(self, channel_ids: Iterable[str]) -> None:
        """These channels lost events to the store: read them back when it answers."""
        self._missed.update(c for c in channel_ids if c)
        if self._missed and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"kuuki-{self.name}-catch-up"
            )

    @property
    def pending(self) -> frozenset[str]:
        return frozenset(self._missed)

    async def _run(self) -> None:
        pause = FIRST_PAUSE_S
        while self._missed:
            await asyncio.sleep(pause)
            todo = sorted(self._missed)
            self._missed.clear()
            self.rounds += 1
            try:
                await self.catch_up(todo)
            except Exception as exc:
                self._missed.update(todo)
                pause = min(pause * 2, MAX_PAUSE_S)
                log.warning("%s: catching up %d channels failed (%s); again in %.0fs",
                            self.name, len(todo), exc, pause)
            else:
                log.info("%s: caught up %d channels after an outage", self.name, len(todo))
                pause = FIRST_PAUSE_S

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
