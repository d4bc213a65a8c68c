from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from kuuki.bench.memory import run_bench_facts
from kuuki.domain import ActionKind, Stage, Visibility
from kuuki.memory.facts import FactIndex
from kuuki.memory.keywords import keyword_set, keywords
from kuuki.store.records import FactRecord

from .conftest import (
    ALICE,
    BOB,
    RANDOM,
    FakeEmbedder,
    fact,
    make,
    reflection_answer,
    settings,
)

NOW = datetime(2026, 1, 5, tzinfo=UTC)


def _s(**kw: object) -> object:
    base: dict[str, object] = {"CHANNEL_CONTEXT_ENABLED": False, "REFLECTION_MIN_MESSAGES": 2}
    return settings(**{**base, **kw})  # type: ignore[arg-type]


async def test_proactive_talk_brings_a_fact_up_once_per_channel(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob climbed Mount Fuji last summer.", ["Bob"], ["fuji", "climbing"])),
            purpose="memory_reflection",
        )
        await h.say(BOB, "I climbed Mount Fuji last summer")
        await h.say(ALICE, "wow, fuji climbing!")
        await h.advance(11 * 60)
        assert len(await h.app.store.facts.facts()) == 1
        await h.advance(60 * 60)  # the channel falls silent

        h.llm.enqueue("By the way, Bob climbed Fuji last summer!", purpose="proactive")
        await h.say(ALICE, "thinking about climbing fuji this year")
        await h.advance(30)
        spoken = [d for d in h.decisions if d.stage is Stage.PROACTIVE]
        assert len(spoken) == 1 and spoken[0].action.kind is ActionKind.REPLY
        assert spoken[0].action.text == "By the way, Bob climbed Fuji last summer!"
        prompt = h.llm.prompts("proactive")[-1]
        assert "Bob climbed Mount Fuji last summer." in prompt and "woken up" in prompt
        fact_id = (await h.app.store.facts.facts())[0].id
        assert await h.app.store.facts.proactive_count("general", NOW - timedelta(days=1),
                                                 fact_id=fact_id) == 1

        # Another silence and wake-up on the same topic: the fact is not brought up again.
        await h.advance(2 * 3600)
        await h.say(BOB, "fuji climbing season is coming")
        await h.advance(30)
        assert len([d for d in h.decisions if d.stage is Stage.PROACTIVE]) == 1
        assert h.memory.jobs.of("proactive")[-1].reason == "no related shareable fact"
        # …but a public fact may still be brought up once in another channel.
        h.llm.enqueue("Bob did Fuji, ask him!", purpose="proactive")
        await h.say(ALICE, "anyone into fuji climbing?", channel=RANDOM)
        await h.advance(60 * 60)
        await h.say(ALICE, "fuji climbing plans anyone?", channel=RANDOM)
        await h.advance(30)
        assert [d.channel_id for d in h.decisions if d.stage is Stage.PROACTIVE] == [
            "general", "random"]
    finally:
        await h.app.close()


async def test_no_proactive_talk_in_cooldown_or_for_private_facts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = await make(tmp_path, s=_s())  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob's fuji trip is a surprise for Alice.", ["Bob"], ["fuji"],
                     shareable=False)),
            purpose="memory_reflection",
        )
        await h.say(BOB, "planning a fuji trip as a surprise")
        await h.say(ALICE, "fuji? nice")
        await h.advance(11 * 60 + 3600)
        await h.say(ALICE, "fuji climbing this year?")
        await h.advance(30)
        assert not [d for d in h.decisions if d.stage is Stage.PROACTIVE]
        assert h.memory.jobs.of("proactive")[-1].reason == "no related shareable fact"
        # nothing to bring up is the usual case, not a warning in the operator's terminal
        assert not [r for r in caplog.records
                    if r.levelno >= logging.WARNING and "proactive" in r.getMessage()]
        h.llm.enqueue("sure", purpose="reply")
        await h.say(ALICE, "Kuu, are you there?")
        await h.advance(3600 - 5 * 60)  # silent long enough, but the bot spoke recently…
        h.memory.proactive.silence = timedelta(minutes=50)
        await h.say(ALICE, "fuji again")
        await h.advance(30)
        assert h.memory.jobs.of("proactive")[-1].reason in ("in cooldown",
                                                            "no related shareable fact")
    finally:
        await h.app.close()


