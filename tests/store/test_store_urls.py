"""URL handling, bad URLs, the default database location, and SQLite settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import text
from storekit import msg

from kuuki.errors import StoreError
from kuuki.store import Store, default_sqlite_url, display_url, normalise_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (":memory:", "sqlite+aiosqlite:///:memory:"),
        ("sqlite://", "sqlite+aiosqlite:///:memory:"),
        ("sqlite:///kuuki.db", "sqlite+aiosqlite:///kuuki.db"),
        ("sqlite+aiosqlite:///kuuki.db", "sqlite+aiosqlite:///kuuki.db"),
        ("postgresql://bot:pw@db.example/kuuki", "postgresql+asyncpg://bot:***@db.example/kuuki"),
        ("postgres://bot:pw@db:6543/kuuki", "postgresql+asyncpg://bot:***@db:6543/kuuki"),
        ("postgresql+asyncpg://bot@db/kuuki", "postgresql+asyncpg://bot@db/kuuki"),
    ],
)
def test_accepted_urls(url: str, expected: str) -> None:
    assert display_url(normalise_url(url)) == expected


def test_absolute_sqlite_path(tmp_path: Path) -> None:
    url = normalise_url(f"sqlite:///{tmp_path}/x.db")
    assert url.drivername == "sqlite+aiosqlite" and url.database == f"{tmp_path}/x.db"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://root:hunter2@db/kuuki", "unsupported database 'mysql'"),
        ("postgresql+psycopg2://u:hunter2@db/kuuki", "driver 'postgresql+psycopg2'"),
        ("postgresql://u:hunter2@db:notaport/kuuki", "cannot be parsed"),
        ("postgresql://u:hunter2@db:99999/kuuki", "port 99999 is out of range"),
        ("postgresql://u:hunter2@db", "no database name"),
        ("just-a-word", "is not a URL"),
        ("sqlite://u:hunter2@host/x.db", "has no host or user"),
        ("sqlite:////definitely/not/here/x.db", "does not exist"),
    ],
)
def test_bad_urls_name_the_problem_without_the_password(url: str, problem: str) -> None:
    with pytest.raises(StoreError, match=re.escape(problem)) as info:
        normalise_url(url)
    assert "hunter2" not in str(info.value)


async def test_unreachable_postgres_is_a_store_error_without_password() -> None:
    with pytest.raises(StoreError, match="cannot open database") as info:
        await Store.open("postgresql://kuuki:hunter2@127.0.0.1:1/kuuki")
    assert "hunter2" not in str(info.value) and "***" in str(info.value)


async def test_the_default_data_dir_is_made_by_an_opening_that_writes_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "deep" / "kuuki-data"
    monkeypatch.setattr("kuuki.settings.urls.platformdirs.user_data_dir", lambda app: str(data))
    url = default_sqlite_url()
    assert not data.exists() and url.endswith(f"{data}/kuuki.sqlite3")
    with pytest.raises(StoreError, match=r"no store at .*nothing was ever recorded there"):
        await Store.open_to_read()
    assert not data.exists()
    store = await Store.open()
    try:
        assert store.url_for_display == url
        await store.messages.add_message(msg("m1"))
    finally:
        await store.close()
    assert (data / "kuuki.sqlite3").exists()


async def test_sqlite_file_settings(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite:///{tmp_path}/k.db")
    try:
        async with store.engine.connect() as conn:

            async def pragma(name: str) -> object:
                return (await conn.execute(text(f"PRAGMA {name}"))).scalar()

            assert await pragma("journal_mode") == "wal"
            assert await pragma("synchronous") == 1  # NORMAL
            assert await pragma("foreign_keys") == 1
            assert await pragma("busy_timeout") == 10_000
    finally:
        await store.close()


async def test_in_memory_store_works() -> None:
    store = await Store.open(":memory:")
    try:
        assert store.url_for_display == "sqlite+aiosqlite:///:memory:"
        await store.messages.add_message(msg("m1"))
        assert await store.messages.get_message("m1") == msg("m1")
    finally:
        await store.close()
