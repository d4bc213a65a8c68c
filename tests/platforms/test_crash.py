"""kill -9 and a stopped database in the middle of a stream, through each platform's local
server (issue 11); the scenario and its checks are kuuki.bench.crash (also run by
`kuuki bench crash`), which raises `CrashCheckFailed` when one does not hold, and the
tests assert its report: every message said stored, every mention answered once.

``KUUKI_TEST_CPU_HOGS=N`` runs N CPU-bound processes beside the cases, from before the
first to after the last: a slower machine, where issue 24 found mentions lost."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kuuki.bench.crash import (
    KILL_AT,
    MESSAGES,
    PLATFORMS,
    kill_9,
    postgres_outage,
    private_postgres,
)
from kuuki.testing.crashkit import PrivateServer, cpu_hogs
from kuuki.testing.services import service_missing

PG_ENV = "KUUKI_TEST_POSTGRES_URL"  # the test server (.ci/postgres.sh); the case runs its own
HOGS_ENV = "KUUKI_TEST_CPU_HOGS"


def _hogs(raw: str) -> int:
    if not raw.strip():
        return 0
    if not raw.strip().isdigit() or int(raw) > 64:
        raise ValueError(f"{HOGS_ENV} must be a number of processes from 0 to 64, not {raw!r}")
    return int(raw)


HOGS = _hogs(os.environ.get(HOGS_ENV, ""))  # read at import: tests/conftest.py clears KUUKI_*


@pytest.fixture(scope="module", autouse=True)
def competition() -> Iterator[list[subprocess.Popen[bytes]]]:
    with cpu_hogs(HOGS) as procs:  # the same harness as `kuuki bench crash --cpu-hogs`
        yield procs


def assert_nothing_lost(report: dict[str, Any]) -> None:
    """Every message said is stored, every mention answered and decided exactly once."""
    addressed = sum(1 for i in range(MESSAGES) if i % 5 == 2)  # kuuki.bench.crash.Stream
    assert report["said"] == report["stored (of said)"] == MESSAGES
    assert report["addressed"] == addressed
    assert report["replies"] == report["mentions answered once"] == addressed
    assert report["mentions decided once"] == addressed
    assert report["decided twice"] == report["left in the inbox"] == 0


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
async def test_kill_9_mid_stream(platform: str, tmp_path: Path) -> None:
    report = await kill_9(platform, tmp_path)
    assert_nothing_lost(report)
    assert [r["kill at"] for r in report["interruptions"]] == list(KILL_AT)


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
    report = await postgres_outage(platform, tmp_path, private_pg)
    assert_nothing_lost(report)
    outage, kill = report["interruptions"]
    assert outage["said during"] > 0  # people talked while the database was down
    assert "kill at" in kill
