from __future__ import annotations

from pathlib import Path

from kuuki.domain import ActionKind
from kuuki.settings import LLMSettings

from .conftest import ALICE, BOB, GENERAL, make, settings, summary_answer


def _s(**kw: object) -> object:
    base: dict[str, object] = {"REFLECTION_ENABLED": False, "SUMMARIZE_EVERY_N_MESSAGES": 3}
    return settings(**{**base, **kw})  # type: ignore[arg-type]


async def test_summary_after_n_messages_is_injected_into_the_reply_prompt(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(summary_answer(), purpose="memory_summary")
        h.llm.enqueue("Saturday works for me!", purpose="reply")
        await h.say(ALICE, "shall we go hiking on Saturday?")
        await h.say(BOB, "yes, the weather looks great")
        assert h.llm.prompts("memory_summary") == []  # two messages: not yet
        await h.say(ALICE, "let's meet at the station at 9")
        assert len(h.llm.prompts("memory_summary")) == 1
        ctx = h.memory.summarizer.context("general")
        assert ctx is not None and ctx.summary == "Alice and Bob plan a hike."
        assert ctx.active_users == ["Bob", "Alice"] and ctx.topic_keywords == ["hike", "weekend"]
        stored = await h.app.store.memories.get_memory("channel", "general", "context")
        assert stored is not None and stored.content["mood"] == "casual and cheerful"

        await h.say(BOB, "Kuu, are you coming too?")
        assert h.decisions[-1].action.kind is ActionKind.REPLY
        prompt = h.llm.prompts("reply")[-1]
        assert (
            "[The situation in this channel]\nTopics: hike, weekend\n"
            "Mood: casual and cheerful\nParticipants: Bob, Alice\n"
            "Recent flow: Alice and Bob plan a hike." in prompt
        )
    finally:
        await h.app.close()


async def test_japanese_prompt_uses_the_seed_format(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(language="ja"))  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            summary_answer(
                "週末の山登りを計画中。", mood="カジュアル", topics=["山登り", "週末"],
                recent_events="土曜の山登りが決まった。", history="友達が遊びの計画を立てるチャンネル。"),
            purpose="memory_summary",
        )
        for text in ("土曜に山登り行かない？", "いいね、天気も良さそう", "駅に9時集合で"):
            await h.say(ALICE, text)
        await h.say(BOB, "一緒に来る？", mentions=("Kuu",))
        prompt = h.llm.prompts("reply")[-1]
        assert "【このチャンネルの状況】\n話題: 山登り、週末\n雰囲気: カジュアル\n" in prompt
        assert "参加者: Alice\n直近の流れ: 週末の山登りを計画中。" in prompt
    finally:
        await h.app.close()


async def test_notes_in_another_language_than_the_channel_are_not_stored(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(language="ja"))  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            summary_answer(
                "週末の山登りを計画中。", mood="カジュアル", topics=["山登り", "週末"]),
            purpose="memory_summary",
        )
        for text in ("土曜に山登り行かない？", "いいね、天気も良さそう", "駅に9時集合で"):
            await h.say(ALICE, text)
        assert h.memory.summarizer.context("general") is None
        [job] = h.memory.jobs.of("summary")
        assert not job.ok
        assert "written in English for a Japanese channel" in job.reason
        assert job.trace is not None and job.trace.guard[0].check == "memory"
    finally:
        await h.app.close()


async def test_time_trigger_and_incremental_update(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(SUMMARIZE_EVERY_N_MESSAGES=20))  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            summary_answer("First: a hike is proposed."),
            summary_answer("Then: they agreed on 9am."),
            purpose="memory_summary",
        )
        await h.say(ALICE, "shall we go hiking on Saturday?")
        await h.advance(14 * 60)
        assert h.llm.prompts("memory_summary") == []
        await h.advance(61)
        first = h.llm.prompts("memory_summary")
        assert len(first) == 1 and "hiking on Saturday" in first[0]
        await h.say(BOB, "ok, 9am at the station")
        await h.advance(15 * 60 + 1)
        second = h.llm.prompts("memory_summary")[-1]
        # Incremental: the previous summary plus only the new message.
        assert "First: a hike is proposed." in second
        assert "9am at the station" in second and "hiking on Saturday" not in second
        ctx = h.memory.summarizer.context("general")
        assert ctx is not None and ctx.summary == "Then: they agreed on 9am."
    finally:
        await h.app.close()


async def test_bad_answer_leaves_memory_unchanged_and_is_recorded(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            summary_answer("Kept summary."),
            "not json at all",
            summary_answer("-"),
            summary_answer("Retried fine."),
            purpose="memory_summary",
        )
        for text in ("a hike?", "sure", "at 9"):
            await h.say(ALICE, text)
        for text in ("bring snacks", "and water", "ok"):
            await h.say(BOB, text)
        ctx = h.memory.summarizer.context("general")
        assert ctx is not None and ctx.summary == "Kept summary."
        failures = [r for r in h.memory.jobs.of("summary") if not r.ok]
        assert failures and "invalid" in failures[0].reason
        # Still nothing changed after a passive "-" answer; the messages were kept, so the
        # next attempt sees them again.
        for text in ("one", "two", "three"):
            await h.say(BOB, text)
        assert "rejected: summary: says nothing (“-”)" in [
            r.reason for r in h.memory.jobs.of("summary")
        ]
        assert h.memory.summarizer.context("general").summary == "Kept summary."  # type: ignore[union-attr]
        for text in ("four", "five", "six"):
            await h.say(BOB, text)
        last = h.llm.prompts("memory_summary")[-1]
        assert "bring snacks" in last and "six" in last
        assert h.memory.summarizer.context("general").summary == "Retried fine."  # type: ignore[union-attr]
    finally:
        await h.app.close()


async def test_channel_context_off_means_no_summaries(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(CHANNEL_CONTEXT_ENABLED=False))  # type: ignore[arg-type]
    try:
        for text in ("a", "b", "c", "d"):
            await h.say(ALICE, f"message {text}", channel=GENERAL)
        await h.advance(3600)
        assert h.llm.prompts("memory_summary") == []
    finally:
        await h.app.close()


async def test_a_channel_in_a_language_the_model_does_not_write_is_not_summarized(
    tmp_path: Path,
) -> None:
    h = await make(tmp_path, s=_s(language="ja", llm=LLMSettings(languages=("en",))))  # type: ignore[arg-type]
    try:
        for text in ("土曜に山登り行かない？", "いいね、天気も良さそう", "駅に9時集合で"):
            await h.say(ALICE, text)
        assert h.llm.prompts("memory_summary") == []
        [job] = h.memory.jobs.of("summary")
        assert job.skipped and "does not write ja" in job.reason
    finally:
        await h.app.close()
