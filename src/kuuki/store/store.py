"""The :class:`Store`: kuuki's persistent state, as parts that each own their tables.

`Store.open` opens the database (creating and migrating it), builds the parts in one
place and hands them out; each user takes the part it needs, typed by the port it
declares:

- ``inbox`` (``inbox.py``): every event taken in, until handled — the intake's;
- ``roster`` (``roster.py``): the channels and people known;
- ``messages`` (``messages.py``): messages, reactions and decisions as the message path
  writes and reads them, and the writer's batches;
- ``writer`` (``writer.py``): the write-behind batcher on the message path;
- ``memories`` (``memories.py``) and ``facts`` (``facts.py``): what memory keeps;
- ``forgetting`` (``forgetting.py``): forgetting a person, and the tombstones every write
  path consults;
- ``history`` (``history.py``): what catching up after a restart asks;
- ``policies`` (``policies.py``): each channel's policy as `/kuuki mode` changed it;
- ``browse`` (``browse.py``): the decisions as people read them (`kuuki why`, the
  dashboard).

All of them take and return domain values (``kuuki.domain``); rows never leak out.
`Store.open_to_read` opens a store only to read it (``reading.py``): no writer, and the
database refuses any write.
"""

from __future__ import annotations

from typing import Self

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.clock import Clock
from kuuki.errors import StoreError
from kuuki.settings.urls import display_url, ensure_directory, normalise_url
from kuuki.store import migrations
from kuuki.store.browse import Browse
from kuuki.store.database import Database, Queued
from kuuki.store.engine import create_engine
from kuuki.store.facts import Facts
from kuuki.store.forgetting import Erasure
from kuuki.store.history import StoredHistory
from kuuki.store.hot import HotConnection
from kuuki.store.inbox import EventInbox
from kuuki.store.memories import Memories
from kuuki.store.messages import Messages
from kuuki.store.policies import Policies
from kuuki.store.reading import open_read_only
from kuuki.store.roster import Roster
from kuuki.store.writer import BatchedWriter
from kuuki.text.secrets import remember


class Store:
    """Persistent chat state on SQLite or PostgreSQL, as parts (module doc). Create with
    :meth:`Store.open` (or :meth:`Store.open_to_read`)."""

    def __init__(
        self,
        engine: AsyncEngine,
        url: URL,
        *,
        event_cache_size: int = 10_000,
        batch_size: int = 500,
        batch_delay: float = 0.05,
        clock: Clock | None = None,
        read_only: bool = False,
    ) -> None:
        self.url = url
        self.read_only = read_only
        # The password joins the secrets every error is cleaned of (kuuki.text.secrets).
        remember(None if url.password is None else str(url.password))
        self.url_for_display = display_url(url)
        self._closed = False
        self._writer_given = False
        db, queued = Database(engine), Queued()
        self.db, self.queued = db, queued
        self.forgetting = self._forgetting(db, queued)
        self.roster = self._roster(db, self.forgetting)
        self.inbox = self._inbox(db, queued, self.roster, event_cache_size)
        self.messages = self._messages(db, queued, self.roster, self.forgetting)
        self.memories = Memories(db, self.forgetting)
        self.facts = Facts(db, self.forgetting)
        self.history = self._history(db, queued, self.roster, self.inbox)
        self.browse = Browse(db, queued)
        self.policies = Policies(db)
        self._writer = None if read_only else self._batched_writer(
            self.messages, self.inbox, max_items=batch_size, max_delay=batch_delay, clock=clock)
        queued.writer = self._writer

    # The parts a test double replaces with faulty ones (kuuki.testing.faults): each made
    # by one overridable method, so that every other part is built on the replacement.

    def _forgetting(self, db: Database, queued: Queued) -> Erasure:
        return Erasure(db, queued)

    def _roster(self, db: Database, forgetting: Erasure) -> Roster:
        return Roster(db, forgetting)

    def _inbox(self, db: Database, queued: Queued, roster: Roster, cache_size: int) -> EventInbox:
        return EventInbox(db, queued, roster, event_cache_size=cache_size)

    def _messages(
        self, db: Database, queued: Queued, roster: Roster, forgetting: Erasure
    ) -> Messages:
        return Messages(db, queued, roster, forgetting)

    def _history(
        self, db: Database, queued: Queued, roster: Roster, inbox: EventInbox
    ) -> StoredHistory:
        return StoredHistory(db, queued, roster, inbox)

    def _batched_writer(
        self, messages: Messages, inbox: EventInbox, *, max_items: int, max_delay: float,
        clock: Clock | None,
    ) -> BatchedWriter:
        return BatchedWriter(messages, inbox, max_items=max_items, max_delay=max_delay,
                             clock=clock)

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        *,
        event_cache_size: int = 10_000,
        batch_size: int = 500,
        batch_delay: float = 0.05,
        clock: Clock | None = None,
    ) -> Self:
        """Open (creating if needed) and migrate the database at ``url``.

        ``None`` means the default SQLite file; see :mod:`kuuki.settings.urls` for the rest.
        ``batch_size`` and ``batch_delay`` (seconds, of ``clock``: real time unless a test
        gives one) configure :attr:`writer`.
        """
        parsed = normalise_url(url)
        ensure_directory(parsed)
        engine = create_engine(parsed)
        store = cls(
            engine,
            parsed,
            event_cache_size=event_cache_size,
            batch_size=batch_size,
            batch_delay=batch_delay,
            clock=clock,
        )
        try:
            await store.migrate()
            await store.inbox.load()
            await store.messages.load()
            if store.dialect == "sqlite":
                store.db.hot = await HotConnection.open(engine, parsed)
        except BaseException as exc:
            await engine.dispose()
            if isinstance(exc, StoreError) or not isinstance(exc, Exception):
                raise
            raise StoreError(
                f"cannot open database {store.url_for_display}: {store.db.scrub(exc)}"
            ) from exc
        return store

    @classmethod
    async def open_to_read(cls, url: str | None = None) -> Self:
        """Open the store at ``url`` only to read it: nothing is created, migrated or
        changed, and one that this kuuki cannot read as it is — no file, an empty or
        foreign database, an older or newer schema — is refused with a
        :class:`StoreError` that says which (``kuuki.store.reading``)."""
        parsed, engine = await open_read_only(url)
        return cls(engine, parsed, read_only=True)

    async def migrate(self) -> list[str]:
        """Apply pending migrations; return the names of those applied."""
        return await migrations.migrate(self.engine)

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """Flush the writer and release every connection. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer is not None:
                await self._writer.close()
        finally:
            try:
                if self.db.hot is not None:
                    await self.db.hot.close()
            finally:
                await self.engine.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def engine(self) -> AsyncEngine:
        return self.db.engine

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def writer(self) -> BatchedWriter:
        """The store's write-behind batcher (the message path's writes); flushed on close."""
        if self._writer is None:
            raise StoreError(f"{self.url_for_display} was opened only to read")
        if self._closed and not self._writer_given:
            raise StoreError("store is closed")
        self._writer_given = True  # its holder may still look at it (stats) after close
        return self._writer
