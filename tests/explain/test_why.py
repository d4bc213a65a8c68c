"""`kuuki why` after a replay kept with --store: the message, decisions, reply, trace."""

from __future__ import annotations

import asyncio
import json
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
    assert out.startswith("message j2 in #general, carol at 2026-01-05 10:00:30 UTC:\n")
    assert "'Kuu, any idea?'" in out
    assert "reply (stage addressed, score 100.0) — addressed by name" in out
    assert "posted no text (generation off)" in out
    assert "+80  addressed:name" in out
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
            await store.upsert_channel(channel)
            await store.add_message(msg)
            await store.save_decisions([
                decision(ActionKind.NONE, None, 0),
                decision(ActionKind.REPLY, "Menya Kuu, near the station!", 3),
            ])
        finally:
            await store.close()

    asyncio.run(fill())
    assert main(["why", "m1", "--store", str(tmp_path / "s.db")]) == 0
    out = capsys.readouterr().out
    assert "alice at 2026-01-05 10:00:00 UTC" in out and "'anyone know a good ramen place?'" in out
    first, second = out.split("decision at ")[1:]
    assert first.startswith("10:00:00: none (stage local, score 30.0) — none reason")
    assert "→ decided none" in first
    assert second.startswith("10:03:00: reply")
    assert "posted: 'Menya Kuu, near the station!'" in second
    assert main(["why", "m1", "--json", "--store", str(tmp_path / "s.db")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["action"] for r in rows] == ["none", "reply"]
