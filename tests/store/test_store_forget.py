"""Forgetting a person erases every trace of their words, and the tombstone keeps every
write path from bringing any of it back (issue 11), on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from storekit import ANN, BOB, BOT, GENERAL, T0, decision, msg

from kuuki.domain import Channel, ChatEvent, EventKind, Visibility
from kuuki.store import Store
from kuuki.store.schema import Base

SECRET_WORDS = ("zanzibar", "quokka")  # only Ann ever says these
DM = Channel("c-dm", "ann", Visibility.DM, "acme", "slack")


async def every_value(store: Store) -> list[tuple[str, str, str]]:
    """(table, column, value as text) for every cell of every table of the schema."""
    out: list[tuple[str, str, str]] = []
    async with store.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in (await conn.execute(select(table))).mappings():
                out += [(table.name, str(k), repr(v)) for k, v in row.items()]
    return out


async def traces_of(store: Store, *needles: str) -> list[tuple[str, str, str]]:
    return [
        cell for cell in await every_value(store)
        if any(n.lower() in cell[2].lower() for n in needles)
    ]


async def seed(store: Store) -> None:
    await store.roster.upsert_channel(GENERAL)
    await store.roster.upsert_channel(DM)
    ann_q = msg("m1", "Kuu, have you been to zanzibar?", user=ANN, mentions=("u-bot",))
    await store.messages.add_messages([
        (ann_q, "conv-1"),
        (msg("m2", "I have not, sounds nice", user=BOB, minutes=1), "conv-1"),
        (msg("m3", "Zanzibar was lovely, a quokka?", user=BOT, minutes=2, reply_to="m1"), None),
        (msg("m4", "my quokka plushie says hi", user=ANN, channel=DM.id, minutes=3), None),
        (msg("m5", "anyone up for lunch?", user=BOB, minutes=4), None),
    ])
    about_bob = decision(msg("m5", "anyone up for lunch?", user=BOB, minutes=4))
    about_bob.trace.add("talking to someone else", -15, "Ann")
    about_bob.trace.step("asked of Ann, not of Annabel")
    await store.messages.save_decisions([decision(ann_q), about_bob])
    await store.messages.add_reaction("m5", ANN.id, "👍", T0)
    await store.messages.add_reaction("m1", BOB.id, "🌴", T0)
    # An event of hers still in the inbox (taken in, not yet handled) keeps its text there.
    pending = msg("m6", "one more zanzibar story", user=ANN, minutes=5)
    await store.inbox.admit_events([ChatEvent(EventKind.POSTED, GENERAL, "m6", pending.ts,
                                        message=pending, user=ANN)])
    await store.memories.set_memory("user", ANN.id, "profile", {"displayName": "Ann"},
                           source_user_ids=[ANN.id])
    await store.memories.set_memory("user", BOB.id, "profile", {"displayName": "Bob",
                           "lastConversationSummary": {
                               GENERAL.id: {"text": "Told Ann zanzibar is far."},
                               "c-other": {"text": "Planned the Friday release."}}},
                           source_user_ids=[BOB.id])
    # The channel summary names only Bob as a source (an older store's partial list), yet
    # it was written from a channel Ann spoke in.
    await store.memories.set_memory("channel", GENERAL.id, "long_term", "Ann dreams of zanzibar.",
                           visibility=Visibility.PUBLIC, workspace="acme",
                           source_channel_id=GENERAL.id, source_user_ids=[BOB.id])
    await store.memories.set_memory("workspace", "acme", "long_term", "A zanzibar fan is around.",
                           visibility=Visibility.PUBLIC, workspace="acme",
                           source_user_ids=[BOB.id])
    await store.memories.set_memory("channel", "c-other", "long_term", "Bob's team ships on Fridays.",
                           source_channel_id="c-other", source_user_ids=[BOB.id])
    await store.facts.add_fact("Ann wants to visit zanzibar", source_channel_id=GENERAL.id,
                         source_user_ids=[ANN.id], embedding=[0.1] * 8)
    await store.facts.add_fact("Ann and Bob both like quokka videos", source_channel_id=GENERAL.id,
                         source_user_ids=[ANN.id, BOB.id])
    await store.facts.add_fact("Bob likes lunch at noon", source_channel_id=GENERAL.id,
                         source_user_ids=[BOB.id])


async def test_forgetting_leaves_no_word_of_theirs_anywhere(store: Store) -> None:
    await seed(store)
    assert await traces_of(store, *SECRET_WORDS)  # the check can see them before
    gone = await store.forgetting.forget_user(ANN.id, at=T0 + timedelta(hours=1))
    assert (gone.messages, gone.bot_answers, gone.decisions, gone.facts) == (2, 1, 1, 2)
    assert await traces_of(store, *SECRET_WORDS) == []
    # Her id survives only as the tombstone; her name nowhere.
    assert {(t, c) for t, c, _ in await traces_of(store, ANN.id)} == {
        ("forgotten_users", "user_id")
    }
    assert await store.forgetting.forgotten_users() == {ANN.id: T0 + timedelta(hours=1)}
    # Everyone else's is kept: Bob's messages, his reaction on a gone message is gone with it.
    left = await store.messages.recent_messages(GENERAL.id, limit=10)
    assert [m.id for m in left] == ["m2", "m5"]
    assert await store.messages.reactions("m5") == [] and await store.messages.reactions("m1") == []
    [about_bob] = await store.browse.decisions_for("m5")
    assert about_bob["trace"]["steps"][-1] == "asked of (someone forgotten), not of Annabel"
    assert about_bob["trace"]["contributions"][-1]["detail"] == "(someone forgotten)"
    # Her name as a word is nowhere (the DM channel was named after her too).
    word = re.compile(r"(?<!\w)Ann(?!\w)", re.I)
    assert [c for c in await every_value(store)
            if word.search(c[2]) and c[0] != "forgotten_users"] == []
    assert [f.content for f in await store.facts.facts()] == ["Bob likes lunch at noon"]
    bob = await store.memories.get_memory("user", BOB.id, "profile")
    assert bob is not None and bob.content == {"displayName": "Bob", "lastConversationSummary": {
        "c-other": {"text": "Planned the Friday release."}}}
    assert await store.memories.get_memory("channel", "c-other", "long_term") is not None
    assert await store.inbox.pending_events() == []


async def test_the_tombstone_refuses_every_write_of_theirs(store: Store) -> None:
    await store.roster.upsert_channel(GENERAL)
    await store.forgetting.forget_user(ANN.id)
    # Every path a running bot writes through, with what it still had in memory.
    await store.messages.add_message(msg("n1", "zanzibar again", user=ANN))
    await store.writer.add_message(msg("n2", "quokka facts", user=ANN, minutes=1))
    answer = msg("n3", "Zanzibar! a quokka?", user=BOT, minutes=2, reply_to="n2")
    await store.writer.add_message(answer)
    await store.writer.add_message(msg("n4", "lunch?", user=BOB, minutes=3))
    await store.writer.add_decision(decision(msg("n2", "quokka facts", user=ANN, minutes=1)))
    await store.writer.flush()
    await store.memories.set_memory("user", ANN.id, "profile", {"topics": ["zanzibar"]},
                           source_user_ids=[ANN.id])
    await store.memories.set_memory("channel", GENERAL.id, "long_term", "zanzibar talk",
                           source_user_ids=[BOB.id, ANN.id])
    assert await store.facts.add_fact("Ann loves quokka", source_channel_id=GENERAL.id,
                                source_user_ids=[ANN.id]) == 0
    await store.messages.add_reaction("n4", ANN.id, "🏝", T0)
    await store.roster.upsert_user(ANN, T0)
    assert await traces_of(store, *SECRET_WORDS, ANN.id) == [
        ("forgotten_users", "user_id", repr(ANN.id))
    ]
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id)] == ["n4"]

    # Lifted: from now on she is remembered again (what was erased stays erased).
    assert await store.forgetting.unforget_user(ANN.id) is True
    assert await store.forgetting.unforget_user(ANN.id) is False
    await store.messages.add_message(msg("n5", "back again", user=ANN, minutes=4))
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id)] == ["n4", "n5"]


def _cells(rows: list[tuple[str, str, str]]) -> set[tuple[str, str]]:
    return {(t, c) for t, c, _ in rows}


async def test_a_store_without_anything_of_theirs_forgets_nothing(store: Store) -> None:
    await store.roster.upsert_channel(GENERAL)
    await store.messages.add_message(msg("b1", "hello", user=BOB))
    before: Any = _cells(await every_value(store))
    gone = await store.forgetting.forget_user("u-nobody")
    assert gone.total == 0
    assert _cells(await every_value(store)) - before == {
        ("forgotten_users", "user_id"), ("forgotten_users", "forgotten_at")
    }
    assert [m.text for m in await store.messages.recent_messages(GENERAL.id)] == ["hello"]
