"""Database URLs: defaults, accepted spellings, and safe display.

They live with the settings, which check a store URL when they are read (so a bad one
stops start-up first); the store opens what `normalise_url` returns.

Accepted forms::

    None                              -> SQLite file under platformdirs.user_data_dir("kuuki")
                                         (its directory made only by an opening that writes)
    ":memory:" / "sqlite://"          -> in-memory SQLite (one connection, lost on close)
    "sqlite:///relative/path.db"      -> SQLite file (4 slashes for an absolute path)
    "sqlite+aiosqlite:///path.db"
    "postgresql://user:pw@host/db"    -> normalised to postgresql+asyncpg://
    "postgres://…", "postgresql+asyncpg://…"

Any problem raises :class:`~kuuki.errors.StoreError` that names the problem and shows the
URL with its password masked — never the password itself. A password may hold ``@``, ``/``
or ``'`` unencoded: it ends at the last ``@``; and it joins the secrets every error is
cleaned of (kuuki.text.secrets) as soon as the URL is read.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import platformdirs
from sqlalchemy.engine import URL, make_url

from kuuki.errors import StoreError
from kuuki.text.secrets import mask_userinfo, remember_url, split_userinfo

DEFAULT_DB_NAME = "kuuki.sqlite3"

_SQLITE_DRIVERS = {"sqlite", "sqlite+aiosqlite", "sqlite+pysqlite"}
_PG_DRIVERS = {"postgresql", "postgres", "postgresql+asyncpg"}


def default_sqlite_path() -> Path:
    """The default database file, under the user's data directory (not created here)."""
    return Path(platformdirs.user_data_dir("kuuki")) / DEFAULT_DB_NAME


def default_sqlite_url() -> str:
    """URL of the default database file. Nothing is created: the store's read-write
    opening makes the directory (`ensure_directory`); a command that only reads must
    leave the user's data directory as it found it."""
    return f"sqlite+aiosqlite:///{default_sqlite_path()}"


def ensure_directory(url: URL) -> None:
    """Create the default database file's directory, for an opening that will write."""
    if url.get_backend_name() != "sqlite" or is_memory(url):
        return
    directory = Path(str(url.database)).parent
    if directory != default_sqlite_path().parent or directory.is_dir():
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create data directory {directory}: {exc.strerror}") from exc


def path_or_url(value: str) -> str:
    """A `--store` value as a URL: a database URL as it is, a plain path as a SQLite file."""
    raw = value.strip()
    if "://" in raw or raw == ":memory:":
        return raw
    return f"sqlite:///{Path(raw).expanduser().resolve()}"


def sqlite_file(url: str | None) -> Path | None:
    """The file a SQLite URL names (None for other databases and in-memory SQLite)."""
    parsed = normalise_url(url)
    if parsed.get_backend_name() != "sqlite" or is_memory(parsed):
        return None
    return Path(str(parsed.database))


def mask_raw(url: str) -> str:
    """Mask the password in a URL string that may not even parse."""
    return mask_userinfo(url)


def display_url(url: URL) -> str:
    """``url`` as text with the password replaced by ``***``."""
    if is_memory(url):
        return f"{url.drivername}:///:memory:"
    return url.render_as_string(hide_password=True)


def normalise_url(url: str | None) -> URL:
    """Parse and normalise ``url`` to an async-driver SQLAlchemy URL (see module doc)."""
    if url is None:
        url = default_sqlite_url()
    raw = url.strip()
    if raw in (":memory:", "sqlite://", "sqlite+aiosqlite://"):
        return make_url("sqlite+aiosqlite:///:memory:")
    if "://" not in raw:
        raise StoreError(
            f"database URL {mask_raw(raw)!r} is not a URL; use sqlite:///path/to/file.db, "
            "postgresql://user:password@host/db or :memory:"
        )
    remember_url(raw)  # its password, also when the URL came from --store, not settings
    try:
        parsed = _parsed(raw)
    except Exception as exc:
        # The library's message may quote the URL verbatim, password included.
        raise StoreError(
            f"database URL {mask_raw(raw)!r} cannot be parsed ({type(exc).__name__}); check "
            "the port, and percent-encode special characters in the user and password"
        ) from None
    driver = parsed.drivername.lower()
    if driver in _SQLITE_DRIVERS:
        return _sqlite(parsed)
    if driver in _PG_DRIVERS:
        return _postgres(parsed)
    scheme = driver.split("+", 1)[0]
    if scheme in ("postgresql", "postgres"):
        raise StoreError(
            f"database URL {display_url(parsed)!r}: driver {driver!r} is not supported; "
            "use postgresql:// (kuuki connects with asyncpg)"
        )
    raise StoreError(
        f"database URL {display_url(parsed)!r}: unsupported database {scheme!r}; "
        "kuuki supports sqlite and postgresql"
    )


def _parsed(raw: str) -> URL:
    """``raw`` as a URL whose password ends at the last ``@``, as people type passwords
    (SQLAlchemy's parser ends it at the first, taking the rest of it for the host)."""
    parts = split_userinfo(raw)
    if parts is None:
        return make_url(raw)
    scheme, user, password, rest = parts
    url = make_url(f"{scheme}{rest}")
    return url.set(username=unquote(user) or None,
                   password=None if password is None else unquote(password))


def is_memory(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def _sqlite(parsed: URL) -> URL:
    if parsed.host or parsed.username or parsed.password:
        raise StoreError(
            f"database URL {display_url(parsed)!r}: a SQLite URL has no host or user; "
            "use sqlite:///relative.db or sqlite:////absolute/path.db"
        )
    url = parsed.set(drivername="sqlite+aiosqlite")
    if is_memory(url):
        return url.set(database=":memory:")
    assert url.database is not None
    parent = Path(url.database).expanduser().parent
    if not parent.is_dir() and parent != default_sqlite_path().parent:
        raise StoreError(
            f"database URL {display_url(url)!r}: directory {str(parent)!r} does not exist"
        )
    return url.set(database=str(Path(url.database).expanduser()))


def _postgres(parsed: URL) -> URL:
    port = parsed.port
    if port is not None and not 0 < port < 65536:
        raise StoreError(f"database URL {display_url(parsed)!r}: port {port} is out of range")
    if not parsed.database:
        raise StoreError(f"database URL {display_url(parsed)!r}: no database name after the /")
    return parsed.set(drivername="postgresql+asyncpg")
