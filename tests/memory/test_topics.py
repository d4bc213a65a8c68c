"""What the memory panel says of people means what it says: topics are nouns and names
(not "telling, probably, know" or "beside, please"), in English and Japanese, and "talked
to Kuu" counts the messages the engine judged addressed to the bot — once each."""

from __future__ import annotations

from pathlib import Path

from kuuki.memory.keywords import is_topic, topics

from .conftest import ALICE, BOB, Harness, make

ENGLISH = [
    "I was telling bob, you probably know the ramen place beside the station, please come",
    "finally got the python deploy pipeline green!",
    "anyone up for hiking on saturday? the weather looks great",
    "lol yeah, gonna check the kubernetes logs later",
    "my cats love the new glasses",
]
JAPANESE = [
    "くう、週末はどこに行くの？",
    "高尾山に登ろうと思ってるんだよね",
    "ちょっと疲れたけど、ラーメン食べたい",
    "そうそう、駅の近くの店がいいよ",
]


def test_english_topics_are_nouns_and_names() -> None:
    found = topics(ENGLISH, limit=20)
    for junk in ("telling", "probably", "know", "beside", "please", "finally", "yeah",
                 "gonna", "look", "later", "come", "got"):
        assert junk not in found, (junk, found)
    for noun in ("ramen", "station", "python", "pipeline", "saturday", "weather",
                 "kubernetes", "cat", "glass"):
        assert noun in found, (noun, found)
    assert [is_topic(w) for w in ("ramen", "docker", "telling", "beside")] == [
        True, True, False, False]


def test_japanese_topics_are_nouns() -> None:
    found = topics(JAPANESE)
    assert found == ["高尾山", "ラーメン", "駅", "店"], found
    for junk in ("ちょっと", "そう", "こと", "くう", "疲れ"):
        assert junk not in found, found


async def test_talked_to_the_bot_counts_what_was_judged_addressed(tmp_path: Path) -> None:
    h: Harness = await make(tmp_path)
    try:
        await h.say(ALICE, "I asked Kuu yesterday about the offsite and got a long answer")
        await h.say(BOB, "the kuu thing we discussed is done btw")
        await h.say(ALICE, "Kuu, what time is the offsite?")
        await h.say(ALICE, "@Kuu and where?", mentions=("Kuu",))
        addressed = [d.trace.features.get("addressed") for d in h.decisions]
        assert addressed == [None, None, "name", "mention"]
        await h.memory.profiles.flush(h.clock.now())
        people = {p.name: p for p in (await h.memory.snapshot("general")).people}
        assert people["Alice"].mentions_of_bot == 2  # not the message that named it in passing
        assert people["Bob"].mentions_of_bot == 0
        assert people["Alice"].messages == 3
        assert "offsite" in people["Alice"].topics
        assert not {"asked", "yesterday", "long"} & set(people["Alice"].topics)
    finally:
        await h.app.close()
