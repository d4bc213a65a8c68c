"""Persistent state: messages, decisions, memories and facts on SQLite or PostgreSQL.

Open with ``await Store.open(url)`` (None for the default SQLite file; migrations run on
open), hand each user the part it needs (``store.inbox``, ``store.messages``,
``store.memories``, …: kuuki.store.store), send hot-path writes through ``store.writer``,
and ``await store.close()`` at the end, which flushes the writer. A command that only
reads opens with ``await Store.open_to_read(url)``.
"""

from kuuki.settings.urls import default_sqlite_url, display_url, normalise_url
from kuuki.store.migrations import MIGRATIONS, Migration, migrate, migration
from kuuki.store.records import FactRecord, MemoryRecord
from kuuki.store.store import Store
from kuuki.store.writer import BatchedWriter, WriterStats

__all__ = [
    "MIGRATIONS",
    "BatchedWriter",
    "FactRecord",
    "MemoryRecord",
    "Migration",
    "Store",
    "WriterStats",
    "default_sqlite_url",
    "display_url",
    "migrate",
    "migration",
    "normalise_url",
]
