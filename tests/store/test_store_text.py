"""Hostile text survives the store on every backend (cleaned only where it must be)."""

from __future__ import annotations

import math

import pytest
from storekit import GENERAL, msg

from kuuki.domain import Channel, User, Visibility
from kuuki.store import Store
from kuuki.store.types import clean_json, clean_text

KEPT = {
    "long": "a" * 99_990 + "é末😀" * 2 + "z",
    "control": "bell\x07 esc\x1b[31mred\x1b[0m del\x7f tab\t cr\r lf\n vt\x0b ff\x0c \x01\x1f",
    "zero_width": "a\u200bb\u200cc\u200dd\ufeffe\u2060f",
    "bidi": "abc \u202edcba\u202c \u2066iso\u2069",
    "emoji_zwj": "👩\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈",
    "empty": "",
}
CLEANED = {
    "nul": ("a\x00b\x00", "a\ufffdb\ufffd"),
    "lone_high": ("x\ud800y", "x\ufffdy"),
    "lone_low": ("x\udfffy", "x\ufffdy"),
    "reversed_pair": ("\udc00\ud800", "\ufffd\ufffd"),
    "split_pair": ("smile \ud83d\ude00", "smile 😀"),
    "mixed": ("\x00\ud800" + "b" * 100_000, "\ufffd\ufffd" + "b" * 100_000),
}


def test_clean_text_rules() -> None:
    for value in KEPT.values():
        assert clean_text(value) is value
    for raw, clean in CLEANED.values():
        assert clean_text(raw) == clean
        clean_text(raw).encode("utf-8")  # always encodable


def test_clean_json_rules() -> None:
    value = {"k\x00": ["\ud800", 1.5, math.nan, math.inf, (1, 2)], 3: {"ok": True}}
    assert clean_json(value) == {"k\ufffd": ["\ufffd", 1.5, None, None, [1, 2]], "3": {"ok": True}}
    fine = {"a": [1, "b"], "c": None}
    assert clean_json(fine) is fine


@pytest.mark.parametrize("name", sorted(KEPT))
async def test_text_kept_verbatim(store: Store, name: str) -> None:
    m = msg(f"m-{name}", KEPT[name])
    assert await store.messages.add_message(m)
    assert await store.messages.get_message(m.id) == m
    assert await store.messages.edit_message(m.id, KEPT[name] + "!")
    got = await store.messages.get_message(m.id)
    assert got is not None and got.text == KEPT[name] + "!"


@pytest.mark.parametrize("name", sorted(CLEANED))
async def test_text_cleaned_at_the_boundary(store: Store, name: str) -> None:
    raw, clean = CLEANED[name]
    await store.messages.add_message(msg("m1", raw, mentions=(raw,)))
    got = await store.messages.get_message("m1")
    assert got is not None and got.text == clean and got.mentions == (clean,)
    await store.writer.add_message(msg("m2", raw, minutes=1))
    pending = await store.messages.get_message("m2")
    await store.writer.flush()
    assert pending == await store.messages.get_message("m2")  # pending and stored views agree
    assert await store.messages.edit_message("m1", raw + raw)
    edited = await store.messages.get_message("m1")
    # Cleaned as a whole: halves of a pair that meet across the seam join up.
    assert edited is not None and edited.text == clean_text(raw + raw)


async def test_hostile_ids_names_and_json(store: Store) -> None:
    user = User("u\ud800", "N\x00me \u200b")
    channel = Channel("c\x00", "ch\udfff", Visibility.PRIVATE, "w\x00", "p")
    await store.roster.upsert_channel(channel)
    await store.messages.add_message(msg("m\ud800", "hi", user=user, channel=channel.id))
    # Lookups clean their arguments the same way, so the raw id still finds the row.
    got = await store.messages.get_message("m\ud800")
    assert got is not None
    assert got.id == "m\ufffd" and got.channel_id == "c\ufffd"
    assert got.user == User("u\ufffd", "N\ufffdme \u200b")
    assert await store.roster.get_channel("c\x00") == Channel(
        "c\ufffd", "ch\ufffd", Visibility.PRIVATE, "w\ufffd", "p"
    )
    doc = {"note\x00": "a\ud800", "n": [math.nan, 1], "deep": {"x": ["\x00"]}}
    await store.memories.set_memory("channel", GENERAL.id, "summary", doc)
    mem = await store.memories.get_memory("channel", GENERAL.id, "summary")
    assert mem is not None
    assert mem.content == {"note\ufffd": "a\ufffd", "n": [None, 1], "deep": {"x": ["\ufffd"]}}
