"""The playground tells the truth: readable decision cards (fallbacks, the guard, LLM calls,
the language), the model loading once with a visible state, clock jumps that say what they
wait for, and a memory panel written for people. Checked on the server's WebSocket."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta

from starlette.testclient import TestClient

from kuuki.domain import Visibility
from kuuki.errors import LLMTimeout
from kuuki.explain.lines import clock_time
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.memory.snapshot import (
    ChannelMemory,
    ChannelSummary,
    JobOutcome,
    Person,
    RememberedFact,
    SummaryProgress,
    Volunteered,
)
from kuuki.platforms.playground import Playground, create_app
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM

from .conftest import QuestionJudge, collect_until, loading_llm, say, wait_for

CALL = re.compile(r"^reply · scripted · \d+ ms · \d+\+\d+ tokens$")


def no_json(lines: list[str]) -> None:
    for line in lines:
        assert not re.search(r"[{}\[\]]|\d{4}-\d\d-\d\dT", line), line


def test_a_decision_card_is_headed_by_its_reason_and_reads_as_sentences(
    client: TestClient, llm: ScriptedLLM
) -> None:
    llm.enqueue("Hi Alice! All good here.")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        say(ws, "alice", "@Kuu how are you?")
        d = wait_for(ws, "decision")
    card = d["card"]
    assert d["reason"] == "addressed" and card["fallback"] is False
    assert card["headline"] == "Replied: addressed"  # what it did, then why
    assert card["language"] == "en"
    assert "language: English (en)" in card["features"]
    assert "addressed by an @mention" in card["features"]
    [call] = card["calls"]
    assert CALL.match(call), call
    assert card["guard"] == ["reply passed the guard"]
    assert card["rules"] == ["+100  addressed:mention (spoken to directly)"]
    assert any(re.fullmatch(r"last replied \d\d:\d\d:\d\d \(just now\)", s)
               for s in card["state"])
    assert any(re.fullmatch(r"\d+ messages? in the short-term buffer", s) for s in card["state"])
    assert card["time"] == clock_time(datetime.fromisoformat(d["t"]))
    no_json(card["features"] + card["state"] + card["calls"] + card["guard"])
    assert d["trace"]["llm_calls"][0]["purpose"] == "reply"  # the raw trace, for developers


def test_a_timed_out_reply_is_headed_by_the_timeout(client: TestClient, llm: ScriptedLLM) -> None:
    llm.enqueue(LLMTimeout("scripted took longer than 20s"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        say(ws, "alice", "@Kuu are you there?")
        d = wait_for(ws, "decision")
    card = d["card"]
    assert (d["action"], d["emoji"]) == ("react", "🤔")
    assert d["reason"] == "addressed → reply timed out: reacted 🤔"
    assert card["headline"] == "Reacted 🤔 instead of replying: addressed, but the reply timed out"
    assert card["fallback"] is True
    [call] = card["calls"]
    assert call.endswith(" · timed out (scripted took longer than 20s)"), call
    assert card["guard"] == ["fallback: reacted 🤔 instead"]


def test_a_reply_rejected_twice_shows_each_verdict_and_the_fallback(
    client: TestClient, llm: ScriptedLLM
) -> None:
    llm.enqueue("As an AI language model, I have no opinion.",
                "As an AI language model, I cannot say.")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        say(ws, "bob", "@Kuu what do you think?")
        d = wait_for(ws, "decision")
    card = d["card"]
    assert d["action"] == "react" and card["fallback"] is True
    assert card["headline"].startswith(
        "Reacted 🤔 instead of replying: addressed, but the reply was rejected twice (")
    first, retry, fallback = card["guard"]
    assert first.startswith("reply rejected by the boilerplate check: ")
    assert first.endswith("— it wrote “As an AI language model, I have no opinion.”")
    assert retry.startswith("reply (retry) rejected by the boilerplate check: ")
    assert fallback == "fallback: reacted 🤔 instead"
    assert [c.split(" · ")[0] for c in card["calls"]] == ["reply", "reply-retry"]


def test_the_model_loads_once_at_start_and_the_page_sees_it_loading(
    settings: Settings, store_url: str
) -> None:
    llm = loading_llm()
    app = create_app(settings, llm=llm, judge=QuestionJudge(), store_url=store_url,
                     embedder=None, tick_s=0.05)
    try:
        before_start = time.perf_counter()
        with TestClient(app) as client:
            with client.websocket_connect("/ws") as ws:
                model = ws.receive_json()["model"]
                assert (model["state"], model["local"]) == ("loading", True)
                assert model["headline"] == "loading the model tiny-local…"
                assert model["note"] is None  # not the tiny shipped model: no note
                assert llm.warming.wait(10), "the load never began"
                began = time.perf_counter()  # the load was under way here...
                llm.enqueue("Hello!")
                say(ws, "alice", "@Kuu hello there, how are you today?")  # said while loading: answered once it is ready
                released = time.perf_counter()  # ...and here: it ends once set
                llm.loaded.set()
                seen = [m for m in collect_until(ws, "decision", lambda m: True)
                        if m["type"] in ("model", "decision")]
                shown = time.perf_counter()
            ready, decision = seen  # ready first, then the answer
            assert ready["state"] == "ready" and isinstance(ready["load_s"], float)
            # The load's own length, in seconds: no shorter than the stretch the test saw
            # it under way, no longer than from before start-up until "ready" arrived.
            assert released - began <= ready["load_s"] <= shown - before_start, ready
            assert ready["headline"] == f"model tiny-local ready in {ready['load_s']:.1f} s"
            assert decision["text"] == "Hello!"
            with client.websocket_connect("/ws") as again:
                assert again.receive_json()["model"]["state"] == "ready"
        assert llm.warms == 1
    finally:
        llm.loaded.set()


def test_a_model_that_cannot_load_says_why(settings: Settings, store_url: str) -> None:
    llm = EmbeddedLLM(model_path="/nowhere/own-model.gguf")
    app = create_app(settings, llm=llm, judge=QuestionJudge(), store_url=store_url,
                     embedder=None, tick_s=0.05)
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        model = ws.receive_json()["model"]
        if model["state"] == "loading":
            model = wait_for(ws, "model")
    assert model["state"] == "failed" and model["shipped"] is False
    assert model["headline"] == ("the model own-model could not be loaded: "
                                 "model file /nowhere/own-model.gguf does not exist")


def test_a_model_at_an_address_where_nothing_listens_is_not_called_ready(
    store_url: str,
) -> None:
    """KUUKI_LLM=openai pointed at a port where nothing listens: the page hears "checking",
    then "cannot reach" — before anyone talks, not "ready" until the first reply fails."""
    from kuuki.settings import load_settings

    settings = load_settings(env={"KUUKI_LLM": "openai", "KUUKI_LLM_MODEL": "llama3.2",
                                  "KUUKI_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                                  "KUUKI_LLM_MAX_RETRIES": "0"})
    app = create_app(settings, judge=QuestionJudge(), store_url=store_url, embedder=None,
                     tick_s=0.05)
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        model = ws.receive_json()["model"]
        if model["state"] == "loading":
            assert model["headline"] == "checking the model llama3.2 at http://127.0.0.1:9/v1…"
            model = wait_for(ws, "model")
    assert model["state"] == "failed" and model["remote"] == "http://127.0.0.1:9/v1"
    assert model["headline"].startswith(
        "cannot reach the model llama3.2 at http://127.0.0.1:9/v1: ")
    assert "ready" not in model["headline"]


def test_a_jump_says_what_it_waits_for_and_refuses_a_second_one(
    client: TestClient, llm: ScriptedLLM
) -> None:
    llm.enqueue("Try Menya on 3rd street.")
    llm.hold.clear()  # the reply the jump brings will take its time
    try:
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            say(ws, "bob", "anyone know a good ramen place?")
            wait_for(ws, "decision")
            ws.send_text(json.dumps({"type": "jump", "seconds": 3600}))
            started = wait_for(ws, "jump")
            assert started["active"] and started["label"] == "+1 h"
            assert any(re.fullmatch(r"next timer at \d\d:\d\d:\d\d", w)
                       for w in started["waiting"]), started
            writing = wait_for(ws, "jump", lambda m: "Kuu writing a reply in #general" in
                               m["waiting"])
            assert writing["active"]
            ws.send_text(json.dumps({"type": "jump", "seconds": 300}))
            refused = wait_for(ws, "error")
            assert refused["error"] == ("the clock is still jumping +1 h; wait for it to finish")
            llm.hold.set()
            done = wait_for(ws, "jump", lambda m: not m["active"])
            assert done["waiting"] == []
            state = client.get("/api/state").json()
        assert state["jump"] is None
        assert any(m["text"] == "Try Menya on 3rd street." for m in state["messages"])
    finally:
        llm.hold.set()


NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


async def test_the_memory_panel_renders_a_snapshot_for_people(
    settings: Settings, store_url: str
) -> None:
    snap = ChannelMemory(
        "general", "general", Visibility.PUBLIC, NOW,
        summary=ChannelSummary("Alice and Bob plan a hike.", "cheerful", ("hike", "saturday"),
                               NOW - timedelta(minutes=2)),
        people=(
            Person("alice", "Alice", "regular", 42, 2, ("general", "random"), ("hike",),
                   ("likes mountains",), ""),
            Person("bob", "Bob", "stranger", 1, 1, ("general",), (), (), ""),
        ),
        facts=(RememberedFact(3, "Bob knows the trail to Mount Takao.", 0.8, 0.6,
                              NOW - timedelta(days=12), None, "general", ("Bob",), False),),
        proactive=(Volunteered(3, "Bob knows the trail to Mount Takao.",
                               NOW - timedelta(hours=1)),),
        progress=SummaryProgress(3, True, 20, 15, True,
                                 JobOutcome(NOW, False, "rejected: says nothing")),
    )
    calls: list[str] = []

    async def memory(channel_id: str) -> ChannelMemory:
        calls.append(channel_id)
        return snap

    pg = Playground(settings, llm=ScriptedLLM(), store_url=store_url, embedder=None,
                    memory=memory)
    await pg.start()
    try:
        queue = pg.hub.subscribe()
        await pg.push_memory("general")
        pushed = json.loads(queue.get_nowait())
        await pg.push_memory("general")  # unchanged: nothing new is pushed
        assert queue.empty()
    finally:
        await pg.close()
    assert calls == ["general", "general"]
    view = pushed["memory"]
    assert view["title"] == "#general" and view["read_at"] == clock_time(NOW)
    sections = {s["key"]: s for s in view["sections"]}
    [summary] = sections["summary"]["items"]
    assert summary["text"] == "Alice and Bob plan a hike."
    assert summary["meta"] == ["mood: cheerful · topics: hike, saturday",
                               f"updated {clock_time(NOW - timedelta(minutes=2))} (2 min ago)"]
    assert sections["summary"]["note"] == (
        "A summary is being written right now. Summaries are written every 20 messages or 15 minutes after the first new one; "
        f"3 messages since the last one. The last attempt, at {clock_time(NOW)} (just now), "
        "was not kept: the model wrote nothing usable.")
    assert sections["people"]["title"] == "People (2)"
    alice, bob = sections["people"]["items"]
    assert alice == {"text": "Alice — regular", "meta": [
        "42 messages seen · talked to Kuu twice", "topics: hike", "about them: likes mountains",
        "active in #general, #random"]}
    assert bob == {"text": "Bob — stranger", "meta": ["1 message seen · talked to Kuu once"]}
    [fact] = sections["facts"]["items"]
    assert fact["meta"] == ["about Bob · from #general · learned 12 days ago",
                            "confidence 80%, faded to 60% · never brought up unasked"]
    [said] = sections["proactive"]["items"]
    assert said["meta"] == [f"said {clock_time(NOW - timedelta(hours=1))} (1 h ago)"]
    assert sections["history"]["items"] == [] and sections["history"]["empty"]
    assert view["raw"]["people"][0]["familiarity"] == "regular"  # for the raw toggle


def test_a_summary_the_small_model_could_not_write_is_said_plainly() -> None:
    """The shipped model copies the summary prompt's example values (the guard rejects
    them): the panel says so in plain words, and that a larger model writes summaries."""
    from kuuki.explain.memory_view import render

    reason = ("rejected: summary: the prompt's example value “the lasting story of the "
              "channel purpose recurring themes m…”")
    snap = ChannelMemory("general", "general", Visibility.PUBLIC, NOW, progress=SummaryProgress(
        0, False, 20, 15, True, JobOutcome(NOW - timedelta(minutes=3), False, reason)))
    [summary] = [s for s in render(snap, bot_name="Kuu", small_model=True)["sections"]
                 if s["key"] == "summary"]
    assert summary["items"] == []
    assert summary["empty"] == "No summary yet: the model could not write one."
    assert summary["note"].endswith(
        "was not kept: the model copied the prompt's example instead of summarizing. The "
        "small built-in model rarely manages a summary; a larger model does (“use your own "
        "model”, at the top).")
    assert "example value" not in summary["note"]


def test_the_memory_panel_shows_who_the_bot_knows_in_each_channel(
    client: TestClient, llm: ScriptedLLM
) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({"type": "add_channel", "name": "secret",
                                 "visibility": "private"}))
        wait_for(ws, "channels")
        say(ws, "carol", "the merger is off", channel="secret")
        wait_for(ws, "decision")
        say(ws, "carol", "morning all")
        wait_for(ws, "decision")
        say(ws, "alice", "hi carol")
        wait_for(ws, "decision")
        ws.send_text(json.dumps({"type": "memory", "channel": "general"}))
        general = wait_for(ws, "memory", lambda m: m["channel"] == "general"
                           and "alice" in json.dumps(m["memory"]["sections"]))["memory"]
        ws.send_text(json.dumps({"type": "memory", "channel": "secret"}))
        secret = wait_for(ws, "memory", lambda m: m["channel"] == "secret")["memory"]
    people = {s["key"]: s for s in general["sections"]}["people"]
    items = {p["text"]: p["meta"] for p in people["items"]}
    assert items == {
        "alice — stranger": ["1 message seen"],
        # carol also talks in the private channel: general's panel does not say so.
        "carol — stranger": ["2 messages seen"],
    }
    summary = {s["key"]: s for s in general["sections"]}["summary"]
    assert summary["items"] == [] and summary["empty"] == "No summary yet."
    assert "2 messages so far" in summary["note"]
    assert secret["visibility"] == "private"
    [carol] = {s["key"]: s for s in secret["sections"]}["people"]["items"]
    assert carol["meta"] == ["2 messages seen", "active in #secret, #general"]
    for view in (general, secret):
        for section in view["sections"]:
            no_json([item["text"] for item in section["items"]]
                    + [m for item in section["items"] for m in item["meta"]]
                    + [section["note"], section["empty"]])
