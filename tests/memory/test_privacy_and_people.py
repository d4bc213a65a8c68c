from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from kuuki.memory.cli import (
    run_memory_forget,
    run_memory_list,
    run_memory_show,
    run_memory_unforget,
)

from .conftest import (
    ALICE,
    BOB,
    DM,
    GENERAL,
    RANDOM,
    SECRET,
    fact,
    make,
    reflection_answer,
    settings,
    summary_answer,
)


def _s(**kw: object) -> object:
    base: dict[str, object] = {
        "PROACTIVE_CONVERSATION_ENABLED": False, "REFLECTION_MIN_MESSAGES": 2,
        "SUMMARIZE_EVERY_N_MESSAGES": 2,
    }
    return settings(**{**base, **kw})  # type: ignore[arg-type]


async def test_private_and_dm_memories_never_reach_another_channel(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            summary_answer("HR discusses the layoff plan.", history="HR-HISTORY",
                           recent_events="LAYOFF-EVENTS"),
            summary_answer("Alice told Kuu about her surgery.", history="DM-HISTORY",
                           recent_events="SURGERY-EVENTS"),
            summary_answer("General chat about project falcon.",
                           history="GENERAL-HISTORY", recent_events="falcon news"),
            purpose="memory_summary",
        )
        h.llm.enqueue(
            reflection_answer(fact("The falcon project will be cancelled in March.",
                                   ["Alice"], ["falcon", "project"], shareable=False)),
            reflection_answer(fact("Alice has surgery on the falcon project deadline.",
                                   ["Alice"], ["falcon", "surgery"])),
            reflection_answer(fact("Bob leads the falcon project.", ["Bob"],
                                   ["falcon", "project"])),
            purpose="memory_reflection",
        )
        await h.say(ALICE, "the falcon project will be cancelled in March", channel=SECRET)
        await h.say(BOB, "keep it quiet until the announcement", channel=SECRET)
        await h.say(ALICE, "I have surgery on the falcon deadline", channel=DM)
        await h.say(ALICE, "please don't tell anyone", channel=DM)
        await h.say(BOB, "I lead the falcon project now", channel=GENERAL)
        await h.say(ALICE, "nice, falcon is in good hands", channel=GENERAL)
        await h.advance(11 * 60)  # reflection in all three channels
        assert len(await h.app.store.facts.facts()) == 3

        h.llm.enqueue("ok", "ok", "ok", purpose="reply")
        await h.say(ALICE, "Kuu, what's the news on the falcon project?", channel=GENERAL)
        public = h.llm.prompts("reply")[-1]
        assert "Bob leads the falcon project." in public
        for secret in ("cancelled in March", "surgery", "HR-HISTORY", "LAYOFF-EVENTS",
                       "DM-HISTORY", "SURGERY-EVENTS", "hr-private", "HR discusses"):
            assert secret not in public, secret
        # In another public channel of the workspace: public memories yes, secrets no.
        await h.say(BOB, "Kuu, anything about falcon?", channel=RANDOM)
        other = h.llm.prompts("reply")[-1]
        assert "Bob leads the falcon project." in other and "GENERAL-HISTORY" in other
        assert "cancelled in March" not in other and "surgery" not in other
        # In the private channel itself, its own memories are there (and public ones).
        await h.say(BOB, "Kuu, remind me about falcon", channel=SECRET)
        own = h.llm.prompts("reply")[-1]
        assert "cancelled in March" in own and "HR-HISTORY" in own
        assert "surgery" not in own and "DM-HISTORY" not in own
        # The workspace memory was built from public channels only.
        workspace_prompts = h.llm.prompts("memory_workspace")
        assert workspace_prompts and all(
            "HR-HISTORY" not in p and "DM-HISTORY" not in p for p in workspace_prompts)
    finally:
        await h.app.close()


async def test_another_workspace_sees_nothing(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob leads the falcon project.", ["Bob"], ["falcon"])),
            purpose="memory_reflection",
        )
        await h.say(BOB, "I lead the falcon project", channel=GENERAL)
        await h.say(ALICE, "great news on falcon", channel=GENERAL)
        await h.advance(11 * 60)
        elsewhere = replace(GENERAL, id="other-general", workspace="other")
        h.llm.enqueue("ok", purpose="reply")
        await h.say(ALICE, "Kuu, falcon project?", channel=elsewhere)
        assert "falcon project." not in h.llm.prompts("reply")[-1].split("## Current")[0]
    finally:
        await h.app.close()


