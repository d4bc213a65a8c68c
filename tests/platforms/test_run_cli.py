"""`kuuki run` as a new user meets it: wrong token shapes, a bad store URL and no network
are each one sentence naming what to fix, never a traceback or library chatter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.platforms.discord import discord  # imported there without the audioop warning

GOOD_SHAPE = "MTEyMzQ1Njc4OTAxMjM0NTY3OA.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"


def run(tmp_path: Path, env: dict[str, str], toml: str = "") -> subprocess.CompletedProcess[str]:
    if toml:
        (tmp_path / "kuuki.toml").write_text(toml, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "kuuki.cli", "run"],
        capture_output=True, text=True, check=False, cwd=tmp_path, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUUKI_LLM": "none", **env},
    )


@pytest.mark.parametrize(
    ("env", "toml", "expected"),
    [
        ({"DISCORD_TOKEN": "hello"}, "",
         "kuuki: setting DISCORD_TOKEN (from the environment): this does not look like a "
         "Discord bot token"),
        ({}, '[discord]\ntoken = "hello"\n', "kuuki: setting discord.token (from kuuki.toml):"),
        ({"DISCORD_TOKEN": "Bot " + GOOD_SHAPE}, "", "remove the 'Bot ' before the token"),
        ({"SLACK_BOT_TOKEN": "xapp-1-A0123-456-abcdef", "SLACK_APP_TOKEN": "xapp-1-A0123-456-abcdef"},
         "", "setting SLACK_BOT_TOKEN (from the environment): this is the app-level token"),
        ({"SLACK_BOT_TOKEN": "xoxb-1234-5678-abcdefgh", "SLACK_APP_TOKEN": "hello"},
         "", "setting SLACK_APP_TOKEN (from the environment): expected the app-level token"),
    ],
)
def test_a_token_of_the_wrong_shape_is_refused_before_connecting(
    tmp_path: Path, env: dict[str, str], toml: str, expected: str
) -> None:
    proc = run(tmp_path, env, toml)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kuuki: setting ") and expected in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    assert "hello" not in proc.stderr and "abcdef" not in proc.stderr


def test_a_bad_store_url_is_named_before_the_missing_token(tmp_path: Path) -> None:
    proc = run(tmp_path, {}, '[store]\nurl = "mysql://root:hunter2@db/kuuki"\n')
    assert proc.returncode == 2
    assert proc.stderr.startswith("kuuki: setting store.url (from kuuki.toml): database URL")
    assert "unsupported database 'mysql'" in proc.stderr and "hunter2" not in proc.stderr
    assert "DISCORD_TOKEN" not in proc.stderr


def test_no_network_at_start_is_one_sentence_without_voice_chatter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The documented seam: discord.py's REST base URL, here a closed port on this machine.
    monkeypatch.setattr(discord.http.Route, "BASE", "http://127.0.0.1:1/api/v10")
    monkeypatch.setenv("DISCORD_TOKEN", GOOD_SHAPE)
    monkeypatch.setenv("KUUKI_LLM", "none")
    monkeypatch.setenv("KUUKI_STORE_URL", f"sqlite:///{tmp_path}/kuuki.sqlite3")
    monkeypatch.chdir(tmp_path)
    assert main(["run"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "kuuki: cannot reach Discord (connection refused); check the network\n"
    assert "PyNaCl" not in captured.err + captured.out