def _record(i: int, kws: tuple[str, ...], *, days: float = 0, users: tuple[str, ...] = ("u",),
            conf: float = 1.0, emb: np.ndarray | None = None) -> FactRecord:
    return FactRecord(i, f"fact {i} {' '.join(kws)}", "general", users, kws, emb, conf, True,
                      Visibility.PUBLIC, "default", NOW - timedelta(days=days), None)


def test_search_combines_keywords_embeddings_decay_and_speaker() -> None:
    emb = FakeEmbedder()
    index = FactIndex(512)
    texts = {1: "tomato garden", 2: "tomato garden", 3: "tomato garden", 4: "car engine"}
    ages = {1: 0, 2: 60, 3: 0, 4: 0}
    users = {1: ("alice",), 2: ("alice",), 3: ("bob",), 4: ("bob",)}
    for i, t in texts.items():
        kws = tuple(keywords(t))
        index.add(_record(i, kws, days=ages[i], users=users[i], emb=emb.embed([t])[0]))
    query = "my tomato garden"
    hits = index.search(keyword_set(keywords(query)), emb.embed([query])[0], now=NOW,
                        half_life_days=30, speaker="bob", limit=4)
    ids = [h.fact.id for h in hits]
    assert ids[0] == 3  # same relevance, fresh, and about the speaker
    assert ids.index(1) < ids.index(2)  # 60 days old: a quarter of the weight
    assert hits[ids.index(2)].score == hits[ids.index(1)].score * 0.25
    assert 4 not in ids  # unrelated
    # Keywords alone (no embeddings) still find it.
    assert [h.fact.id for h in index.search(keyword_set(["tomato"]), None, now=NOW,
                                             half_life_days=30, limit=1)] == [1]


def test_decayed_and_weakest_facts_are_chosen_for_forgetting() -> None:
    index = FactIndex(512)
    index.add(_record(1, ("a",), days=0))
    index.add(_record(2, ("b",), days=200))
    index.add(_record(3, ("c",), days=40, conf=0.1))
    assert index.decayed(0.05, now=NOW, half_life_days=30) == [2, 3]
    assert index.weakest(1, now=NOW, half_life_days=30) == [2]


async def test_near_duplicates_merge_and_the_cap_holds(tmp_path: Path) -> None:
    h = await make(tmp_path, s=_s(FACT_STORE_MAX_FACTS_PER_CHANNEL=2))  # type: ignore[arg-type]
    try:
        h.llm.enqueue(
            reflection_answer(
                fact("Bob grows tomatoes.", ["Bob"], ["tomato"], confidence=0.5),
                fact("Bob grows tomatoes!", ["Alice"], ["tomato"], confidence=0.8),
                fact("Alice runs marathons.", ["Alice"], ["marathon"]),
                fact("Carol sings opera.", ["Alice"], ["opera"], confidence=0.1),
            ),
            purpose="memory_reflection",
        )
        await h.say(BOB, "tomatoes are growing")
        await h.say(ALICE, "marathon next week")
        await h.advance(11 * 60)
        facts = {f.content: f for f in await h.app.store.facts.facts()}
        assert set(facts) == {"Bob grows tomatoes.", "Alice runs marathons."}
        merged = facts["Bob grows tomatoes."]
        assert merged.confidence == 0.8 and set(merged.source_user_ids) == {"bob", "alice"}
        assert h.memory.facts.count("general") == 2
        # Forgetting decayed facts happens in maintenance, once there is activity again.
        await h.advance(300 * 86400)
        await h.say(ALICE, "back after a long break")
        await h.advance(16 * 60)
        assert await h.app.store.facts.facts() == [] and h.memory.facts.count() == 0
    finally:
        await h.app.close()


def test_keywords_for_japanese_and_english() -> None:
    assert keywords("昨日はRustの非同期処理でコンパイルエラーに3時間ハマった") == [
        "rust", "非同期", "処理", "コンパイル", "エラー"]
    assert keywords("I finally fixed the async compile errors in Rust!") == [
        "finally", "fixed", "async", "compile", "error", "rust"]
    assert "猫" in keywords("猫が好き")


def test_bench_prints_one_json_line() -> None:
    out = io.StringIO()
    result = run_bench_facts(out, facts=2000, queries=50)
    line = json.loads(out.getvalue())
    assert line["facts"] == 2000 and "p99_ms" in line and result == line
    assert line["queries_with_hits"] > 0
