"""Fixtures for every test: an isolated environment, and `store_url`, an empty database of
each kind (SQLite in a temp file, and PostgreSQL).

PostgreSQL cases use ``KUUKI_TEST_POSTGRES_URL`` (see ``.ci/postgres.sh``); when it is unset
or the server does not answer they skip with the reason (under ``CI=true`` they fail). Every PostgreSQL case starts from
an empty schema, so the tests must not run in parallel against the same database.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from kuuki.store import normalise_url
from kuuki.testing.corpora import corpora_dir
from kuuki.testing.services import service_missing
from kuuki.text.secrets import SECRETS

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's kuuki.toml, env settings or real data dir."""
    for key in list(os.environ):
        if key.startswith(("KUUKI_", "JUDGE_", "EAVESDROP_", "DISCORD_", "SLACK_")) and key not in (
            "KUUKI_TEST_POSTGRES_URL",
            "KUUKI_TEST_AMQP_URL",
            "KUUKI_TEST_NATS_URL",
            "KUUKI_DATA_DIR",
        ):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("KUUKI_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The corpora's folder: $KUUKI_DATA_DIR, else ../shared/data beside the checkout
    (README, "Corpora"); a test names the part it needs through `require`."""
    return corpora_dir(REPO)


@pytest.fixture(autouse=True)
def _known_secrets() -> Iterator[None]:
    """The secrets a test's settings, stores and back-ends register (kuuki.text.secrets)
    are forgotten after it: another test's password must not mask this one's text."""
    before = SECRETS.values()
    yield
    SECRETS.restore(before)


PG_ENV = "KUUKI_TEST_POSTGRES_URL"

_pg_problem: dict[str, str | None] = {}


async def _probe_pg(url: str) -> str | None:
    """None if ``url`` answers ``select 1`` within a few seconds, else why not."""
    if url in _pg_problem:
        return _pg_problem[url]
    try:
        engine = create_async_engine(normalise_url(url), connect_args={"timeout": 5})
        try:
            async with asyncio.timeout(8), engine.connect() as conn:
                await conn.execute(text("select 1"))
            problem = None
        finally:
            await engine.dispose()
    except Exception as exc:  # any failure means "skip", with the reason
        problem = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
        if (pw := normalise_url(url).password) is not None:
            problem = problem.replace(str(pw), "***")
    _pg_problem[url] = problem
    return problem


async def reset_pg(url: str) -> None:
    """Drop every table in the test database's current schema."""
    engine = create_async_engine(normalise_url(url))
    try:
        async with engine.begin() as conn:
            names = (
                await conn.execute(
                    text("select tablename from pg_tables where schemaname = current_schema()")
                )
            ).scalars()
            for name in list(names):
                await conn.execute(text(f'DROP TABLE IF EXISTS "{name}" CASCADE'))
    finally:
        await engine.dispose()


async def _empty_pg() -> str:
    """The test PostgreSQL, emptied; skips (saying why) when there is none."""
    url = os.environ.get(PG_ENV)
    if not url:
        service_missing("PostgreSQL", f"{PG_ENV} is not set")
    problem = await _probe_pg(url)
    if problem is not None:
        service_missing("PostgreSQL", problem)
    await reset_pg(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_url(request: pytest.FixtureRequest, tmp_path: object) -> AsyncIterator[str]:
    """URL of an empty database of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/kuuki.db"
        return
    url = await _empty_pg()
    yield url
    await reset_pg(url)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """An empty PostgreSQL database (skips, saying why, without one)."""
    url = await _empty_pg()
    yield url
    await reset_pg(url)