async def test_profile_sets_the_tone_and_hides_private_topics(tmp_path: Path) -> None:
    s = _s(CHANNEL_CONTEXT_ENABLED=False, REFLECTION_ENABLED=False,
           FAMILIARITY_THRESHOLDS=(3, 6, 50))
    h = await make(tmp_path, s=s)  # type: ignore[arg-type]
    try:
        h.llm.enqueue("hello", "hey", "yo", purpose="reply")
        await h.say(BOB, "Kuu, hello there", channel=GENERAL)
        first = h.llm.prompts("reply")[-1]
        assert "## About Bob" in first and "Relationship: stranger" in first
        assert "more polite" in first
        for text in ("salary negotiation tomorrow", "salary raise hopes"):
            await h.say(BOB, text, channel=SECRET)
        for text in ("sourdough baking weekend", "sourdough starter bubbling"):
            await h.say(BOB, text, channel=GENERAL)
        await h.advance(16 * 60)  # maintenance: topics extracted, profiles persisted
        await h.say(BOB, "Kuu, what's up", channel=GENERAL)
        later = h.llm.prompts("reply")[-1]
        assert "Relationship: regular" in later and "casual" in later
        assert "sourdough" in later.split("## Current")[0]
        assert "salary" not in later and "hr-private" not in later
        await h.memory.profiles.flush(h.clock.now())  # maintenance or close would do it
        stored = await h.app.store.memories.get_memory("user", "bob", "profile")
        assert stored is not None and stored.content["interactionCount"] == 6
        assert stored.content["mentionedBotCount"] == 2
        assert set(stored.content["channelsActive"]) == {"general", "hr"}
    finally:
        await h.app.close()


async def test_user_can_see_and_forget_what_is_remembered(tmp_path: Path) -> None:
    s = _s(CHANNEL_CONTEXT_ENABLED=False)
    h = await make(tmp_path, s=s)  # type: ignore[arg-type]
    h.llm.enqueue(
        reflection_answer(
            fact("Bob bakes sourdough every weekend.", ["Bob"], ["sourdough", "baking"]),
            fact("Alice runs marathons.", ["Alice"], ["marathon"]),
            people=[{"name": "Bob", "tags": ["baker"], "summary": "Talked bread."}]),
        purpose="memory_reflection",
    )
    await h.say(BOB, "I bake sourdough every weekend")
    await h.say(ALICE, "I run marathons")
    await h.advance(16 * 60)
    shown = await h.memory.describe_user("bob")
    assert "Bob bakes sourdough every weekend." in shown and "baker" in shown
    assert "- 1 message seen (stranger), talked to me 0 times" in shown
    assert "marathons" not in shown
    await h.app.close()

    store_url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    cli_settings = replace(s, store_url=store_url)  # type: ignore[type-var]
    out = io.StringIO()
    await run_memory_show(cli_settings, out, user="bob")
    shown = out.getvalue()
    # Written for the operator: who, how familiar, what was learned where; no chat command.
    assert shown.startswith("Bob (id bob): stranger — 1 message seen, addressed the bot 0 times")
    assert "  learned in #general: baker" in shown
    assert "  last conversation in #general: Talked bread." in shown
    assert "  1 fact:\n    - Bob bakes sourdough every weekend.  (#general, confidence" in shown
    assert "marathons" not in shown and "/kuuki" not in shown
    assert "To forget all of this: kuuki memory forget --user bob" in shown
    out = io.StringIO()
    await run_memory_list(cli_settings, out)
    listed = out.getvalue()
    assert listed.startswith("#general (public): no summary, 2 facts; 2 people: ")
    assert "Alice (stranger, 1 message)" in listed and "Bob (stranger, 1 message)" in listed
    assert "2 people known:" in listed and "Bob (stranger, 1 message) [id bob], 1 fact" in listed
    out = io.StringIO()
    await run_memory_forget(cli_settings, "bob", out)
    assert out.getvalue() == (
        "Forgot bob: erased 1 message, 0 answers of the bot's, 1 decision, 1 memory, 1 fact.\n"
        "Nothing about bob will be learned again; to lift this: "
        "kuuki memory unforget --user bob\n"
    )
    out = io.StringIO()
    await run_memory_show(cli_settings, out, user="bob")
    assert out.getvalue() == "Nothing is remembered about bob. `kuuki memory list` shows who is.\n"

    h2 = await make(tmp_path, s=s)  # type: ignore[arg-type]
    h2.n = 100
    try:
        h2.llm.enqueue("ok", purpose="reply")
        await h2.say(BOB, "Kuu, any bread tips for my sourdough?")
        prompt = h2.llm.prompts("reply")[-1]
        assert "bakes sourdough every weekend" not in prompt and "baker" not in prompt
        assert [f.content for f in await h2.app.store.facts.facts()] == ["Alice runs marathons."]
        # Forgotten until lifted: no profile again, his new message not kept.
        assert "Relationship:" not in prompt
        await h2.advance(16 * 60)
        assert h2.memory.profiles.get("bob") is None
        kept = await h2.app.store.messages.recent_messages("general")
        assert [(m.user.id, m.text) for m in kept] == [("alice", "I run marathons")]
    finally:
        await h2.app.close()
    out = io.StringIO()
    await run_memory_unforget(cli_settings, "bob", out)
    assert out.getvalue().startswith("bob is no longer forgotten")
    h3 = await make(tmp_path, s=s)  # type: ignore[arg-type]
    h3.n = 200
    try:
        h3.llm.enqueue("ok", purpose="reply")
        await h3.say(BOB, "Kuu, I'm back")
        assert h3.memory.profiles.get("bob") is not None
        assert [m.text for m in await h3.app.store.messages.recent_messages("general")
                if m.user.id == "bob"] == ["Kuu, I'm back"]
    finally:
        await h3.app.close()


