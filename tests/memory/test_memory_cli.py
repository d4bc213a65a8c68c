"""`kuuki memory list|show` through the real command, on a store filled as the bot would."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuuki.cli import main
from kuuki.domain import Channel, Visibility
from kuuki.memory.channel_context import ChannelContext
from kuuki.memory.profiles import UserProfile
from kuuki.store import Store

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def fill(path: Path) -> None:
    async def go() -> None:
        store = await Store.open(f"sqlite:///{path}")
        try:
            await store.roster.upsert_channel(Channel("c1", "general"))
            await store.roster.upsert_channel(Channel("c2", "hr", Visibility.PRIVATE))
            ctx = ChannelContext("c1", summary="Planning the spring hackathon.", mood="upbeat",
                                 topic_keywords=["hackathon", "venue"], active_users=["Aiko"],
                                 active_user_ids=["u1"], last_updated=T0)
            await store.memories.set_memory("channel", "c1", "context", ctx.to_json(),
                                   visibility=Visibility.PUBLIC, source_channel_id="c1")
            aiko = UserProfile("u1", "Aiko", interaction_count=42, mentioned_bot_count=1,
                               channels_active=["c1", "c2"], last_interaction=T0,
                               last_topics={"c1": {"keywords": ["hackathon"], "at": T0.isoformat()}})
            ken = UserProfile("u2", "Ken", interaction_count=2, channels_active=["c2"],
                              last_interaction=T0)
            for p in (aiko, ken):
                await store.memories.set_memory("user", p.user_id, "profile", p.to_json())
            await store.facts.add_fact("Aiko books the venue.", source_channel_id="c1",
                                 source_user_ids=["u1"], confidence=0.8, at=T0)
        finally:
            await store.close()

    asyncio.run(go())


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "bot.db"
    fill(path)
    return path


def test_list_shows_per_channel_who_and_what_is_remembered(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "list", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "#general (public): a summary, 1 fact; 1 person: Aiko (regular, 42 messages)"
    )
    assert out[1] == (
        "#hr (private): no summary, 0 facts; 2 people: Aiko (regular, 42 messages), "
        "Ken (stranger, 2 messages)"
    )
    assert "2 people known:" in out
    assert "  Aiko (regular, 42 messages) [id u1], 1 fact, last seen 2026-01-05 10:00" in out


def test_show_channel_is_written_for_the_operator(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "show", "--channel", "#general", "--store", str(store_path)]) == 0
    assert capsys.readouterr().out == (
        "#general (public)\n"
        "  summary (updated 2026-01-05 10:00): Planning the spring hackathon.\n"
        "  mood: upbeat\n"
        "  topics: hackathon, venue\n"
        "  recently active: Aiko\n"
        "  1 person known here:\n"
        "    - Aiko (regular, 42 messages)\n"
        "  1 fact:\n"
        "    - Aiko books the venue.\n"
    )


def test_show_user_uses_right_plurals_and_no_chat_commands(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "show", "--user", "u1", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "Aiko (id u1): regular — 42 messages seen, addressed the bot 1 time, "
        "last seen 2026-01-05 10:00\n  active in #general, #hr\n"
        "  topics in #general: hackathon\n"
        "  1 fact:\n    - Aiko books the venue.  (#general, confidence 0.80)\n"
    )
    assert "/kuuki" not in out and "times" not in out


def test_show_needs_a_user_or_a_channel_and_names_an_unknown_channel(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "show", "--store", str(store_path)]) == 2
    assert "needs --user ID or --channel NAME" in capsys.readouterr().err
    assert main(["memory", "show", "--channel", "genral", "--store", str(store_path)]) == 2
    assert "no channel 'genral' in memory (channels: #general, #hr)" in capsys.readouterr().err
