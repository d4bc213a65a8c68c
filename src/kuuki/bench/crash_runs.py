"""`kuuki bench crash`: the cases of kuuki.bench.crash, run N times in a row beside M
CPU-bound processes ("5 runs under CPU competition", from a command).

Each case's report is a JSON line on ``out`` (with its run number), then one summary line:
runs, cases, passed, failed and the load average at the start and at the end. A case
whose check failed (`CrashCheckFailed`) is named on ``err`` and the exit code is 1; the
remaining cases and runs still go on. The CPU hogs are started before the first case and
killed after the last, however the runs end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from kuuki.bench.crash import (
    KILL_AT,
    MESSAGES,
    CrashCheckFailed,
    kill_9,
    postgres_outage,
    private_postgres,
)
from kuuki.testing.crashkit import PrivateServer, cpu_hogs

KILL_9 = "kill -9"
OUTAGE = "postgres stopped, then kill -9"

# (platform, case, the private PostgreSQL of the outage case, a work directory) → counts
CaseFn = Callable[[str, str, PrivateServer | None, Path], dict[str, Any]]


def run_case(platform: str, case: str, pg: PrivateServer | None, work: Path) -> dict[str, Any]:
    """One case, on its own event loop: its counts (raises `CrashCheckFailed`)."""
    if case == KILL_9:
        return asyncio.run(kill_9(platform, work))
    if pg is None:
        raise CrashCheckFailed("the PostgreSQL case needs its server")
    return asyncio.run(postgres_outage(platform, work, pg))


def cases(platforms: list[str], *, postgres: bool) -> list[tuple[str, str]]:
    found = [(pl, KILL_9) for pl in platforms]
    return found + ([(pl, OUTAGE) for pl in platforms] if postgres else [])


def one_run(run: int, todo: list[tuple[str, str]], pg: PrivateServer | None,
            case_fn: CaseFn, out: TextIO) -> list[str]:
    """Every case once, each report a JSON line; the failed ones, named."""
    failed: list[str] = []
    for platform, case in todo:
        with tempfile.TemporaryDirectory(prefix="kuuki-crash-") as tmp:
            line: dict[str, Any] = {"run": run, "platform": platform, "case": case}
            try:
                line |= {"held": True, **case_fn(platform, case, pg, Path(tmp))}
            except CrashCheckFailed as exc:
                line |= {"held": False, "failure": str(exc)[:500]}
                failed.append(f"run {run} {platform} {case}: {str(exc)[:200]}")
        print(json.dumps(line, ensure_ascii=False), file=out, flush=True)
    return failed


def bench_runs(platforms: list[str], *, postgres: bool, runs: int, hogs: int, out: TextIO,
               err: TextIO, case_fn: CaseFn = run_case) -> int:
    """All the selected cases ``runs`` times beside ``hogs`` CPU hogs: the exit code (1 if
    any case failed its checks)."""
    if runs < 1 or hogs < 0:
        raise ValueError(f"runs must be 1 or more and hogs 0 or more, not {runs} and {hogs}")
    todo = cases(platforms, postgres=postgres)
    failed: list[str] = []
    load_start = os.getloadavg()
    started = time.monotonic()
    pg_cm = private_postgres() if postgres else contextlib.nullcontext()
    with cpu_hogs(hogs), pg_cm as pg:
        for run in range(1, runs + 1):
            failed += one_run(run, todo, pg, case_fn, out)
        load_end = os.getloadavg()
    total = runs * len(todo)
    print(json.dumps({
        "benchmark": "crash", "messages": MESSAGES, "kills_at": list(KILL_AT),
        "cpu_hogs": hogs, "runs": runs, "cases": total, "passed": total - len(failed),
        "failed": len(failed), "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in load_end],
        "seconds": round(time.monotonic() - started, 1),
    }), file=out, flush=True)
    for name in failed:
        print(f"kuuki bench crash: failed: {name}", file=err)
    return 1 if failed else 0
