"""Expect lines: parsing both forms, checking them, and `kuuki replay --check`."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.domain import Action, ActionKind, Decision, DecisionTrace, Stage
from kuuki.errors import TranscriptError
from kuuki.replay.expect import Played, check
from kuuki.replay.transcript import parse_lines

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
SETUP = '{"setup": {"bot": "Kuu", "aliases": ["くう"], "language": "en"}}'


def line(mid: str, t: int, text: str, user: str = "alice") -> str:
    return f'{{"id": "{mid}", "t": {t}, "channel": "general", "user": "{user}", "text": "{text}"}}'


def decided(mid: str, kind: ActionKind) -> Decision:
    return Decision(
        mid, "general", Action(kind, "general"), Stage.LOCAL, 50.0, f"because {mid}", T0,
        DecisionTrace(mid, "general", T0),
    )


def timeline(*entries: str | Decision) -> Played:
    tl = Played()
    for e in entries:
        if isinstance(e, str):
            tl.message(e)
        else:
            tl.decision(e)
    return tl


LINES = [line(f"m{i}", i * 10, f"text {i}") for i in range(1, 6)]


def test_both_forms_are_read_with_their_windows() -> None:
    t = parse_lines([
        *LINES,
        '{"after": "m1", "expect": {"action": ["none", "react"]}}',
        '{"from": "m2", "to": "m4", "expect": {"max_replies": 1}}',
        '{"from": "m3", "expect": {"max_replies": 0, "action": "reply"}}',
    ])
    after, span, open_end = t.expectations
    assert (after.after, after.to, after.line) == ("m1", "m1", 6)
    assert (span.after, span.to, span.expect) == ("m2", "m4", {"max_replies": 1})
    assert open_end.to is None and open_end.expect == {"max_replies": 0, "action": ["reply"]}


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('{"after": "m1", "expect": {"acton": ["reply"]}}', "unknown key 'acton'"),
        ('{"after": "m1", "expect": {"action": ["speak"]}}', "expect.action"),
        ('{"after": "m1", "expect": {"max_replies": -1}}', "expect.max_replies"),
        ('{"after": "m1", "expect": {}}', "field expect"),
        ('{"expect": {"action": ["none"]}}', "either 'after' or 'from'"),
        ('{"after": "m1", "to": "m3", "expect": {"action": ["none"]}}', "'to' goes with 'from'"),
        ('{"after": "m9", "expect": {"action": ["none"]}}', "no message 'm9'"),
        ('{"from": "m3", "to": "m1", "expect": {"max_replies": 1}}', "comes before m3"),
    ],
)
def test_a_wrong_expect_line_is_named_by_its_line(bad: str, problem: str) -> None:
    with pytest.raises(TranscriptError) as info:
        parse_lines([*LINES, bad], "p.jsonl")
    assert info.value.line == 6 and problem in str(info.value)
    lenient = parse_lines([*LINES, bad], "p.jsonl", strict=False)
    assert lenient.expectations == [] and [e.line for e in lenient.errors] == [6]


def test_the_action_form_holds_for_the_strongest_action_until_the_next_message() -> None:
    t = parse_lines([*LINES, '{"after": "m1", "expect": {"action": ["react"]}}'])
    ok = timeline("m1", decided("m1", ActionKind.NONE), decided("m1", ActionKind.REACT), "m2",
                  decided("m2", ActionKind.REPLY))
    assert check(t.expectations, ok) == []
    bad = timeline("m1", decided("m1", ActionKind.ACK), "m2")
    (failure,) = check(t.expectations, bad)
    assert failure.line == 6 and failure.got == "ack"
    assert failure.describe("p.jsonl") == (
        "p.jsonl:6: after m1 expected action react, got ack\n"
        "    m1: ack (local, score 50) because m1"
    )


def test_max_replies_counts_replies_from_one_message_to_the_message_after_another() -> None:
    t = parse_lines([*LINES, '{"from": "m2", "to": "m3", "expect": {"max_replies": 1}}'])
    r = ActionKind.REPLY
    inside_two = timeline("m1", decided("m1", r), "m2", decided("m2", r), "m3",
                          decided("m3", r), "m4", decided("m4", r))
    (failure,) = check(t.expectations, inside_two)
    assert (failure.wanted, failure.got) == ("at most 1 reply", "2 replies")
    assert [d.message_id for d in failure.decisions] == ["m2", "m3"]
    acks_are_not_replies = timeline("m2", decided("m2", r), decided("m2", ActionKind.ACK), "m3",
                                    decided("m3", ActionKind.REACT), "m4", decided("m4", r))
    assert check(t.expectations, acks_are_not_replies) == []


def test_max_replies_without_to_runs_to_the_end() -> None:
    t = parse_lines([*LINES, '{"from": "m4", "expect": {"max_replies": 0}}'])
    late = timeline("m4", "m5", decided("m5", ActionKind.REPLY))
    (failure,) = check(t.expectations, late)
    assert failure.describe().startswith("line 6: from m4 to the end expected at most 0 replies")


def write(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "persona.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


HOLDS = [
    SETUP,
    line("m1", 0, "morning all"),
    line("m2", 30, "Kuu, what do you think?", "bob"),
    '{"after": "m1", "expect": {"action": ["none"]}}',
    '{"after": "m2", "expect": {"action": ["reply"]}}',
    '{"from": "m1", "expect": {"max_replies": 1}}',
]


def test_replay_check_passes_when_every_expectation_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, *HOLDS)
    assert main(["replay", str(path), "--llm", "none", "--check"]) == 0
    out = capsys.readouterr().out
    assert out == f"{path}: 3 of 3 expectations held (--llm none): ok\n"


def test_replay_check_fails_with_the_line_and_the_reasons(tmp_path: Path) -> None:
    path = write(
        tmp_path, *HOLDS[:3],
        '{"after": "m2", "expect": {"action": ["none"]}}',
        '{"from": "m1", "to": "m2", "expect": {"max_replies": 0}}',
    )
    proc = subprocess.run(
        [sys.executable, "-m", "kuuki.cli", "replay", str(path), "--llm", "none", "--check"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{path}:4: after m2 expected action none, got reply"
    assert lines[1] == "    m2: reply (addressed, score 80) addressed by name"
    assert f"{path}:5: from m1 to m2 expected at most 0 replies, got 1 reply" in lines
    assert lines[-1] == f"{path}: 0 of 2 expectations held (--llm none): FAILED"


def test_replay_without_check_says_the_expectations_were_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(write(tmp_path, *HOLDS)), "--llm", "none"]) == 0
    err = capsys.readouterr().err
    assert "3 expect lines not checked; add --check to test them" in err


def test_check_of_a_file_without_expectations_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(write(tmp_path, *HOLDS[:3])), "--llm", "none", "--check"]) == 2
    assert "no expect lines" in capsys.readouterr().err


def test_a_wrongly_typed_setup_value_names_the_setup_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, '{"setup": {"bot": "Kuu", "aliases": "kuu"}}', *HOLDS[1:3])
    assert main(["replay", str(path), "--llm", "none"]) == 2
    err = capsys.readouterr().err
    assert f"setting aliases (in the setup line of {path}): expected a list of texts" in err


def test_scenario_files_with_a_judge_mode_replay_in_that_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = Path(__file__).resolve().parent.parent / "scenarios" / "en21_rules_mode.jsonl"
    assert main(["replay", str(rules), "--llm", "none", "--check"]) == 0
    assert capsys.readouterr().out.endswith("(--llm none): ok\n")
