from __future__ import annotations

from pathlib import Path

from kuuki.clock import VirtualClock

from .conftest import ALICE, BOB, fact, make, reflection_answer, settings


def _s(**kw: object) -> object:
    return settings(CHANNEL_CONTEXT_ENABLED=False, PROACTIVE_CONVERSATION_ENABLED=False,
                    REFLECTION_MIN_MESSAGES=4, **kw)


async def _chat(h: object, n: int, prefix: str) -> None:
    for i in range(n):
        await h.say(ALICE if i % 2 else BOB, f"{prefix} message {i} about the garden")  # type: ignore[attr-defined]


async def test_lull_reflection_stores_facts_and_profile_notes(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob grows tomatoes in his garden.", ["Bob"], ["tomato", "garden"]),
                people=[{"name": "Bob", "tags": ["gardener"], "summary": "We talked tomatoes."}],
            ),
            purpose="memory_reflection",
        )
        await _chat(h, 4, "first")
        await h.advance(9 * 60)
        assert h.llm.prompts("memory_reflection") == []  # no lull yet
        await h.advance(61)
        prompts = h.llm.prompts("memory_reflection")
        assert len(prompts) == 1 and "first message 3 about the garden" in prompts[0]
        facts = await h.app.store.facts.facts()
        assert [(f.content, f.source_user_ids, f.source_channel_id) for f in facts] == [
            ("Bob grows tomatoes in his garden.", ("bob",), "general")
        ]
        assert await h.app.store.messages.unreflected_messages("general") == []
        profile = h.memory.profiles.get("bob")
        assert profile is not None and profile.tags == {"general": ["gardener"]}
        assert profile.summaries["general"]["text"] == "We talked tomatoes."
    finally:
        await h.app.close()


async def test_too_few_messages_wait_and_a_backlog_forces_reflection(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(REFLECTION_MAX_BUFFER_MESSAGES=6))  # type: ignore[arg-type]
    try:
        await _chat(h, 3, "few")
        await h.advance(11 * 60)
        assert h.llm.prompts("memory_reflection") == []
        assert "only 3 new messages" in h.memory.jobs.of("reflection")[-1].reason
        h.llm.enqueue(reflection_answer(), purpose="memory_reflection")
        await _chat(h, 3, "more")  # 3 + 3 = the backlog limit, no lull needed
        prompts = h.llm.prompts("memory_reflection")
        assert len(prompts) == 1
        assert "few message 0" in prompts[0] and "more message 2" in prompts[0]
    finally:
        await h.app.close()


async def test_invalid_answer_marks_nothing(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            '{"facts": "oops"}',
            reflection_answer(fact("Alice likes roses.", ["Alice"], ["rose"])),
            purpose="memory_reflection",
        )
        await _chat(h, 4, "first")
        await h.advance(11 * 60)
        bad = h.memory.jobs.of("reflection")[-1]
        assert not bad.ok and "invalid" in bad.reason
        assert await h.app.store.facts.facts() == []
        assert len(await h.app.store.messages.unreflected_messages("general")) == 4
        await _chat(h, 1, "again")
        await h.advance(11 * 60)
        assert [f.content for f in await h.app.store.facts.facts()] == ["Alice likes roses."]
        assert await h.app.store.messages.unreflected_messages("general") == []
    finally:
        await h.app.close()


async def test_no_message_is_reflected_twice_across_a_restart(tmp_path: Path) -> None:
    clock = VirtualClock()
    h = await make(tmp_path, s=_s(), clock=clock)  # type: ignore[arg-type]
    h.llm.enqueue(
        reflection_answer(
            fact("Bob grows tomatoes.", ["Bob"], ["tomato"])),
        purpose="memory_reflection",
    )
    await _chat(h, 4, "before")
    await h.advance(11 * 60)
    assert len(h.llm.prompts("memory_reflection")) == 1
    # Messages that arrive after the reflection but before the restart are reflected later.
    await _chat(h, 2, "pending")
    await h.app.close()

    h2 = await make(tmp_path, s=_s(), clock=clock)  # type: ignore[arg-type]
    h2.n = 100  # new message ids
    try:
        h2.llm.enqueue(
            reflection_answer(
                fact("Bob grows tomatoes.", ["Bob"], ["tomato"])),
            purpose="memory_reflection",
        )
        await _chat(h2, 2, "after")
        await h2.advance(11 * 60)
        prompts = h2.llm.prompts("memory_reflection")
        assert len(prompts) == 1
        assert "before message" not in prompts[0]
        assert "pending message 1" in prompts[0] and "after message 1" in prompts[0]
        # The same fact learned again is merged, never stored twice.
        facts = await h2.app.store.facts.facts()
        assert [f.content for f in facts] == ["Bob grows tomatoes."]
        assert await h2.app.store.messages.unreflected_messages("general") == []
    finally:
        await h2.app.close()
