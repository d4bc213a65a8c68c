"""Ids and names typed on the command line: an empty or blank one is refused as a
bad argument, named, before any store is opened; a very long one is echoed back cut to its
first 80 characters and "…"."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kuuki.cli import main

LINES = [
    '{"id": "j1", "t": 0, "channel": "general", "user": "alice", "text": "hi all"}',
    '{"id": "j2", "t": 30, "channel": "general", "user": "carol", "text": "Kuu, any idea?"}',
]
LONG = "x" * 100_000
SHOWN = "x" * 80 + "…"


@pytest.fixture
def kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store that holds decisions (a replay kept with --store)."""
    chat = tmp_path / "t.jsonl"
    chat.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    store = tmp_path / "replay.db"
    assert main(["replay", str(chat), "--llm", "none", "--store", str(store)]) == 0
    capsys.readouterr()
    return store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("argv", "argument", "give"),
    [
        (["why", ""], "MESSAGE_ID",
         "a message's id, or leave MESSAGE_ID out for the latest decision"),
        (["why", "   "], "MESSAGE_ID",
         "a message's id, or leave MESSAGE_ID out for the latest decision"),
        (["why", "--channel", ""], "--channel", "a channel's id"),
        (["stats", "--channel", " "], "--channel", "a channel's name or id"),
        (["memory", "show", "--user", ""], "--user", "a user's id"),
        (["memory", "show", "--channel", ""], "--channel", "a channel's name or id"),
        (["memory", "forget", "--user", ""], "--user", "a user's id"),
        (["memory", "forget", "--user", "\t"], "--user", "a user's id"),
        (["memory", "unforget", "--user", ""], "--user", "a user's id"),
    ],
)
def test_an_empty_id_is_a_bad_argument_named_and_the_store_is_untouched(
    kept: Path, capsys: pytest.CaptureFixture[str], argv: list[str], argument: str, give: str
) -> None:
    before = _digest(kept)
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--store", str(kept)])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1].endswith(
        f": error: argument {argument}: empty; give {give}"
    )
    assert "no decision stored" not in captured.err and captured.out == ""
    assert _digest(kept) == before  # memory forget --user '' wrote a tombstone for nobody


@pytest.mark.parametrize("command", ["why", "stats", "memory"])
def test_an_empty_store_argument_is_refused_not_read_as_the_configured_store(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = [command, "list"] if command == "memory" else [command]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--store", ""])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "error: argument --store: empty; give a SQLite file or a database URL"
    )


def test_why_with_decisions_stored_answers_for_a_real_id(
    kept: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the positive case beside the refusals: the store does hold decisions
    assert main(["why", "j2", "--store", str(kept)]) == 0
    assert capsys.readouterr().out.startswith("message j2 in #general")


@pytest.mark.parametrize(
    ("argv", "stream", "said"),
    [
        (["why", LONG], "err", f"kuuki: no decision stored for message {SHOWN} in "),
        (["why", "--channel", LONG], "err",
         f"kuuki: no decision stored for channel '{SHOWN}' in "),
        (["stats", "--channel", LONG], "err", f"kuuki: --channel '{SHOWN}': no channel "),
        (["memory", "show", "--user", LONG], "out", f"Nothing is remembered about {SHOWN}. "),
        (["memory", "show", "--channel", LONG], "err", f"kuuki: no channel '{SHOWN}' in memory"),
        (["memory", "forget", "--user", LONG], "out", f"Forgot {SHOWN}: erased 0 messages"),
        (["memory", "unforget", "--user", LONG], "out", f"{SHOWN} was not forgotten"),
    ],
    ids=["why", "why-channel", "stats-channel", "memory-show-user", "memory-show-channel",
         "memory-forget", "memory-unforget"],
)
def test_a_long_id_is_echoed_cut_to_80_characters(
    kept: Path, capsys: pytest.CaptureFixture[str], argv: list[str], stream: str, said: str
) -> None:
    main([*argv, "--store", str(kept)])
    captured = capsys.readouterr()
    text = captured.out if stream == "out" else captured.err
    assert text.startswith(said)
    assert len(captured.out) + len(captured.err) < 1_000  # was 100,000 characters and more
    if argv[:2] == ["memory", "forget"]:  # the command to undo it is not a cut id
        assert "to lift this: kuuki memory unforget --user ID\n" in captured.out

