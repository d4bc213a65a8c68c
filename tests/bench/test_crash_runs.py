"""`kuuki bench crash --runs N --cpu-hogs M` (issue 24): every case of every run reported
as a JSON line, one summary line, exit 1 naming a case that failed while the other runs go
on; the CPU hogs live exactly as long as the runs; bad counts are argparse errors."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from kuuki import cli
from kuuki.bench.crash import CrashCheckFailed
from kuuki.bench.crash_runs import bench_runs
from kuuki.testing.crashkit import PrivateServer, cpu_hogs


def test_runs_report_every_case_a_summary_and_name_the_failure() -> None:
    calls: list[tuple[str, str, bool]] = []

    def fake_case(platform: str, case: str, pg: PrivateServer | None,
                  work: Path) -> dict[str, Any]:
        calls.append((platform, case, work.is_dir()))
        if len(calls) == 4:  # run 2's Slack case
            raise CrashCheckFailed("mentions with no reply: ['#q7']")
        return {"said": 300, "stored (of said)": 300}

    out, err = io.StringIO(), io.StringIO()
    code = bench_runs(["discord", "slack"], postgres=False, runs=3, hogs=0, out=out, err=err,
                      case_fn=fake_case)

    assert code == 1
    assert calls == [(pl, "kill -9", True) for _ in range(3) for pl in ("discord", "slack")]
    *reports, summary = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["run"], r["platform"], r["held"]) for r in reports] == [
        (1, "discord", True), (1, "slack", True), (2, "discord", True),
        (2, "slack", False), (3, "discord", True), (3, "slack", True)]
    assert reports[0]["said"] == reports[0]["stored (of said)"] == 300
    assert "#q7" in reports[3]["failure"]
    assert {k: summary[k] for k in ("runs", "cases", "passed", "failed", "cpu_hogs")} == {
        "runs": 3, "cases": 6, "passed": 5, "failed": 1, "cpu_hogs": 0}
    assert len(summary["load_start"]) == len(summary["load_end"]) == 3
    assert err.getvalue().splitlines() == [
        "kuuki bench crash: failed: run 2 slack kill -9: mentions with no reply: ['#q7']"]


def test_all_cases_held_exits_0() -> None:
    out = io.StringIO()
    code = bench_runs(["slack"], postgres=False, runs=2, hogs=0, out=out, err=io.StringIO(),
                      case_fn=lambda *_: {"said": 300})
    assert code == 0
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert (summary["cases"], summary["passed"], summary["failed"]) == (2, 2, 0)


def hog_pids() -> list[int]:
    """This process's live children running ``while 1: pass``, read from /proc."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"while 1: pass" in cmdline:
            found.append(int(proc.name))
    return found


@pytest.mark.parametrize("ending", ["held", "interrupted"])
def test_the_bench_runs_its_hogs_beside_every_case_and_leaves_none(ending: str) -> None:
    assert hog_pids() == []
    during: list[list[int]] = []

    def fake_case(platform: str, case: str, pg: PrivateServer | None,
                  work: Path) -> dict[str, Any]:
        during.append(sorted(hog_pids()))
        if ending == "interrupted" and len(during) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of run 2
        return {}

    with contextlib.suppress(KeyboardInterrupt):
        bench_runs(["discord", "slack"], postgres=False, runs=2, hogs=2, out=io.StringIO(),
                   err=io.StringIO(), case_fn=fake_case)

    assert len(during) == (4 if ending == "held" else 3)
    assert all(len(pids) == 2 and pids == during[0] for pids in during)  # the same two
    assert hog_pids() == []
    for pid in during[0]:  # killed and reaped: no longer a child of ours
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_cpu_hogs_starts_n_live_processes_and_none_is_left() -> None:
    with cpu_hogs(3) as procs:
        assert len({p.pid for p in procs}) == 3
        assert all(p.poll() is None for p in procs)
        assert sorted(hog_pids()) == sorted(p.pid for p in procs)
    assert [p.returncode for p in procs] == [-signal.SIGKILL] * 3
    assert hog_pids() == []


def test_cpu_hogs_are_killed_when_the_block_fails() -> None:
    with pytest.raises(KeyboardInterrupt), cpu_hogs(3) as procs:
        assert all(p.poll() is None for p in procs)
        raise KeyboardInterrupt
    assert len(procs) == 3
    assert [p.returncode for p in procs] == [-signal.SIGKILL] * 3
    for p in procs:  # reaped: the pid is no child of ours any more
        with pytest.raises(ChildProcessError):
            os.waitpid(p.pid, os.WNOHANG)


@pytest.mark.parametrize(("argv", "message"), [
    (["--runs", "0"], "argument --runs: must be 1 or more, not 0"),
    (["--runs", "-2"], "argument --runs: must be 1 or more, not -2"),
    (["--cpu-hogs", "-1"], "argument --cpu-hogs: must be 0 or more, not -1"),
    (["--cpu-hogs", "two"], "argument --cpu-hogs: 'two' is not a whole number"),
])
def test_bad_counts_are_argparse_errors_naming_the_option(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["bench", "crash", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_counts_parse() -> None:
    args = cli.build_parser().parse_args(["bench", "crash", "--runs", "5", "--cpu-hogs", "2"])
    assert (args.runs, args.cpu_hogs) == (5, 2)
    args = cli.build_parser().parse_args(["bench", "crash"])
    assert (args.runs, args.cpu_hogs) == (1, 0)
