"""`MemoryService.snapshot`: what a channel's memory panel may show, as structured values."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from kuuki.domain import Stage, Visibility
from kuuki.memory.snapshot import ChannelMemory, Volunteered

from .conftest import (
    ALICE,
    BOB,
    DM,
    SECRET,
    fact,
    make,
    reflection_answer,
    settings,
    summary_answer,
)


async def test_snapshot_shows_the_channel_its_people_and_facts_as_that_channel_may(
    tmp_path: Path,
) -> None:
    h = await make(tmp_path, s=settings(PROACTIVE_CONVERSATION_ENABLED=False,
                                        REFLECTION_MIN_MESSAGES=2, SUMMARIZE_EVERY_N_MESSAGES=2))
    try:
        h.llm.enqueue(
            summary_answer("Bob moved the falcon deadline.", history="HR-HISTORY",
                           recent_events="HR-EVENTS", topics=["deadline"]),
            summary_answer("Alice told Kuu about her knee surgery.", history="DM-HISTORY",
                           topics=["surgery"]),
            *[summary_answer("Alice and Bob plan a hike.", mood="cheerful",
                             topics=["hike", "saturday"])] * 4,
            purpose="memory_summary",
        )
        h.llm.enqueue(
            reflection_answer(fact("The falcon deadline moved to May.", ["Bob"],
                                   ["falcon", "deadline"], shareable=False)),
            reflection_answer(fact("Alice has knee surgery in March.", ["Alice"],
                                   ["knee", "surgery"])),
            reflection_answer(fact("Bob knows the trail to Mount Takao.", ["Bob"],
                                   ["takao", "trail"], confidence=0.8)),
            purpose="memory_reflection",
        )
        await h.say(BOB, "the falcon deadline moves to May", channel=SECRET)
        await h.say(BOB, "keep the falcon deadline quiet", channel=SECRET)
        await h.say(ALICE, "my knee surgery is in March", channel=DM)
        await h.say(ALICE, "the knee surgery worries me", channel=DM)
        summarized_at = h.clock.now()
        await h.advance(60)
        for text in ("hike on saturday?", "Takao maybe", "the Takao trail is nice",
                     "bring lunch", "and water", "see you at 9"):
            await h.say(ALICE, text)
        await h.advance(30)
        await h.say(BOB, "I know the trail to Mount Takao")
        await h.advance(11 * 60)  # reflection in all three channels
        await h.memory.profiles.flush(h.clock.now())  # topics are extracted on flush

        snap = await h.memory.snapshot("general")
        assert (snap.channel_name, snap.visibility) == ("general", Visibility.PUBLIC)
        assert snap.summary is not None
        assert snap.summary.text == "Alice and Bob plan a hike."
        assert snap.summary.mood == "cheerful"
        assert snap.summary.topics == ("hike", "saturday")
        assert snap.summary.updated_at is not None and snap.summary.updated_at > summarized_at
        assert snap.history is not None and snap.history.text == summary_answer()["history"]
        assert snap.recent_events is not None and snap.recent_events.updated_at is not None
        # The people known here, most recently active first, with the seed's levels.
        people = {p.name: p for p in snap.people}
        assert [p.name for p in snap.people] == ["Bob", "Alice"]
        assert (people["Alice"].familiarity, people["Alice"].messages) == ("acquaintance", 8)
        assert (people["Bob"].familiarity, people["Bob"].messages) == ("stranger", 3)
        assert "takao" in [t.lower() for t in people["Alice"].topics]
        # What Bob said in the private channel, and Alice in the DM, stays there.
        assert people["Bob"].channels == ("general",)
        for p in snap.people:
            assert not {"falcon", "deadline", "knee", "surgery"} & {t.lower() for t in p.topics}
        assert [f.text for f in snap.facts] == ["Bob knows the trail to Mount Takao."]
        [takao] = snap.facts
        assert (takao.source_channel, takao.about, takao.shareable) == ("general", ("Bob",), True)
        assert takao.confidence == 0.8 and 0 < takao.strength <= 0.8
        raw = str(snap.to_dict())
        for secret in ("falcon", "HR-", "knee", "surgery", "DM-HISTORY"):
            assert secret not in raw, secret
        # When the next summary comes: one message waits for it.
        assert snap.progress is not None
        assert (snap.progress.waiting, snap.progress.every_n) == (1, 2)
        assert not snap.progress.writing  # the memory jobs are idle
        assert snap.progress.last_attempt is not None and snap.progress.last_attempt.ok

        # The private channel sees its own memories, and what public channels share.
        hr = await h.memory.snapshot("hr")
        assert hr.summary is not None and hr.summary.text == "Bob moved the falcon deadline."
        assert {f.text for f in hr.facts} == {
            "The falcon deadline moved to May.", "Bob knows the trail to Mount Takao."}
        assert "knee" not in str(hr.to_dict())
        # A channel the bot never saw: nothing remembered, and no error.
        nowhere = await h.memory.snapshot("nowhere")
        assert nowhere == ChannelMemory.unknown("nowhere", h.clock.now())
        assert nowhere.people == () and nowhere.summary is None
    finally:
        await h.app.close()


async def test_snapshot_lists_what_the_bot_brought_up_by_itself(tmp_path: Path) -> None:
    h = await make(tmp_path, s=settings(CHANNEL_CONTEXT_ENABLED=False,  # type: ignore[arg-type]
                                        REFLECTION_MIN_MESSAGES=2))
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob climbed Mount Fuji last summer.", ["Bob"], ["fuji", "climbing"])),
            purpose="memory_reflection",
        )
        await h.say(BOB, "I climbed Mount Fuji last summer")
        await h.say(ALICE, "wow, fuji climbing!")
        await h.advance(11 * 60)
        assert (await h.memory.snapshot("general")).proactive == ()
        await h.advance(60 * 60)  # the channel falls silent
        h.llm.enqueue("By the way, Bob climbed Fuji last summer!", purpose="proactive")
        await h.say(ALICE, "thinking about climbing fuji this year")
        await h.advance(30)
        [spoken] = [d for d in h.decisions if d.stage is Stage.PROACTIVE]

        snap = await h.memory.snapshot("general")
        [fuji] = snap.facts
        assert snap.proactive == (
            Volunteered(fuji.id, "Bob climbed Mount Fuji last summer.", spoken.decided_at),)
        assert snap.last_proactive_check is not None and snap.last_proactive_check.ok
        assert snap.progress is not None and not snap.progress.enabled
        assert h.clock.now() - snap.proactive[0].at < timedelta(minutes=1)
    finally:
        await h.app.close()
