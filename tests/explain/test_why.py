"""`kuuki why` after a replay kept with --store: the message, decisions, reply, trace."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.domain import Action, ActionKind, Channel, Decision, DecisionTrace, Message, Stage, User
from kuuki.store import Store

LINES = [
    '{"setup": {"bot": "Kuu", "language": "en"}}',
    '{"id": "j1", "t": 0, "channel": "general", "user": "alice", "text": "hi all"}',
    '{"id": "j2", "t": 30, "channel": "general", "user": "carol", "text": "Kuu, any idea?"}',
]


@pytest.fixture(autouse=True)
def in_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine's local time is Japan's: `kuuki why` tells times in it, not in UTC."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def transcript(tmp_path: Path) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return p


def test_replay_says_its_store_is_temporary_and_why_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUUKI_STORE_URL", f"sqlite:///{tmp_path}/bot.sqlite3")
    assert main(["replay", str(transcript(tmp_path)), "--llm", "none"]) == 0
    assert "temporary store" in capsys.readouterr().err
    assert main(["why", "j2"]) == 2
    err = capsys.readouterr().err
    assert f"no store at {tmp_path}/bot.sqlite3 (KUUKI_STORE_URL from the environment)" in err
    assert "--store PATH" in err


def test_replay_kept_with_store_is_explained_by_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = tmp_path / "replay.db"
    assert main(["replay", str(transcript(tmp_path)), "--llm", "none", "--store", str(kept)]) == 0
    assert f"decisions stored in {kept}" in capsys.readouterr().err
    assert main(["why", "j2", "--store", str(kept)]) == 0
    out = capsys.readouterr().out
    # in local time (10:00:30 UTC is 19:00:30 in Tokyo), and how long ago
    assert out.startswith("message j2 in #general, carol at 2026-01-05 19:00:30 JST (")
    assert " ago):\n" in out.splitlines()[0] + "\n" and "T10:00" not in out
    assert "'Kuu, any idea?'" in out
    assert "decided as it arrived: Replied: called by name\n" in out
    assert "posted no text (generation off)" in out
    assert "+80  addressed:name" in out
    # what both models read in it is told too (their figures change with the weights); its
    # name decided, so the model's guess is shown as a guess, with no threshold
    who = next(line for line in out.splitlines() if line.startswith("  · who it is for: "))
    assert who.startswith("  · who it is for: the bot — called by name, which decides "
                          "(the addressee model alone: ")
    assert "Kuu (the bot)" in who and "counts as addressed" not in who
    assert "  · would a member in its seat speak: " in out
    assert "→ addressee → ping burst → local score → rate limit → addressed; addressed decided" in out
    assert main(["why", "j9", "--store", str(kept)]) == 2
    assert f"no decision stored for message j9 in {kept} (--store)" in capsys.readouterr().err


def test_why_shows_the_posted_text_and_every_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    channel = Channel("c1", "general")
    msg = Message("m1", "c1", User("u1", "alice"), "anyone know a good ramen place?", t0)

    def decision(kind: ActionKind, text: str | None, minute: int) -> Decision:
        at = t0.replace(minute=minute)
        trace = DecisionTrace("m1", "c1", at)
        trace.step(f"decided {kind.value}")
        return Decision("m1", "c1", Action(kind, "c1", text=text), Stage.LOCAL, 30.0,
                        f"{kind.value} reason", at, trace)

    async def fill() -> None:
        store = await Store.open(f"sqlite:///{tmp_path}/s.db")
        try:
            await store.roster.upsert_channel(channel)
            await store.messages.add_message(msg)
            await store.messages.save_decisions([
                decision(ActionKind.NONE, None, 0),
                decision(ActionKind.REPLY, "Menya Kuu, near the station!", 3),
            ])
        finally:
            await store.close()

    asyncio.run(fill())
    assert main(["why", "m1", "--store", str(tmp_path / "s.db")]) == 0
    out = capsys.readouterr().out
    assert "alice at 2026-01-05 19:00:00 JST" in out
    assert "'anyone know a good ramen place?'" in out
    first, second = out.split("\ndecided ")[1:]
    assert first.startswith("as it arrived: Stayed silent: none reason")
    assert "→ decided none" in first
    assert second.startswith("3 min after the message: Replied: reply reason")
    assert "posted: 'Menya Kuu, near the station!'" in second
    assert main(["why", "m1", "--json", "--store", str(tmp_path / "s.db")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["action"] for r in rows] == ["none", "reply"]


ADDRESSEE = {
    "to": "alice", "p": 0.83, "bot": 0.12,
    "candidates": {"alice": 0.83, "Kuu": 0.12, "room": 0.05},
    "top": [["name at the start", 2.1], ["answers alice's question", 0.9]],
    "threshold": 0.6,
}
SEAT = {"p": 0.62, "short": 0.3, "score": 62.0,
        "top": [["p(to the seat)", 1.8], ["turns since the seat spoke", -0.4]]}


def why_lines(tmp_path: Path, features: dict[str, object],
              capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`kuuki why m1`'s lines for one stored decision whose trace has these features."""
    t0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    trace = DecisionTrace("m1", "c1", t0)
    trace.features.update(features)
    decision = Decision("m1", "c1", Action(ActionKind.NONE, "c1"), Stage.LOCAL, 20.0,
                        "for someone else", t0, trace)

    async def fill() -> None:
        store = await Store.open(f"sqlite:///{tmp_path}/s.db")
        try:
            await store.roster.upsert_channel(Channel("c1", "general"))
            await store.messages.add_message(Message("m1", "c1", User("u2", "bob"), "alice, ready?", t0))
            await store.messages.save_decisions([decision])
        finally:
            await store.close()

    asyncio.run(fill())
    assert main(["why", "m1", "--store", str(tmp_path / "s.db")]) == 0
    return capsys.readouterr().out.splitlines()


