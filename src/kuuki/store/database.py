"""What every part of the store shares: the database and the writes still queued.

`Database` is the engine the parts query, the intake's and the writer's own SQLite
connection (``hot.py``; opened after the engine, so it is set later) and the one way a
database error becomes text (no password, no secret: kuuki.text.secrets). `Queued` is the
write-behind queue as the parts see it: a read that could depend on rows the writer has
not committed yet settles them first, and the message reads consult them
(read-your-writes, ``writer.py``). Both are handed to each part by `Store`, which owns
them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from kuuki.text.secrets import redact

if TYPE_CHECKING:
    from kuuki.store.hot import HotConnection
    from kuuki.store.writer import BatchedWriter


class Database:
    """The engine, the hot connection (SQLite files only) and error text."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.hot: HotConnection | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @staticmethod
    def scrub(exc: BaseException) -> str:
        """A database error as text, without the password or any other secret."""
        return redact(f"{type(exc).__name__}: {exc}")


class Queued:
    """The rows the store's writer holds and has not committed (none without a writer)."""

    def __init__(self) -> None:
        self.writer: BatchedWriter | None = None

    async def settle(self) -> None:
        """Commit what is queued, so that a read sees it."""
        if self.writer is not None and len(self.writer):
            await self.writer.flush()

    def message(self, message_id: str) -> dict[str, Any] | None:
        return None if self.writer is None else self.writer.pending_message_row(message_id)

    def channel_rows(self, channel_id: str) -> Iterable[dict[str, Any]]:
        return () if self.writer is None else self.writer.pending_channel_rows(channel_id)