async def test_the_bots_name_is_not_a_topic() -> None:
    from kuuki.memory.privacy import ChannelRegistry
    from kuuki.memory.profiles import Profiles

    class NoStore:
        async def get_memory(self, *a: object, **k: object) -> None:
            return None

        async def set_memory(self, *a: object, **k: object) -> None:
            return None

        async def set_memories(self, *a: object, **k: object) -> int:
            return 0

    profiles = Profiles(
        NoStore(),  # type: ignore[arg-type]
        ChannelRegistry(),
        thresholds=(6, 31, 101),
        bot_names=("Kuu", "くう"),
    )
    profiles._pending[("bob", "general")] = ["Kuu, how is the docker deploy going?"]
    from kuuki.memory.profiles import UserProfile

    profiles._profiles["bob"] = UserProfile(user_id="bob", display_name="bob")
    await profiles.flush(datetime(2026, 1, 5, tzinfo=UTC))
    words = profiles._profiles["bob"].last_topics["general"]["keywords"]
    assert "docker" in words and "kuu" not in [w.lower() for w in words]


async def test_the_profile_is_written_in_the_conversations_language(tmp_path: Path) -> None:
    """A Japanese persona answering in English gets the person's profile in English too
    (a Japanese block in an English prompt pulled small models into Japanese)."""
    s = settings("ja", CHANNEL_CONTEXT_ENABLED=False, REFLECTION_ENABLED=False,
                 PROACTIVE_CONVERSATION_ENABLED=False)
    h = await make(tmp_path, s=s)
    try:
        h.llm.enqueue("hello", "やあ", purpose="reply")
        await h.say(BOB, "Kuu, hello there, how are you doing today?", channel=GENERAL)
        english = h.llm.prompts("reply")[-1]
        assert "## About Bob" in english and "Relationship: stranger" in english
        assert "関係性" not in english
        await h.say(BOB, "Kuu、こんにちは。今日は元気ですか？", channel=GENERAL)
        japanese = h.llm.prompts("reply")[-1]
        assert "関係性: 初見" in japanese and "Relationship:" not in japanese
    finally:
        await h.app.close()
