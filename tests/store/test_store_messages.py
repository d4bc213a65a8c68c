"""Round trips of channels, users and messages; duplicates, edits, deletes, reactions."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from storekit import ANN, BOB, BOT, GENERAL, T0, msg

from kuuki.domain import Channel, Message, User, Visibility
from kuuki.store import Store


async def test_channel_round_trip_and_update(store: Store) -> None:
    dm = Channel("c-dm", "ann-dm", Visibility.DM, "acme", "discord")
    await store.roster.upsert_channel(GENERAL)
    await store.roster.upsert_channel(dm)
    assert await store.roster.get_channel(GENERAL.id) == GENERAL
    assert await store.roster.channels() == [dm, GENERAL]  # ordered by id
    renamed = Channel(GENERAL.id, "general-2", Visibility.PRIVATE, "acme", "slack")
    await store.roster.upsert_channel(renamed)
    assert await store.roster.get_channel(GENERAL.id) == renamed
    assert await store.roster.get_channel("nope") is None


async def test_user_round_trip_and_seen_range(store: Store) -> None:
    await store.roster.upsert_user(BOT, T0)
    await store.roster.upsert_user(ANN, T0 + timedelta(hours=1))
    await store.roster.upsert_user(User(ANN.id, "Ann (old name)"), T0)  # older sighting
    assert await store.roster.get_user(BOT.id) == BOT
    assert await store.roster.get_user(ANN.id) == ANN  # the older sighting did not rename her
    assert await store.roster.user_seen(ANN.id) == (T0, T0 + timedelta(hours=1))
    assert await store.roster.get_user("ghost") is None


async def test_message_round_trip_every_field(store: Store) -> None:
    await store.roster.upsert_channel(GENERAL)
    m = msg(
        "m1",
        "hi <@u-bob>",
        reply_to="m0",
        thread="t1",
        mentions=("u-bob", "u-bot"),
        edited=True,
    )
    assert await store.messages.add_message(m, conversation_id="conv-1") is True
    assert await store.messages.get_message("m1") == m
    bot_msg = msg("m2", "beep", user=BOT, minutes=1)
    assert await store.messages.add_message(bot_msg)
    assert await store.messages.get_message("m2") == bot_msg
    assert await store.messages.get_message("missing") is None


async def test_unknown_channel_gets_restrictive_placeholder(store: Store) -> None:
    await store.messages.add_message(msg("m1", channel="c-new"))
    placeholder = await store.roster.get_channel("c-new")
    assert placeholder is not None and placeholder.visibility is Visibility.DM
    real = Channel("c-new", "new", Visibility.PUBLIC, "acme", "slack")
    await store.roster.upsert_channel(real)
    assert await store.roster.get_channel("c-new") == real


async def test_duplicates_are_ignored(store: Store) -> None:
    m = msg("m1", "first")
    assert await store.messages.add_message(m)
    assert not await store.messages.add_message(msg("m1", "second version"))
    assert (await store.messages.get_message("m1")) == m
    batch: list[tuple[Message, str | None]] = [
        (msg("m1"), None),
        (msg("m2", minutes=1), None),
        (msg("m2", minutes=1), None),
    ]
    batch += [(msg(f"b{i}", minutes=2 + i, user=BOB), "conv") for i in range(5)]
    assert await store.messages.add_messages(batch) == 6
    assert await store.messages.add_messages(batch) == 0
    assert await store.messages.add_messages([]) == 0
    assert len(await store.messages.recent_messages(GENERAL.id)) == 7


async def test_edit_and_delete(store: Store) -> None:
    await store.messages.add_message(msg("m1", "typo"))
    assert await store.messages.edit_message("m1", "fixed")
    got = await store.messages.get_message("m1")
    assert got is not None and got.text == "fixed" and got.edited
    assert not await store.messages.edit_message("nope", "x")
    assert await store.messages.delete_message("m1")
    gone = await store.messages.get_message("m1")
    assert gone is not None and gone.deleted and gone.text == ""
    assert not await store.messages.edit_message("m1", "resurrect")  # deleted stays deleted
    assert not await store.messages.delete_message("nope")
    assert await store.messages.recent_messages(GENERAL.id) == []


async def test_recent_messages_order_limit_since(store: Store) -> None:
    ms = [msg(f"m{i}", f"text {i}", minutes=i) for i in range(10)]
    for m in reversed(ms):  # arrival order must not matter
        await store.messages.add_message(m)
    await store.messages.add_message(msg("other", channel="c-other"))
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id)] == [m.id for m in ms]
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id, limit=3)] == ["m7", "m8", "m9"]
    since = T0 + timedelta(minutes=8)
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id, since=since)] == ["m8", "m9"]
    assert await store.messages.recent_messages(GENERAL.id, limit=0) == []


async def test_last_message_can_pass_over_the_bots_own(store: Store) -> None:
    # where catching up starts reading: the bot's messages are recorded when sent, not
    # taken in, so they may lie past messages the store refused (kuuki.platforms.retry)
    for m in (msg("m1", minutes=1), msg("b1", user=BOT, minutes=2), msg("b2", user=BOT, minutes=3)):
        await store.messages.add_message(m)
    last = await store.history.last_message(GENERAL.id)
    assert last is not None and last.id == "b2"
    taken = await store.history.last_message(GENERAL.id, not_by={BOT.id, "kuuki"})
    assert taken is not None and taken.id == "m1"
    assert await store.history.last_message(GENERAL.id, not_by={BOT.id, ANN.id}) is None


async def test_datetimes_come_back_utc_aware(store: Store) -> None:
    tokyo = timezone(timedelta(hours=9))
    local = datetime(2024, 5, 1, 21, 0, tzinfo=tokyo)
    naive = datetime(2024, 5, 1, 13, 0)  # taken as UTC
    await store.messages.add_message(replace(msg("m1"), ts=local))
    await store.messages.add_message(replace(msg("m2"), ts=naive))
    got1, got2 = await store.messages.get_message("m1"), await store.messages.get_message("m2")
    assert got1 is not None and got2 is not None
    assert got1.ts == local and got1.ts.tzinfo == UTC
    assert got2.ts == naive.replace(tzinfo=UTC) and got2.ts.tzinfo == UTC
    assert [m.id for m in await store.messages.recent_messages(GENERAL.id)] == ["m1", "m2"]


async def test_reactions(store: Store) -> None:
    await store.messages.add_message(msg("m1"))
    await store.messages.add_reaction("m1", BOB.id, "👍", T0)
    await store.messages.add_reaction("m1", BOB.id, "👍", T0 + timedelta(seconds=5))  # duplicate
    await store.messages.add_reaction("m1", ANN.id, "👍", T0 + timedelta(seconds=1))
    await store.messages.add_reaction("m1", BOB.id, "🎉", T0 + timedelta(seconds=2))
    await store.messages.add_reaction("unknown-msg", BOB.id, "👀", T0)  # history we never saw
    assert await store.messages.reactions("m1") == [
        (BOB.id, "👍", T0),
        (ANN.id, "👍", T0 + timedelta(seconds=1)),
        (BOB.id, "🎉", T0 + timedelta(seconds=2)),
    ]
    assert await store.messages.reactions("unknown-msg") == [(BOB.id, "👀", T0)]


async def test_reflection_is_recorded_once(store: Store) -> None:
    for i in range(5):
        await store.messages.add_message(msg(f"m{i}", minutes=i))
    await store.messages.delete_message("m4")
    todo = await store.messages.unreflected_messages(GENERAL.id, limit=3)
    assert [m.id for m in todo] == ["m0", "m1", "m2"]
    await store.messages.mark_reflected([m.id for m in todo])
    assert [m.id for m in await store.messages.unreflected_messages(GENERAL.id, 10)] == ["m3"]
    await store.messages.mark_reflected([])


async def test_restart_keeps_everything(store_url: str) -> None:
    s = await Store.open(store_url)
    await s.roster.upsert_channel(GENERAL)
    await s.messages.add_message(msg("m1", mentions=("u-bob",)))
    await s.writer.add_message(msg("m2", minutes=1))  # pending at close: flushed by close
    assert await s.inbox.mark_event("ev-1", T0)
    await s.memories.set_memory("channel", GENERAL.id, "summary", {"text": "all quiet"})
    await s.close()
    await s.close()  # idempotent

    s2 = await Store.open(store_url)
    try:
        assert await s2.roster.get_channel(GENERAL.id) == GENERAL
        assert [m.id for m in await s2.messages.recent_messages(GENERAL.id)] == ["m1", "m2"]
        assert not await s2.inbox.mark_event("ev-1", T0)
        assert not await s2.writer.mark_event("ev-1", T0)
        mem = await s2.memories.get_memory("channel", GENERAL.id, "summary")
        assert mem is not None and mem.content == {"text": "all quiet"}
    finally:
        await s2.close()
