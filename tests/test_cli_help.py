"""`--help` explains every option, offers no test-only back-end, and the playground warns
before it listens beyond this machine."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kuuki import cli
from kuuki.settings import Settings


def parsers(p: argparse.ArgumentParser, path: str = "kuuki") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, p
    for action in p._actions:  # argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"{path}: {action.dest}"
        for path, p in parsers(cli.build_parser())
        for action in p._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and not (action.help or "").strip()
    ]
    assert missing == []


def run_help(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "kuuki.cli", *args, "--help"],
        capture_output=True, text=True, check=True,
    )
    return proc.stdout


def test_help_explains_host_port_file_and_run_and_hides_the_scripted_back_end() -> None:
    pg = run_help("playground")
    assert "no authentication" in pg and "port to listen on" in pg
    assert "scripted" not in pg and "embedded" in pg
    rp = run_help("replay")
    assert "FILE" in rp and "the transcript (.jsonl) to replay" in rp
    assert "--check" in rp and "scripted" not in rp
    run = run_help("run")
    assert "DISCORD_TOKEN" in run and "SLACK_APP_TOKEN" in run
    top = run_help()
    assert "run the bot on Discord and/or Slack" in top and "memory" in top
    assert "doctor" in top and "exit 0 only when all pass" in run_help("doctor")
    st = run_help("stats")
    assert "--since SPAN" in st and "30m, 12h, 7d (default), 2w or 1y" in st and "--json" in st
    db = run_help("dashboard")
    assert "--store PATH" in db and "It only reads" in db.replace("\n", " ")


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Stands in for the web server only: what the command asked it to serve."""
    calls: list[dict[str, Any]] = []

    async def serve(settings: Settings, **kwargs: Any) -> None:
        calls.append(kwargs)

    import kuuki.platforms.playground as playground

    monkeypatch.setattr(playground, "serve_playground", serve)
    return calls


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_a_non_loopback_host_gets_a_warning(
    host: str, served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["playground", "--host", host, "--llm", "none"]) == 0
    err = capsys.readouterr().err
    assert f"warning: the playground has no authentication; on {host} anyone" in err
    assert served[0]["host"] == host


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_get_no_warning(
    host: str, served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["playground", "--host", host, "--llm", "none"]) == 0
    assert "no authentication" not in capsys.readouterr().err


def test_the_playground_can_keep_its_store(
    served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["playground", "--llm", "none"]) == 0
    assert "temporary store" in capsys.readouterr().err and served[0]["store_url"] is None
    assert cli.main(["playground", "--llm", "none", "--store", str(tmp_path / "pg.db")]) == 0
    assert served[1]["store_url"] == f"sqlite:///{tmp_path}/pg.db"
