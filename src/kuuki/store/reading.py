"""Opening a store only to read it: nothing is created, migrated or changed.

`kuuki why`, `kuuki stats`, `kuuki memory list|show`, `kuuki doctor` and the dashboard
read a store that may belong to a running bot, to a backup, to another kuuki version or —
by a slip of ``--store`` — to another application altogether. They must leave every byte
as they found it, so they never go through :meth:`Store.open` (which creates the file,
switches it to WAL and migrates it).

- **SQLite** is opened through a ``file:`` URI with ``mode=ro``: the library refuses every
  write. When no ``-wal`` file lies beside the database, no connection holds it open (a
  WAL database keeps that file while anyone is connected), and it is opened
  ``immutable=1`` as well, which makes SQLite create no ``-wal``/``-shm`` files of its own
  and lets it read a database on a read-only mount, where a plain read-only open of a WAL
  database fails for want of a ``-shm`` file. A live bot's store is read through its WAL.
- **PostgreSQL** sessions start with ``default_transaction_read_only``: a write is an error
  of the server's, whatever the code does.

What is found at the URL (:func:`look`) is told as one line when it is not a store this
kuuki reads (:func:`refusal`): nothing there, an empty database, another application's
tables, a kuuki store at an older schema (``kuuki run`` or ``kuuki store migrate``
migrates it: back it up first), or a newer one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, event, inspect, select
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from kuuki.errors import StoreError
from kuuki.settings.urls import display_url, is_memory, normalise_url
from kuuki.store.engine import BUSY_TIMEOUT_MS, PG_CONNECT_TIMEOUT_S, json_dumps
from kuuki.store.migrations import MIGRATIONS
from kuuki.store.schema import SchemaMigrationRow
from kuuki.text.secrets import redact, remember


class Kind(Enum):
    """What lies at a store's URL, as a reading command meets it."""

    MISSING = "missing"  # no file (SQLite)
    EMPTY = "empty"  # a database with no tables (a 0-byte file, a new PostgreSQL database)
    FOREIGN = "foreign"  # tables, none of them kuuki's bookkeeping
    OLDER = "older"  # a kuuki store with migrations this kuuki would apply
    NEWER = "newer"  # a kuuki store with migrations this kuuki does not know
    CURRENT = "current"


@dataclass(frozen=True, slots=True)
class Found:
    """What :func:`look` saw: the kind, the tables and the schema versions applied."""

    kind: Kind
    shown: str  # the file path or the masked URL
    tables: tuple[str, ...] = ()
    applied: tuple[int, ...] = ()

    @property
    def version(self) -> int:
        return max(self.applied, default=0)


def current_version() -> int:
    return MIGRATIONS[-1].version


