"""`kuuki memory forget` against a live bot (issue 11): the operator forgets a person from
another process while the bot runs on the same store; the bot's next flushes bring nothing
back, and afterwards no word of theirs is anywhere in the store. SQLite, and PostgreSQL when
KUUKI_TEST_POSTGRES_URL is set (`store_url`, tests/conftest.py)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from sqlalchemy import select

from kuuki.domain import Channel, Visibility
from kuuki.memory.cli import run_memory_forget
from kuuki.settings import Settings
from kuuki.store import Store
from kuuki.store.schema import Base

from .conftest import ALICE, BOB, GENERAL, fact, make, reflection_answer, settings, summary_answer

SECRET = ("zanzibar", "quokka")  # only Alice says these; the scripted model repeats them
DM = Channel("dm-1", "dm:Alice", Visibility.DM)
async def cells_with(url: str, *needles: str) -> list[tuple[str, str, str]]:
    """(table, column, value) of every cell, in every table, that contains a needle."""
    found: list[tuple[str, str, str]] = []
    store = await Store.open(url)
    try:
        async with store.engine.connect() as conn:
            for table in Base.metadata.sorted_tables:
                for row in (await conn.execute(select(table))).mappings():
                    for k, v in row.items():
                        if any(n.lower() in repr(v).lower() for n in needles):
                            found.append((table.name, str(k), repr(v)))
    finally:
        await store.close()
    return found


def _s() -> Settings:
    return settings(
        PROACTIVE_CONVERSATION_ENABLED=False, REFLECTION_MIN_MESSAGES=2,
        SUMMARIZE_EVERY_N_MESSAGES=3,
    )


async def test_forget_from_another_process_holds_against_the_running_bot(
    tmp_path: Path, store_url: str
) -> None:
    url = store_url
    s = _s()
    h = await make(tmp_path, s=s, store_url=url)
    try:
        h.llm.enqueue(
            summary_answer("Alice dreams of zanzibar and a quokka.",
                           history="Alice keeps talking about zanzibar.",
                           recent_events="A quokka came up."),
            summary_answer("Alice has a quokka plushie.", history="quokka in the DM",
                           recent_events="zanzibar plans"),
            purpose="memory_summary",
        )
        h.llm.enqueue(
            {"history": "A zanzibar fan is in general.", "recent_events": "quokka"},
            purpose="memory_workspace",
        )
        h.llm.enqueue(
            reflection_answer(
                fact("Alice wants to see a quokka in zanzibar.", ["Alice"], ["quokka", "zanzibar"]),
                fact("Alice and Bob plan a trip to zanzibar.", ["Alice", "Bob"], ["trip"]),
                fact("Bob eats lunch at noon.", ["Bob"], ["lunch"]),
                people=[{"name": "Bob", "tags": ["planner"],
                         "summary": "Planned the zanzibar trip with Alice."}]),
            purpose="memory_reflection",
        )
        h.llm.enqueue("Not yet, sounds fun!", purpose="reply")
        await h.say(ALICE, "I dream of zanzibar every night")
        await h.say(BOB, "lunch at noon, anyone?")
        await h.say(ALICE, "Kuu, have you ever seen a quokka?")
        await h.say(ALICE, "my quokka plushie says hi", channel=DM)
        await h.say(ALICE, "zanzibar trip next year", channel=DM)
        await h.say(ALICE, "quokka quokka", channel=DM)
        await h.advance(16 * 60)  # reflection (lull), workspace summary, profiles flushed
        assert await h.app.store.memories.get_memory("user", "alice", "profile") is not None
        assert len(await cells_with(url, *SECRET)) >= 10  # the check sees what is there

        # More of hers the bot holds only in memory: a dirty profile, a summary queue.
        await h.say(ALICE, "zanzibar zanzibar")
        await h.app.writer.flush()  # (stored: so the count below does not hang on a timer)

        # The operator, in another process (its own Store on the same database).
        out = io.StringIO()
        assert await run_memory_forget(replace(s, store_url=url), "alice", out) == 0
        assert out.getvalue().startswith("Forgot alice: erased 6 messages, 1 answer of the bot's")
        assert await cells_with(url, *SECRET) == []

        # The bot runs on and has not read the tombstone yet (it does every minute while
        # messages come in): she speaks, and a summary is written from her words too. The
        # store refuses it, as it refuses her message.
        h.llm.enqueue(
            summary_answer("A quokka story from zanzibar.",
                           history="Alice and zanzibar again.",
                           recent_events="quokka"),
            purpose="memory_summary",
        )
        await h.say(ALICE, "one more quokka story from zanzibar")
        await h.say(BOB, "ramen for lunch today")
        await h.say(BOB, "who is in for ramen?")
        assert await h.app.store.memories.get_memory("channel", GENERAL.id, "long_term") is None
        # A minute on, the next message makes it read the tombstone and purge its memory;
        # summaries, reflection and the maintenance flush then bring nothing of hers back.
        await h.advance(61)
        lunch = summary_answer("Bob organises lunch.", history="Lunch plans.",
                               recent_events="Lunch at noon.")
        h.llm.enqueue(lunch, lunch, purpose="memory_summary")  # one may be discarded by the purge
        h.llm.enqueue(
            reflection_answer(
                fact("Bob likes ramen for lunch.", ["Bob"], ["ramen"])),
            purpose="memory_reflection",
        )
        await h.say(BOB, "meet at noon")
        await h.say(ALICE, "zanzibar, zanzibar!")
        await h.say(BOB, "the usual place")
        await h.say(BOB, "see you there")
        await h.advance(16 * 60)
        assert h.memory.profiles.get("alice") is None
        # What she said before is gone from the channel buffers; she is still heard in the
        # moment (the bot may answer her), but nothing of it is kept.
        assert [m.text for st in h.app.engine.channels.values() for m in st.buffer
                if m.user.id == "alice"] == ["zanzibar, zanzibar!"]
    finally:
        await h.app.close()

    assert await cells_with(url, *SECRET) == []
    assert {(t, c) for t, c, _ in await cells_with(url, "alice")} == {
        ("forgotten_users", "user_id")
    }
    # Bob's own memory is kept and went on: his messages, facts and a new summary.
    store = await Store.open(url)
    try:
        said = [m.text for m in await store.messages.recent_messages(GENERAL.id) if m.user.id == "bob"]
        assert said == ["lunch at noon, anyone?", "ramen for lunch today",
                        "who is in for ramen?", "meet at noon", "the usual place",
                        "see you there"]
        assert {f.content for f in await store.facts.facts()} == {
            "Bob eats lunch at noon.", "Bob likes ramen for lunch."
        }
        summary = await store.memories.get_memory("channel", GENERAL.id, "long_term")
        assert summary is not None and summary.content == "Lunch plans."
        bob = await store.memories.get_memory("user", "bob", "profile")
        assert bob is not None and bob.content["lastConversationSummary"] == {}
        assert await store.forgetting.forgotten_users() != {}
    finally:
        await store.close()


async def test_forget_me_on_the_platform_holds_through_the_next_flushes(
    tmp_path: Path, store_url: str
) -> None:
    url = store_url
    from kuuki.platforms.commands import run_command

    h = await make(tmp_path, s=_s(), store_url=url)
    try:
        h.llm.enqueue(
            summary_answer("Alice dreams of zanzibar.", history="zanzibar",
                           recent_events="quokka"),
            summary_answer("Bob wants ramen.", history="Lunch plans.",
                           recent_events="ramen"),
            purpose="memory_summary",
        )
        await h.say(ALICE, "I dream of zanzibar")
        await h.say(BOB, "ramen later?")
        await h.say(ALICE, "a quokka, maybe")  # the summary is written here
        await h.say(ALICE, "zanzibar has quokkas?")  # held only in memory: profile, queue
        assert h.memory.profiles.get("alice") is not None
        reply = await run_command(h.app.engine, GENERAL, ALICE, "forget-me", memory=h.memory)
        assert reply.text.startswith("Done: I forgot what I remembered about you (")
        assert "/kuuki remember-me" in reply.text
        await h.say(BOB, "ramen at noon")
        await h.say(ALICE, "zanzibar!")
        await h.say(BOB, "ramen it is")
        await h.say(BOB, "see you")
        await h.advance(16 * 60)  # maintenance: profiles flushed
        assert h.memory.profiles.get("alice") is None
    finally:
        await h.app.close()
    assert await cells_with(url, *SECRET) == []
    store = await Store.open(url)
    try:
        summary = await store.memories.get_memory("channel", GENERAL.id, "long_term")
        assert summary is not None and summary.content == "Lunch plans."
        assert await store.memories.get_memory("user", "bob", "profile") is not None
    finally:
        await store.close()
