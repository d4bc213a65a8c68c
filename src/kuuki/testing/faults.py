"""Stores that fail on command, for the tests of what the engine, the writer and the
adapters do in an outage: no product internals patched, the fakes go in through the
public seams (`Store.open`'s subclass and its part makers, `build_app(store=...)`, `Intake(inbox)`).

- `Fault`: one kind of call that fails on command; it counts the calls that failed and
  passed, and a test waits on those counts (`await fault.wait(failed=1)`) instead of
  sleeping.
- `FaultyStore`: a real `Store` (open it with ``await FaultyStore.open(url)``) whose batch
  writes (`writes`: every commit of its writer), inbox commits (`admits`), the reads a
  platform's read-back makes (`reads`) and those of the caught-up marker (`marker_reads`)
  fail on command; so do the engine's adds to its writer (`message_adds`,
  `decision_adds`), as the real ones do when the flush a full backlog makes them wait for
  fails: in the middle of handling an event. For a whole bot
  (`build_app(store=...)`; the Slack and Discord drivers' ``faulty_store``) two switches
  say it in one word: ``down`` (the database is unreachable: taking events in and the
  read-back's and the marker's reads fail with `StoreError`) and ``ambiguous`` (the next
  commits of the inbox succeed and still fail, as a connection lost after COMMIT does:
  the events are in the store, and the bot was told they are not). `wait_handled` waits
  until the inbox holds nothing left to handle.
- `FlakyInbox`: an in-memory inbox (`kuuki.engine.intake.EventInbox`) for the intake alone.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from kuuki.clock import Clock
from kuuki.domain import Channel, ChatEvent, Decision, Message
from kuuki.errors import StoreError
from kuuki.store import Store
from kuuki.store.database import Database, Queued
from kuuki.store.forgetting import Erasure
from kuuki.store.history import StoredHistory
from kuuki.store.inbox import EventInbox
from kuuki.store.messages import Messages
from kuuki.store.roster import Roster
from kuuki.store.writer import BatchedWriter

__all__ = ["Fault", "FaultyStore", "FlakyInbox"]


class Fault:
    """A kind of call that fails on command (module doc). Nothing fails until `fail`."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failed = 0  # calls that raised
        self.passed = 0  # calls that went through
        self._left: int | None = 0  # failures still to come; None: until `heal`
        self._error: Exception = self._down()
        self._changed = asyncio.Event()

    @property
    def failing(self) -> bool:
        return self._left != 0

    def fail(self, times: int | None = None, error: Exception | None = None) -> None:
        """The next ``times`` calls fail (every one until `heal` when None), raising a copy
        of ``error`` (default: ConnectionRefusedError, an unreachable database)."""
        if times is not None and times < 1:
            raise ValueError(f"times must be at least 1 (or None: until heal), not {times}")
        self._left = times
        self._error = error if error is not None else self._down()

    def fail_once(self) -> int:
        """The next call fails; returns the count of failures that makes (to `wait` on)."""
        self.fail(times=1)
        return self.failed + 1

    def _down(self) -> Exception:
        return ConnectionRefusedError(f"{self.what}: the database is down")

    def heal(self) -> None:
        """Calls go through again."""
        self._left = 0

    def check(self) -> None:
        """Called before the real call: raises while failing (and counts it)."""
        if self._left == 0:
            return
        if self._left is not None:
            self._left -= 1
        self.failed += 1
        self._notify()
        raise copy.copy(self._error)

    def went_through(self) -> None:
        """Called after the real call succeeded."""
        self.passed += 1
        self._notify()

    async def wait(self, *, failed: int = 0, passed: int = 0, give_up_s: float = 60) -> None:
        """Until at least ``failed`` calls have failed and ``passed`` have gone through,
        counted since this fault was made. ``give_up_s`` only turns a hang (the calls never
        come) into a failure that says so; it is not a measure of speed."""
        try:
            async with asyncio.timeout(give_up_s):
                while self.failed < failed or self.passed < passed:
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"{self.what}: waited for {failed} failed and {passed} passed calls, "
                f"saw {self.failed} and {self.passed}"
            ) from None

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()


