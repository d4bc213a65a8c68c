"""Hostile input through the CLI (issue 11): every one ends in one line naming the file and
line (or setting), exit code 2, and with `--skip-bad-lines` the rest of the file is replayed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kuuki.cli import main

GOOD = '{"id": "m1", "t": 0, "channel": "general", "user": "alice", "text": "hello there"}'
LAST = '{"id": "m3", "t": 20, "channel": "general", "user": "bob", "text": "anyone around?"}'
DEEP = "[" * 100_000 + "]" * 100_000


def _line(t: str) -> str:
    return '{"id": "m2", "t": ' + t + ', "channel": "general", "user": "bob", "text": "hi"}'


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (DEEP, "not valid JSON: nested too deeply"),
        ('{"id": "m2", "t": 1, "user": "bob", "text": ' + DEEP + "}",
         "not valid JSON: nested too deeply"),
        (_line("1e308"), "field t: 1e+308 seconds is out of range"),
        (_line("NaN"), "field t: nan is not a number of seconds"),
        (_line("Infinity"), "field t: inf is not a number of seconds"),
        (_line("-1e12"), "field t: -1000000000000.0 seconds is out of range"),
    ],
    ids=["deep-line", "deep-field", "t-1e308", "t-nan", "t-inf", "t-negative"],
)
def test_a_hostile_transcript_line_is_a_bad_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, problem: str
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join([GOOD, bad, LAST]) + "\n", encoding="utf-8")
    assert main(["replay", str(path), "--llm", "none"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"kuuki: {path}:2: {problem}")
    assert len(captured.err.splitlines()) == 1 and captured.out == ""
    assert main(["replay", str(path), "--llm", "none", "--skip-bad-lines"]) == 0
    captured = capsys.readouterr()
    assert f"kuuki: skipped {path}:2: {problem}" in captured.err
    assert "Traceback" not in captured.err
    # The good lines on either side are replayed and decided.
    assert {json.loads(line)["after"] for line in captured.out.splitlines()} == {"m1", "m3"}


@pytest.mark.parametrize(
    ("first", "second", "problem"),
    [
        ('"9999-12-31T23:59:00+00:00"', None,
         "field t: 9999-12-31T23:59:00+00:00 is outside 1970-8999"),
        ('"0001-01-01T00:00:00"', None, "field t: 0001-01-01T00:00:00+00:00 is outside 1970-8999"),
        ('"8999-12-31T00:00:00+00:00"', "1e9", "field t: 9031-09-09T01:46:40+00:00 is outside"),
        ("0", "1" + "0" * 400, "field t: a number far too large for seconds"),
    ],
    ids=["end-of-time", "start-of-time", "offset-past-the-end", "huge-integer"],
)
def test_a_time_at_the_edge_of_the_calendar_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str | None,
    problem: str,
) -> None:
    path = tmp_path / "edge.jsonl"
    lines = ['{"id": "m1", "t": ' + first + ', "user": "alice", "text": "Kuu, hi?"}']
    if second is not None:
        lines.append(_line(second))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["replay", str(path), "--llm", "none"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kuuki: {path}:{len(lines)}: {problem}") and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("aliases", "got"), [('"くう"', "got text 'くう'"), ("5", "got the number 5")]
)
def test_setup_aliases_that_are_not_a_list_name_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], aliases: str, got: str
) -> None:
    path = tmp_path / "setup.jsonl"
    setup = '{"setup": {"bot": "Kuu", "aliases": ' + aliases + "}}"
    path.write_text("\n".join([setup, GOOD]) + "\n", encoding="utf-8")
    for flags in ([], ["--skip-bad-lines"]):
        assert main(["replay", str(path), "--llm", "none", *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"kuuki: setting aliases (in the setup line of {path})")
        assert got in err and len(err.splitlines()) == 1


def test_a_kuuki_toml_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "kuuki.toml").write_bytes(b'[persona]\nname = "\xff\xfeKuu"\n')
    (tmp_path / "chat.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "kuuki.cli", "replay", "chat.jsonl", "--llm", "none"],
        capture_output=True, text=True, check=False, cwd=tmp_path, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "kuuki: setting kuuki.toml: line 2: not UTF-8 text (byte 0xff); save the file as UTF-8\n"
    )
    assert proc.stdout == ""


GOOD_SHAPE = "MTEyMzQ1Njc4OTAxMjM0NTY3OA.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"


@pytest.mark.parametrize("platform", ["discord", "slack"])
def test_run_with_no_network_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    platform: str,
) -> None:
    # The documented seams, pointed at a host name that never resolves (RFC 2606 .invalid):
    # what `kuuki run` meets on a machine with no network or no DNS.
    if platform == "discord":
        from kuuki.platforms.discord import discord  # imported there without audioop's warning

        monkeypatch.setattr(discord.http.Route, "BASE", "https://kuuki-test.invalid/api/v10")
        monkeypatch.setenv("DISCORD_TOKEN", GOOD_SHAPE)
    else:
        from kuuki.platforms.slack import adapter

        monkeypatch.setattr(adapter, "SLACK_API", "https://kuuki-test.invalid/api/")
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1234-5678-abcdefgh")
        monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A0123-456-abcdef")
    monkeypatch.setenv("KUUKI_LLM", "none")
    monkeypatch.setenv("KUUKI_STORE_URL", f"sqlite:///{tmp_path}/kuuki.sqlite3")
    monkeypatch.chdir(tmp_path)
    assert main(["run"]) == 2
    captured = capsys.readouterr()
    name = platform.capitalize()
    assert captured.err == (
        f"kuuki: cannot reach {name} (the host name could not be resolved: no network or no "
        "DNS?); check the network\n"
    )
    assert captured.out == f"kuuki run: Kuu on {platform}\n"
