"""The playground's ASGI app over plain HTTP and WebSocket (Starlette's TestClient)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

from kuuki.clock import VirtualClock
from kuuki.llm.base import ChatMessage
from kuuki.platforms.playground import create_app
from kuuki.platforms.playground.room import Hub, Room
from kuuki.replay.transcript import parse_lines
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import ScriptedLLM, tool_call

from .conftest import collect_until, say, wait_for


def test_page_and_assets_are_served_locally(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "kuuki playground" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # no CDN, no external URL
    for asset in ("/static/app.js", "/static/style.css"):
        r = client.get(asset)
        assert r.status_code == 200, asset
        assert "https://" not in r.text


def test_addressed_message_gets_a_reply_with_its_trace(
    client: TestClient, llm: ScriptedLLM
) -> None:
    llm.enqueue("Hi Alice! All good here.")
    with client.websocket_connect("/ws") as ws:
        state = ws.receive_json()
        assert state["type"] == "state"
        assert state["participants"] == ["alice", "bob"]
        say(ws, "alice", "@Kuu how are you?")
        seen = collect_until(ws, "decision", lambda m: m["after"] == "p1")
    kinds = [m["type"] for m in seen if m["type"] != "clock"]
    assert kinds.index("message") < kinds.index("typing") < kinds.index("decision")
    typing = [m["on"] for m in seen if m["type"] == "typing"]
    assert typing == [True, False]
    bot = [m["message"] for m in seen if m["type"] == "message" and m["message"]["bot"]]
    assert [b["text"] for b in bot] == ["Hi Alice! All good here."]
    assert bot[0]["reply_to"] == "p1"
    decision = seen[-1]
    assert decision["action"] == "reply"
    assert decision["stage"] == "addressed"
    assert decision["timer"] is False
    rules = {c["rule"]: c["points"] for c in decision["trace"]["contributions"]}
    assert rules == {"addressed:mention": 100}
    [call] = decision["trace"]["llm_calls"]
    assert call["purpose"] == "reply" and call["prompt_tokens"] > 0
    prompt = client.get("/api/prompt", params={"key": decision["prompts"][0]})
    assert prompt.status_code == 200
    assert "alice: how are you?" in prompt.text  # the message to answer, without the call
    assert "how are you" in llm.prompts("reply")[0]


def test_the_card_shows_the_tool_calls(client: TestClient, llm: ScriptedLLM) -> None:
    llm.enqueue(tool_call("now") + tool_call("recall", "{oops"), "It's morning here.")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        say(ws, "alice", "@Kuu what time is it?")
        seen = collect_until(ws, "decision", lambda m: m["after"] == "p1")
    card = seen[-1]["card"]
    assert card["tools"][0].startswith("tool now({}): ok · round 1")
    assert card["tools"][1].startswith("tool recall({oops): invalid (not JSON")
    assert [t["outcome"] for t in seen[-1]["trace"]["tool_calls"]] == ["ok", "invalid"]


def test_open_question_is_rejudged_when_the_clock_jumps(
    client: TestClient, llm: ScriptedLLM
) -> None:
    llm.enqueue("Try Menya on 3rd street.")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        say(ws, "bob", "anyone know a good ramen place?")
        first = wait_for(ws, "decision")
        assert first["action"] == "none" and first["reason"].startswith("open question")
        clock = wait_for(ws, "clock")
        asked = datetime.fromisoformat(first["t"])
        recheck = datetime.fromisoformat(clock["next_due"]) - asked
        assert timedelta(seconds=299) < recheck <= timedelta(seconds=300)
        ws.send_text(json.dumps({"type": "jump", "seconds": 300}))
        again = wait_for(ws, "decision")
    assert again["after"] == "p1"
    assert again["action"] == "reply"
    assert again["timer"] is True
    assert again["text"] == "Try Menya on 3rd street."
    assert any("re-judged after 300 s" in s for s in again["trace"]["steps"])


def test_participants_and_channels_can_be_added(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({"type": "add_participant", "name": "carol"}))
        assert wait_for(ws, "participants")["participants"] == ["alice", "bob", "carol"]
        ws.send_text(json.dumps({"type": "add_channel", "name": "secret", "visibility": "private"}))
        channels = wait_for(ws, "channels")["channels"]
        assert {"id": "secret", "visibility": "private"} in channels
        say(ws, "carol", "just us here", channel="secret")
        msg = wait_for(ws, "message")["message"]
        assert (msg["user"], msg["channel"]) == ("carol", "secret")
        wait_for(ws, "decision")
    lines = client.get("/api/export").text.splitlines()
    assert json.loads(lines[-1])["channel_visibility"] == "private"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"type": "dance"}', "unknown message type 'dance'"),
        ('{"type": "say", "user": "alice", "channel": "general"}', "field 'text' must be text"),
        ('{"type": "say", "user": "alice", "channel": "nowhere", "text": "hi"}', "no channel"),
        ('{"type": "say", "user": "Kuu", "channel": "general", "text": "hi"}', "bot's name"),
        ('{"type": "jump", "seconds": -5}', "from 1 second to 30 days"),
        ('{"type": "jump", "seconds": true}', "from 1 second to 30 days"),
        ('{"type": "add_channel", "name": "x", "visibility": "secret"}', "visibility"),
    ],
)
def test_bad_commands_get_an_error_and_the_room_goes_on(
    client: TestClient, llm: ScriptedLLM, raw: str, error: str
) -> None:
    llm.enqueue("still here")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_text(raw)
        assert error in wait_for(ws, "error")["error"]
        ws.send_bytes(b"\x00binary")
        assert "JSON as text" in wait_for(ws, "error")["error"]
        say(ws, "alice", "Kuu, still there?")
        reply = wait_for(ws, "decision")
    assert reply["text"] == "still here"


def test_malformed_transcript_names_the_line_and_plays_nothing(
    client: TestClient, transcript_text: str, bad_transcript_text: str
) -> None:
    r = client.post("/api/transcript?name=bad.jsonl&speed=instant", content=bad_transcript_text)
    assert r.status_code == 400
    body = r.json()
    assert body["ok"] is False
    [problem] = body["problems"]
    assert problem.startswith("bad.jsonl:2: not valid JSON")
    assert client.get("/api/state").json()["messages"] == []
    bad_speed = client.post("/api/transcript?speed=fast", content=transcript_text)
    assert bad_speed.status_code == 400 and "speed" in bad_speed.json()["error"]
    empty = client.post("/api/transcript?name=empty.jsonl", content="\n\n")
    assert empty.status_code == 400 and "no messages" in empty.json()["error"]


def test_transcript_plays_into_the_room_and_exports_with_the_bot(
    client: TestClient, llm: ScriptedLLM, transcript_text: str
) -> None:
    llm.enqueue("Count me in!")
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        r = client.post("/api/transcript?name=lunch.jsonl&speed=instant", content=transcript_text)
        assert r.status_code == 200, r.text
        assert r.json()["events"] == 5
        wait_for(ws, "playback", lambda m: not m["playing"] and m["done"] == 5)
    state = client.get("/api/state").json()
    texts = [(m["user"], m["text"]) for m in state["messages"]]
    assert ("Kuu", "Count me in!") in texts
    assert {"id": "ops", "visibility": "private"} in state["channels"]
    assert {"dave", "erin"} <= set(state["participants"])
    m2 = next(m for m in state["messages"] if m["id"] == "m2")
    assert m2["reactions"] == [{"emoji": "🍜", "user": "erin"}]
    # lunch plans? (m1) is an open question: its re-check is pending on the virtual clock
    assert state["clock"]["pending_timers"] >= 1

    export = client.get("/api/export")
    assert export.headers["content-disposition"].startswith("attachment;")
    parsed = parse_lines(export.text.splitlines(), "export.jsonl")
    assert parsed.setup["bot"] == "Kuu"
    users = [e.message.user.id for e in parsed.events if e.message]
    assert users == ["dave", "erin", "dave", "Kuu", "erin"]
    bot_line = next(e for e in parsed.events if e.message and e.message.user.id == "Kuu")
    assert bot_line.message is not None and bot_line.message.reply_to == "m3"
    assert bot_line.message.user.is_bot  # the persona's own line, as replay reads it

    # The same file again: ids get a prefix instead of clashing with the first load.
    again = client.post("/api/transcript?name=lunch.jsonl&speed=instant", content=transcript_text)
    assert again.status_code == 200
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        wait_for(ws, "playback", lambda m: not m["playing"])
    ids = [m["id"] for m in client.get("/api/state").json()["messages"]]
    assert "L1.m1" in ids or "L2.m1" in ids


def test_judge_prompts_without_a_label_are_paired_with_their_calls() -> None:
    room = Room(Persona(), VirtualClock(), Hub())
    room.dump_prompt("judge", [ChatMessage("user", "is this for me?")])
    room.dump_prompt("general-p1-reply", [ChatMessage("system", "be kind")])
    room.claim_prompt("general-p1-judge", "judge")
    room.claim_prompt("general-p2-judge", "judge")  # nothing parked any more
    assert room.prompts == {
        "general-p1-reply": "system: be kind",
        "general-p1-judge": "user: is this for me?",
    }


def test_the_default_judge_answers_an_addressed_message(
    settings: Settings, store_url: str, llm: ScriptedLLM
) -> None:
    app = create_app(settings, llm=llm, store_url=store_url, embedder=None, tick_s=0.05)
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        assert ws.receive_json()["judge"] != "QuestionJudge"
        llm.enqueue("I'm here!")
        say(ws, "alice", "Kuu, are you there?")
        decision = wait_for(ws, "decision", lambda m: m["action"] != "none")
    assert decision["action"] == "reply"
    assert decision["text"] == "I'm here!"
    assert decision["trace"]["contributions"]
