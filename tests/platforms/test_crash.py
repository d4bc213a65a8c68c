"""kill -9 and a stopped database in the middle of a stream, through each platform's local
server (issue 11); the scenario and its checks are kuuki.bench.crash (also run by
`kuuki bench crash`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kuuki.bench.crash import PLATFORMS, kill_9, postgres_outage, private_postgres
from kuuki.testing.crashkit import PrivateServer
from kuuki.testing.services import service_missing

PG_ENV = "KUUKI_TEST_POSTGRES_URL"  # the test server (.ci/postgres.sh); the case runs its own


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
async def test_kill_9_mid_stream(platform: str, tmp_path: Path) -> None:
    await kill_9(platform, tmp_path)


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivateServer]:
    if not os.environ.get(PG_ENV):
        service_missing("PostgreSQL", f"{PG_ENV} is not set (see .ci/postgres.sh)")
    try:
        with private_postgres() as pg:
            yield pg
    except RuntimeError as exc:
        service_missing("PostgreSQL", str(exc))


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
async def test_postgres_stopped_mid_stream_then_kill_9(
    platform: str, private_pg: PrivateServer, tmp_path: Path
) -> None:
    await postgres_outage(platform, tmp_path, private_pg)
