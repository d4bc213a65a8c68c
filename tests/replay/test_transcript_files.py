"""What `kuuki addressee FILE` and `kuuki replay FILE` say about a transcript they cannot
fully use: both read it through one code path, so a bad line stops both with
file and line, `--skip-bad-lines` says each skipped line on stderr and goes on, and a file
with no message to read is refused with a nonzero exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kuuki.cli import main

M1 = b'{"id": "m1", "t": 0, "user": "alice", "text": "bob, did you try it?"}'
M2 = b'{"id": "m2", "t": 5, "user": "bob", "text": "yes, works"}'
SETUP = b'{"setup": {"bot": "Kuu"}}'
COMMANDS = {"addressee": ["addressee"], "replay": ["replay", "--llm", "none"]}

# name: (file bytes, the refusal's text after "kuuki: FILE:", the ids still read when bad
# lines are skipped: None when nothing is left and the command is refused)
BAD = {
    "no-text": (
        b'{"id": "m1", "t": 0, "user": "alice"}\n' + M2 + b"\n",
        "1: missing field 'text' (write \"text\": \"\" for a message with none)", ["m2"]),
    "only-lines-without-text": (
        b'{"id": "m1", "t": 0, "user": "alice"}\n{"id": "m2", "t": 1, "user": "bob"}\n',
        "1: missing field 'text' (write \"text\": \"\" for a message with none)", None),
    "invalid-utf8": (
        b'{"id": "m1", "t": 0, "user": "alice", "text": "caf\xe9"}\n' + M2 + b"\n",
        "1: not UTF-8 text (byte 0xe9 at column 51); save the file as UTF-8", ["m2"]),
    "duplicate-id": (
        M1 + b"\n" + M1.replace(b'"t": 0', b'"t": 3') + b"\n" + M2 + b"\n",
        "2: id 'm1' is already used on line 1; every line needs its own id", ["m1", "m2"]),
    "empty-user": (
        b'{"id": "m1", "t": 0, "user": "", "text": "hi"}\n' + M2 + b"\n",
        "1: field user: empty", ["m2"]),
    "blank-user": (
        b'{"id": "m1", "t": 0, "user": "  ", "text": "hi"}\n' + M2 + b"\n",
        "1: field user: empty", ["m2"]),
    "empty-id": (
        b'{"id": "", "t": 0, "user": "alice", "text": "hi"}\n' + M2 + b"\n",
        "1: field id: empty", ["m2"]),
}
NOTHING = {
    "empty-file": (b"", "no messages: the file is empty"),
    "blank-lines": (b"\n  \n\n", "no messages: the file is empty"),
    "setup-only": (SETUP + b"\n", "no messages, only a setup line"),
}


def _ids(out: str, command: str) -> list[str]:
    key = "id" if command == "addressee" else "after"
    return [json.loads(line)[key] for line in out.splitlines()]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", BAD)
def test_a_bad_line_stops_the_command_with_file_and_line_or_is_skipped_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    data, problem, kept = BAD[name]
    path = tmp_path / "chat.jsonl"
    path.write_bytes(data)
    assert main([*COMMANDS[command], str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"kuuki: {path}:{problem}\n" and captured.out == ""

    code = main([*COMMANDS[command], "--skip-bad-lines", str(path)])
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0] == f"kuuki: skipped {path}:{problem}"
    if kept is None:
        assert code == 2 and captured.out == ""
        assert err[-1].startswith(f"kuuki: {path}: no line could be read (")
    else:
        assert code == 0 and _ids(captured.out, command) == kept


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", NOTHING)
def test_a_file_with_no_message_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    data, why = NOTHING[name]
    path = tmp_path / "chat.jsonl"
    path.write_bytes(data)
    for flags in ([], ["--skip-bad-lines"]):
        assert main([*COMMANDS[command], *flags, str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"kuuki: {path}: {why}\n" and captured.out == ""


def test_addressee_says_which_lines_it_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"\n".join([
        SETUP, M1,
        b'{"kind": "reaction", "target": "m1", "emoji": "+1", "t": 2, "user": "bob"}',
        b'{"after": "m1", "expect": {"action": ["none"]}}', M2]) + b"\n")
    assert main(["addressee", str(path)]) == 0
    captured = capsys.readouterr()
    assert _ids(captured.out, "addressee") == ["m1", "m2"]
    assert captured.err == (
        f"kuuki: {path}: 1 edit, delete or reaction line and 1 expect line not read (who a "
        "message is for is read from the posted messages)\n"
    )
    path.write_bytes(SETUP + b"\n" + b'{"kind": "delete", "target": "m0", "t": 1, "user": "a"}\n')
    assert main(["addressee", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"kuuki: {path}: no messages, only 1 edit, delete or reaction line\n"
    )


def test_a_line_separator_inside_a_message_does_not_split_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # JSON allows U+2028 and U+0085 raw inside a string; only \n and \r end a line.
    text = "first\u2028second\x85third"
    path = tmp_path / "chat.jsonl"
    path.write_text("\ufeff" + json.dumps(  # a byte order mark, as some editors write
        {"id": "m1", "t": 0, "user": "alice", "text": text}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    assert main(["addressee", str(path)]) == 0
    captured = capsys.readouterr()
    assert _ids(captured.out, "addressee") == ["m1"] and captured.err == ""