def read_only_engine(url: URL) -> AsyncEngine:
    """An engine over ``url`` (from ``normalise_url``) that cannot write (module doc)."""
    if url.get_backend_name() != "sqlite":
        return create_async_engine(
            url,
            json_serializer=json_dumps,
            connect_args={
                "timeout": PG_CONNECT_TIMEOUT_S,
                "server_settings": {"default_transaction_read_only": "on"},
            },
        )
    if is_memory(url):  # an in-memory database is this process's own: nothing to protect
        return create_async_engine(url, json_serializer=json_dumps, poolclass=StaticPool)
    path = Path(str(url.database))
    query = {"mode": "ro", "uri": "true"}
    if not Path(f"{path}-wal").exists():
        query["immutable"] = "1"
    uri = url.set(database=f"file:{quote(str(path.resolve()))}", query=query)
    engine = create_async_engine(
        uri, json_serializer=json_dumps, pool_size=1, max_overflow=0, pool_timeout=60
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # BEGIN below, never an implicit one
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")  # deferred: a reader takes no write lock

    return engine


def sqlite_path(url: URL) -> Path | None:
    if url.get_backend_name() != "sqlite" or is_memory(url):
        return None
    return Path(str(url.database))


def shown_as(url: URL) -> str:
    path = sqlite_path(url)
    return str(path) if path is not None else display_url(url)


async def look(url: URL, engine: AsyncEngine | None = None) -> Found:
    """What lies at ``url``, read without changing it (``engine``: one already made by
    :func:`read_only_engine` for that URL, which the caller keeps)."""
    shown = shown_as(url)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return Found(Kind.MISSING, shown)
    own = engine is None
    engine = engine if engine is not None else read_only_engine(url)
    try:
        async with engine.connect() as conn:
            tables, applied = await conn.run_sync(_tables_and_versions)
    except Exception as exc:
        verb = "read" if path is not None else "connect to"
        raise StoreError(f"cannot {verb} {shown}: {_why(exc)}") from exc
    finally:
        if own:
            await engine.dispose()
    if not tables:
        return Found(Kind.EMPTY, shown)
    if SchemaMigrationRow.__tablename__ not in tables or not applied:
        return Found(Kind.FOREIGN, shown, tables)
    known = {m.version for m in MIGRATIONS}
    if any(v not in known for v in applied):
        return Found(Kind.NEWER, shown, tables, applied)
    if known - set(applied):
        return Found(Kind.OLDER, shown, tables, applied)
    return Found(Kind.CURRENT, shown, tables, applied)


def _tables_and_versions(conn: Connection) -> tuple[tuple[str, ...], tuple[int, ...]]:
    tables = tuple(sorted(inspect(conn).get_table_names()))
    if SchemaMigrationRow.__tablename__ not in tables:
        return tables, ()
    rows = conn.execute(select(SchemaMigrationRow.version))
    return tables, tuple(sorted(int(r[0]) for r in rows))


def _why(exc: BaseException) -> str:
    cause: BaseException = exc
    while cause.__cause__ is not None and not isinstance(cause, OSError):
        cause = cause.__cause__
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    first = str(getattr(cause, "orig", None) or cause).splitlines()
    return redact(f"{type(cause).__name__}: {first[0] if first else ''}")


def not_kuukis(found: Found) -> str:
    """A foreign database in words, with (the first of) the tables found in it."""
    listed = ", ".join(found.tables[:8]) + (", …" if len(found.tables) > 8 else "")
    return (f"{found.shown} is not a kuuki store: it holds the tables {listed} and no "
            "schema_migrations of kuuki's")


def refusal(found: Found) -> str | None:
    """The one line that says why ``found`` cannot be read as a store; None when it can."""
    where = found.shown
    if found.kind is Kind.MISSING:
        return f"no store at {where}: nothing was ever recorded there"
    if found.kind is Kind.EMPTY:
        return (f"{where} is an empty database, not a kuuki store: `kuuki run` creates "
                "the tables on its first start")
    if found.kind is Kind.FOREIGN:
        return f"{not_kuukis(found)}; check --store or KUUKI_STORE_URL"
    if found.kind is Kind.NEWER:
        return (f"{where} was written by a newer kuuki (schema version {found.version}; "
                f"this kuuki reads version {current_version()}): upgrade kuuki to read it")
    if found.kind is Kind.OLDER:
        return (f"{where} is a kuuki store at schema version {found.version}; this kuuki "
                f"reads version {current_version()}. Back it up first: `kuuki run` "
                "migrates it on start, or `kuuki store migrate` does it now")
    return None


async def open_read_only(url: str | None) -> tuple[URL, AsyncEngine]:
    """The URL and a read-only engine over a store this kuuki can read; raises
    :class:`StoreError` with :func:`refusal`'s line for anything else."""
    parsed = normalise_url(url)
    if parsed.password is not None:
        remember(str(parsed.password))
    engine = read_only_engine(parsed)
    try:
        found = await look(parsed, engine)
    except BaseException:
        await engine.dispose()
        raise
    line = refusal(found)
    if line is not None:
        await engine.dispose()
        raise StoreError(line)
    return parsed, engine
