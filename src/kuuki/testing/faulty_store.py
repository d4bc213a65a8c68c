"""Stores that fail on demand, for the outage tests.

* `FlakyInbox`: an inbox of its own (the event ids it took, in order) that refuses every
  commit while ``down``: enough for the intake on its own (tests/engine).
* `FaultyStore`: a real `kuuki.store.Store` behind the same switch, for a whole bot
  (`build_app(store=...)`; the Slack and Discord drivers' ``faulty_store``). While
  ``down`` the database is unreachable: taking events in and the reads that reading back
  makes fail with `StoreError` and nothing is written. ``ambiguous`` makes the next
  commits of the inbox succeed and still fail, as a connection lost after COMMIT does:
  the events are in the store, and the bot was told they are not.

Both count what they refused, and `wait_refused` waits for a count (an event, not a
sleep), so a test knows the outage has hit before it ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kuuki.domain import ChatEvent
from kuuki.errors import StoreError

# The reads a platform's read-back makes before it hands events in (kuuki.platforms.*):
# they fail with the rest of the database while it is down.
_READS = frozenset({"channels", "last_message", "active_threads"})


class _Refusals:
    def __init__(self) -> None:
        self.refused = 0  # commits refused (a down store) or lost (ambiguous)
        self._changed = asyncio.Condition()

    async def count(self) -> None:
        self.refused += 1
        async with self._changed:
            self._changed.notify_all()

    async def wait_refused(self, n: int = 1, timeout: float = 10) -> None:
        """Return once ``n`` commits have been refused so far."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.refused >= n)


class FlakyInbox(_Refusals):
    """An in-memory inbox (kuuki.engine.intake.Inbox) that is down until told otherwise."""

    def __init__(self, *, down: bool = True) -> None:
        super().__init__()
        self.down = down
        self.stored: list[str] = []

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        if self.down:
            await self.count()
            raise ConnectionRefusedError("the store is down")
        self.stored += [e.event_id for e in events]
        return {e.event_id for e in events}

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        return []


class FaultyStore(_Refusals):
    """A real store (module doc) that is up until ``down`` is set; everything else is the
    store's own (its writer, its reads while up)."""

    def __init__(self, store: Any) -> None:
        super().__init__()
        self.store = store
        self.down = False
        self.ambiguous = 0  # commits still to succeed and be reported failed

    @classmethod
    async def open(cls, url: str) -> FaultyStore:
        from kuuki.store import Store

        return cls(await Store.open(url))

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if name in _READS and callable(found):
            return self._failing(name, found)
        return found

    def _failing(self, name: str, read: Any) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise StoreError(f"cannot {name}: the database is unreachable (a test outage)")
            return await read(*args, **kwargs)

        return call

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        if self.down:
            await self.count()
            raise StoreError("cannot take events in: the database is unreachable (a test "
                             "outage)")
        new: set[str] = await self.store.admit_events(events)
        if self.ambiguous > 0:
            self.ambiguous -= 1
            await self.count()
            raise StoreError("cannot take events in: the connection was lost after COMMIT "
                             "(a test outage)")
        return new

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        if self.down:
            raise StoreError("cannot read the inbox: the database is unreachable (a test "
                             "outage)")
        found: list[ChatEvent] = await self.store.pending_events(
            platform=platform, channel_id=channel_id
        )
        return found