def test_why_tells_who_the_message_is_for_and_whether_its_seat_would_speak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = why_lines(
        tmp_path, {"language": "en", "addressee": ADDRESSEE, "seat": SEAT}, capsys)
    start = lines.index("decided as it arrived: Stayed silent: for someone else")
    assert lines[start + 1:] == [
        "  · who it is for: alice 83 % · Kuu (the bot) 12 % · the room 5 %"
        " — not for the bot (it would count from 60 %)",
        "      to alice because: name at the start +2.1, answers alice's question +0.9",
        "  · would a member in its seat speak: 62 % (short remark 30 %)",
        "      because: p(to the seat) +1.8, turns since the seat spoke -0.4",
        "  · language: English (en)",
    ]


def test_why_says_which_content_features_moved_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    addressee = {**ADDRESSEE, "content": [["answers their question", 1.3],
                                          ["shares words with their recent lines", -0.6]]}
    seat = {**SEAT, "content": [["a question to the seat", 0.9]]}
    lines = why_lines(tmp_path, {"addressee": addressee, "seat": seat}, capsys)
    assert ("      what was said, for Kuu (the bot): answers their question +1.3, "
            "shares words with their recent lines -0.6") in lines
    assert "      what was said: a question to the seat +0.9" in lines


def test_an_old_trace_without_the_models_tells_nothing_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = why_lines(tmp_path, {"language": "en"}, capsys)
    assert lines[-1] == "  · language: English (en)"
    assert not [line for line in lines if "who it is for" in line or "seat" in line]


def test_the_bot_among_many_candidates_is_found_by_its_probability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A persona the settings do not name (そら) is the candidate whose p is `bot`; past
    five candidates the rest are counted; a room-bound message says so; a broken entry is
    shown under its key rather than dropped."""
    candidates = {"room": 0.4, "そら": 0.25, "dave": 0.15, "erin": 0.1, "fay": 0.05,
                  "gus": 0.03, "hal": 0.02}
    addressee = {"to": "room", "p": 0.4, "bot": 0.25, "candidates": candidates,
                 "top": [["greeting", 1.2]], "threshold": 0.5}
    lines = why_lines(tmp_path, {"addressee": addressee, "seat": ["not", "a", "mapping"]},
                      capsys)
    assert lines[-3:] == [
        "  · who it is for: the room 40 % · そら (the bot) 25 % · dave 15 % · erin 10 %"
        " · fay 5 % · 2 more — not for the bot (it would count from 50 %)",
        "      to the room because: greeting +1.2",
        "  · seat (unreadable): ['not', 'a', 'mapping']",
    ]