class FaultyStore(Store):
    """A real store whose writer's commits (`writes`), inbox commits (`admits`), read-back
    reads (`reads`), caught-up marker reads (`marker_reads`) and the engine's adds to the
    writer (`message_adds`, `decision_adds`) fail on command; what does go through is the
    real store's doing (module doc). Its parts are the real ones with a check before the
    calls that fail (`_Inbox`, `_Roster`, `_History`, `_Messages`, `_Writer`), made by the
    store's own part makers, so every other part is built on them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.writes = Fault("batch write")
        self.admits = Fault("inbox commit")
        self.reads = Fault("read-back read")
        self.marker_reads = Fault("caught-up marker read")
        self.message_adds = Fault("message add")
        self.decision_adds = Fault("decision add")
        self.ambiguous = 0  # inbox commits still to succeed and be reported failed
        super().__init__(*args, **kwargs)

    def _roster(self, db: Database, forgetting: Erasure) -> Roster:
        return _Roster(self, db, forgetting)

    def _inbox(self, db: Database, queued: Queued, roster: Roster, cache_size: int) -> EventInbox:
        return _Inbox(self, db, queued, roster, event_cache_size=cache_size)

    def _messages(
        self, db: Database, queued: Queued, roster: Roster, forgetting: Erasure
    ) -> Messages:
        return _Messages(self, db, queued, roster, forgetting)

    def _history(
        self, db: Database, queued: Queued, roster: Roster, inbox: EventInbox
    ) -> StoredHistory:
        return _History(self, db, queued, roster, inbox)

    def _batched_writer(
        self, messages: Messages, inbox: EventInbox, *, max_items: int, max_delay: float,
        clock: Clock | None,
    ) -> BatchedWriter:
        return _Writer(self, messages, inbox, max_items=max_items, max_delay=max_delay,
                       clock=clock)

    @property
    def down(self) -> bool:
        return self.admits.failing

    @down.setter
    def down(self, down: bool) -> None:
        """Down: every inbox commit, read-back read and caught-up marker read fails until
        set back to False."""
        faults = ((self.admits, "take events in"), (self.reads, "read"),
                  (self.marker_reads, "read"))
        for fault, what in faults:
            if down:
                fault.fail(error=StoreError(f"cannot {what}: the database is unreachable "
                                            "(a test outage)"))
            else:
                fault.heal()

    @property
    def refused(self) -> int:
        """EventInbox commits refused (down) or lost (ambiguous) so far."""
        return self.admits.failed

    async def goes_away_at(self, fault: Fault, failed: int, *, give_up_s: float = 20) -> None:
        """The database goes away at the call ``fault`` fails (its ``failed``-th failure,
        see `Fault.fail_once`) and stays away until a read-back round has found it down,
        then answers again. With no such round (what the store failed under waits for the
        next start) the wait gives up, and says so."""
        await fault.wait(failed=failed)
        rounds = self.reads.failed
        self.down = True
        await self.reads.wait(failed=rounds + 1, give_up_s=give_up_s)
        self.down = False

    async def wait_refused(self, n: int = 1) -> None:
        """Until ``n`` inbox commits have been refused or lost (an event, not a sleep)."""
        await self.admits.wait(failed=n)

    async def wait_handled(self, *, give_up_s: float = 60) -> None:
        """Until the inbox holds no event taken in and not handled (asked of the store
        itself, whatever is failing), looking again after each commit of the writer that
        marks events handled: an event, not a sleep. ``give_up_s`` only turns a hang (they
        are never handled) into a failure that says which."""
        committed = asyncio.Event()
        inbox = self.inbox
        assert isinstance(inbox, _Inbox)

        def told(_: list[str]) -> None:
            committed.set()

        self.writer.committed.append(told)
        try:
            async with asyncio.timeout(give_up_s):
                while await inbox.pending_unchecked():
                    await committed.wait()
                    committed.clear()
        except TimeoutError:
            left = [e.event_id for e in await inbox.pending_unchecked()]
            raise AssertionError(f"the inbox still holds events not handled: {left}") from None
        finally:
            self.writer.committed.remove(told)


class _Inbox(EventInbox):
    def __init__(self, faults: FaultyStore, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.faults = faults

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        f = self.faults
        f.admits.check()
        new = await super().admit_events(events)
        if f.ambiguous > 0:
            f.ambiguous -= 1
            f.admits.fail(times=1, error=StoreError(
                "cannot take events in: the connection was lost after COMMIT (a test outage)"))
            f.admits.check()
        f.admits.went_through()
        return new

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        self.faults.reads.check()
        return await super().pending_events(platform=platform, channel_id=channel_id)

    async def pending_unchecked(self) -> list[ChatEvent]:
        return await super().pending_events()


class _Roster(Roster):
    def __init__(self, faults: FaultyStore, *args: Any) -> None:
        super().__init__(*args)
        self.faults = faults

    async def channels(self) -> list[Channel]:
        self.faults.reads.check()
        return await super().channels()


class _History(StoredHistory):
    def __init__(self, faults: FaultyStore, *args: Any) -> None:
        super().__init__(*args)
        self.faults = faults

    async def decided(self, message_ids: Sequence[str]) -> set[str]:
        self.faults.marker_reads.check()
        return await super().decided(message_ids)

    async def answered(self, message_ids: Sequence[str], bot_ids: Iterable[str]) -> set[str]:
        self.faults.marker_reads.check()
        return await super().answered(message_ids, bot_ids)

    async def last_message(
        self, channel_id: str, *, not_by: Collection[str] = ()
    ) -> Message | None:
        self.faults.reads.check()
        return await super().last_message(channel_id, not_by=not_by)

    async def active_threads(
        self, channel_id: str, since: datetime, *, limit: int = 20
    ) -> list[tuple[str, datetime]]:
        self.faults.reads.check()
        return await super().active_threads(channel_id, since, limit=limit)


class _Messages(Messages):
    def __init__(self, faults: FaultyStore, *args: Any) -> None:
        super().__init__(*args)
        self.faults = faults

    async def write_batch(
        self,
        messages: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
        events: dict[str, datetime],
        handled: Sequence[str] = (),
    ) -> int:
        # The writer's one way to the database (kuuki.store.writer.Rows): its commits.
        self.faults.writes.check()
        inserted = await super().write_batch(messages, decisions, events, handled)
        self.faults.writes.went_through()
        return inserted


class _Writer(BatchedWriter):
    """A `FaultyStore`'s writer: an add fails on command (its fault) as the real writer's
    does when the flush a full backlog makes it wait for fails: what it was given stays
    queued (written once commits go through), and the caller gets `StoreError`."""

    def __init__(self, store: FaultyStore, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.faulty = store

    async def add_message(self, m: Message, *, conversation_id: str | None = None) -> None:
        await super().add_message(m, conversation_id=conversation_id)
        _waited(self.faulty.message_adds)

    async def add_decision(self, d: Decision) -> None:
        await super().add_decision(d)
        _waited(self.faulty.decision_adds)


def _waited(fault: Fault) -> None:
    try:
        fault.check()
    except StoreError:
        raise
    except Exception as exc:  # as the writer words a failed flush
        raise StoreError(f"batched write failed: {type(exc).__name__}: {exc}") from exc
    fault.went_through()


class FlakyInbox:
    """An inbox in memory: `admits` fail on command; `stored` lists the event ids taken
    in, in order (an id taken in before is not new, as in the store)."""

    def __init__(self) -> None:
        self.admits = Fault("inbox commit")
        self.stored: list[str] = []

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        self.admits.check()
        new = [e.event_id for e in events if e.event_id not in self.stored]
        self.stored += list(dict.fromkeys(new))
        self.admits.went_through()
        return set(new)

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        return []
