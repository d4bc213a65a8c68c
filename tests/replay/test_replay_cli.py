from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.errors import TranscriptError
from kuuki.replay.transcript import parse_lines, read_transcript

LINES = [
    '{"setup": {"bot": "Mio", "aliases": ["みお"], "language": "ja"}}',
    '{"id": "m1", "t": "2026-01-05T10:00:00+09:00", "channel": "general", "user": "alice", "text": "おはよう"}',
    '{"id": "m2", "t": "2026-01-05T10:00:05+09:00", "channel": "general", "user": "Mio", "text": "おはよう！"}',
    '{"id": "m3", "t": "2026-01-05T10:00:30+09:00", "channel": "secret", "channel_visibility": "private", "user": "bob", "text": "みおさん、内緒の話だよ"}',
    '{"after": "m3", "expect": {"action": ["reply"]}}',
    '{"id": "m4", "t": "2026-01-05T10:01:00+09:00", "channel": "general", "user": "alice", "text": "みおちゃん、元気？", "reply_to": "m2"}',
    '{"kind": "edit", "target": "m1", "t": "2026-01-05T10:01:10+09:00", "channel": "general", "user": "alice", "text": "おはよー"}',
]


def write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_transcript_reader_understands_every_field(tmp_path: Path) -> None:
    t = read_transcript(write(tmp_path, LINES))
    assert t.setup["bot"] == "Mio"
    assert [e.kind.value for e in t.events] == ["posted", "posted", "posted", "posted", "edited"]
    own = t.events[1].message
    assert own is not None and own.user.is_bot and own.user.id == "Mio"
    assert t.events[2].channel.visibility.value == "private"
    assert t.events[3].message is not None and t.events[3].message.reply_to == "m2"
    assert t.expectations[0].after == "m3" and t.expectations[0].expect == {"action": ["reply"]}


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"id": "x", "t": 1, "text": "no user"}', "missing field 'user'"),
        ('{"id": "x", "user": "a", "text": "no time"}', "missing field 't'"),
        ('{"id": "x", "t": "yesterday", "user": "a", "text": "x"}', "not an ISO 8601 time"),
        ('{"id": "x", "t": 1, "user": "a", "text": 5}', "field text"),
        ('{"id": "x", "t": 1, "user": "a", "text": "x", "kind": "poke", "target": "m1"}', "field kind"),
        ('{"id": "x", "t": 1, "user": "a", "text": "x", "channel_visibility": "secret"}', "channel_visibility"),
        ('["a list"]', "expected a JSON object"),
    ],
)
def test_a_malformed_line_names_file_and_line(bad: str, problem: str) -> None:
    lines = ['{"id": "a", "t": 0, "user": "u", "text": "fine"}', bad, '{"id": "b", "t": 9, "user": "u", "text": "also fine"}']
    with pytest.raises(TranscriptError) as info:
        parse_lines(lines, "chat.jsonl")
    assert info.value.path == "chat.jsonl" and info.value.line == 2
    assert problem in str(info.value) and str(info.value).startswith("chat.jsonl:2:")
    lenient = parse_lines(lines, "chat.jsonl", strict=False)
    assert [e.event_id for e in lenient.events] == ["a", "b"]  # nothing else is lost
    assert [e.line for e in lenient.errors] == [2]


def test_time_order_is_enforced() -> None:
    with pytest.raises(TranscriptError, match="time order"):
        parse_lines(['{"id": "a", "t": 10, "user": "u", "text": "x"}', '{"id": "b", "t": 5, "user": "u", "text": "y"}'])


def test_replay_prints_one_json_line_per_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(write(tmp_path, LINES)), "--llm", "none"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["after"] for o in out] == ["m1", "m3", "m4"]  # not the bot's own m2
    by_id = {o["after"]: o for o in out}
    assert by_id["m1"]["action"] == "none"
    assert by_id["m3"]["action"] == "reply" and by_id["m3"]["stage"] == "addressed"
    assert by_id["m3"]["text"] is None and by_id["m3"]["llm_calls"] == 0
    assert by_id["m4"]["action"] == "reply"
    for o in out:
        assert set(o) >= {"after", "t", "action", "text", "emoji", "score", "stage", "llm_calls", "reason"}


def test_replay_with_stub_and_dumped_prompts_named_by_channel_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "prompts"
    assert main(["replay", str(write(tmp_path, LINES)), "--llm", "stub", "--dump-prompts", str(dump)]) == 0
    names = sorted(p.name for p in dump.iterdir())
    assert names and any("secret-m3-reply" in n for n in names)
    assert any("general-m4-reply" in n for n in names)
    general = next(p for p in dump.iterdir() if "general-m4" in p.name).read_text(encoding="utf-8")
    assert "みおちゃん、元気？" in general


def test_replay_of_a_malformed_file_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, [*LINES[:2], "{oops", *LINES[2:]])
    assert main(["replay", str(path), "--llm", "none"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and "not valid JSON" in err
    assert main(["replay", str(path), "--llm", "none", "--skip-bad-lines"]) == 0
    captured = capsys.readouterr()
    assert f"skipped {path}:3" in captured.err
    assert len(captured.out.splitlines()) == 3


def test_replay_into_a_store_that_saw_its_ids_stops_and_keeps_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second replay of the same ids into one --store would be skipped silently (an id is
    handled once): it stops naming the store and the ids, and the store keeps its run."""
    path, store = write(tmp_path, LINES), tmp_path / "replay.db"
    assert main(["replay", str(path), "--llm", "none", "--store", str(store)]) == 0
    first = capsys.readouterr().out.splitlines()
    assert len(first) == 3
    assert main(["replay", str(path), "--llm", "none", "--store", str(store)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"--store {store} already holds 5 events" in captured.err
    assert "(m1, m2, m3, m4, edit:m1:7)" in captured.err and "new --store file" in captured.err
    assert main(["why", "m3", "--store", str(store), "--json"]) == 0
    assert [d["action"] for d in json.loads(capsys.readouterr().out)] == ["reply"]
    other = tmp_path / "other.db"  # a new file replays the same transcript as the first run
    assert main(["replay", str(path), "--llm", "none", "--store", str(other)]) == 0
    assert capsys.readouterr().out.splitlines() == first


def test_bad_setting_stops_start_up_with_one_message(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "KUUKI_JUDGE_MODE": "sometimes", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "kuuki.cli", "replay", str(write(tmp_path, LINES)), "--llm", "none"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "kuuki: setting KUUKI_JUDGE_MODE (from the environment): expected one of auto, hybrid, llm, rules, got 'sometimes'"
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.startswith("kuuki ")


def test_run_without_tokens_says_which_setting_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "DISCORD_TOKEN" in err and "SLACK_BOT_TOKEN" in err and "kuuki playground" in err


def test_run_with_half_a_slack_config_names_the_missing_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret-value")
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "SLACK_APP_TOKEN" in err and "xoxb-secret-value" not in err
