"""Migrations: fresh database, upgrade from an older version, re-runs, failures, drift."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, insert, inspect, text
from storekit import T0

from kuuki.errors import StoreError
from kuuki.store import MIGRATIONS, Migration, Store, migrate, migration, normalise_url
from kuuki.store.engine import create_engine
from kuuki.store.migrations import applied_versions
from kuuki.store.schema import Base, ChannelRow, MessageRow, UserRow

LATEST = [m.version for m in MIGRATIONS]


def _index_names(conn: Connection, table: str) -> set[str]:
    return {i["name"] for i in inspect(conn).get_indexes(table) if i["name"]}


async def test_fresh_database_is_fully_migrated(store: Store) -> None:
    assert LATEST[:2] == [1, 2]
    assert await applied_versions(store.engine) == LATEST
    assert await store.migrate() == []


async def test_migrated_schema_matches_the_models(store: Store) -> None:
    def describe(conn: Connection) -> dict[str, Any]:
        insp = inspect(conn)
        return {
            t: {
                "columns": {c["name"]: c["nullable"] for c in insp.get_columns(t)},
                "indexes": _index_names(conn, t),
            }
            for t in Base.metadata.tables
        }

    async with store.engine.connect() as conn:
        actual = await conn.run_sync(describe)
    for name, table in Base.metadata.tables.items():
        expected_cols = {c.name: c.nullable or False for c in table.columns}
        # Primary keys report nullable=False everywhere; the models agree.
        assert actual[name]["columns"] == expected_cols, name
        assert actual[name]["indexes"] >= {i.name for i in table.indexes if i.name}, name


async def test_upgrade_from_version_1_keeps_data(store_url: str) -> None:
    engine = create_engine(normalise_url(store_url))
    try:
        assert await migrate(engine, upto=1) == ["m001_initial"]
        assert await applied_versions(engine) == [1]
        async with engine.begin() as conn:
            assert "ix_messages_channel_ts" not in await conn.run_sync(_index_names, "messages")
            await conn.execute(
                insert(ChannelRow).values(
                    id="c1", name="c1", visibility="public", workspace="w", platform="p"
                )
            )
            await conn.execute(
                insert(UserRow).values(id="u1", name="Ann", first_seen=T0, last_seen=T0)
            )
            await conn.execute(
                insert(MessageRow).values(
                    id="old", channel_id="c1", user_id="u1", text="from v1", ts=T0, mentions=[]
                )
            )
    finally:
        await engine.dispose()

    store = await Store.open(store_url)  # opening applies the rest
    try:
        assert await applied_versions(store.engine) == LATEST
        async with store.engine.connect() as conn:
            assert "ix_messages_channel_ts" in await conn.run_sync(_index_names, "messages")
        old = await store.messages.get_message("old")
        assert old is not None and old.text == "from v1" and not old.edited
        assert await store.migrate() == []  # idempotent
    finally:
        await store.close()


async def test_a_new_migration_is_applied_once(store: Store) -> None:
    def m003_extra(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE extra_test (id INTEGER PRIMARY KEY, note TEXT)"))
        conn.execute(text("INSERT INTO extra_test (id, note) VALUES (1, 'seeded')"))

    later = [*MIGRATIONS, Migration(max(LATEST) + 1, "extra", m003_extra)]
    assert await migrate(store.engine, migrations=later) == [f"m{max(LATEST) + 1:03d}_extra"]
    assert await migrate(store.engine, migrations=later) == []
    async with store.engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM extra_test"))).scalar() == 1


async def test_failed_migration_rolls_back_completely(store: Store) -> None:
    def m099_broken(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE half_done (id INTEGER PRIMARY KEY)"))
        raise RuntimeError("boom")

    with pytest.raises(StoreError, match="m099_broken failed: RuntimeError: boom"):
        await migrate(store.engine, migrations=[*MIGRATIONS, Migration(99, "broken", m099_broken)])
    assert await applied_versions(store.engine) == LATEST
    async with store.engine.connect() as conn:
        tables = await conn.run_sync(lambda c: inspect(c).get_table_names())
    assert "half_done" not in tables  # DDL is transactional on both backends


def test_registry_rejects_bad_names_and_duplicate_versions() -> None:
    before = list(MIGRATIONS)

    def not_a_migration(conn: Connection) -> None: ...

    def m001_again(conn: Connection) -> None: ...

    with pytest.raises(ValueError, match="mNNN_description"):
        migration(not_a_migration)
    with pytest.raises(ValueError, match="duplicate migration version 1"):
        migration(m001_again)
    assert before == MIGRATIONS
