"""Transcripts played on the playground's clock at a speed, and stopped."""

from __future__ import annotations

import json
from datetime import datetime

from starlette.testclient import TestClient

from .conftest import wait_for


def lines(gap_s: float, n: int) -> str:
    return "\n".join(
        json.dumps({"id": f"s{i}", "t": i * gap_s, "user": "dave", "text": f"line {i}"})
        for i in range(n)
    )


def test_a_transcript_at_60x_keeps_its_spacing_in_virtual_time(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        r = client.post("/api/transcript?name=slow.jsonl&speed=60", content=lines(30, 3))
        assert r.status_code == 200
        assert wait_for(ws, "clock", lambda m: m["rate"] == 60)
        wait_for(ws, "playback", lambda m: not m["playing"])
        assert wait_for(ws, "clock")["rate"] == 1
    msgs = client.get("/api/state").json()["messages"]
    times = [datetime.fromisoformat(m["t"]) for m in msgs]
    assert [m["id"] for m in msgs] == ["s0", "s1", "s2"]
    assert (times[2] - times[0]).total_seconds() >= 60


def test_playback_can_be_stopped(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        r = client.post("/api/transcript?name=long.jsonl&speed=1", content=lines(3600, 5))
        assert r.status_code == 200
        wait_for(ws, "message", lambda m: m["message"]["id"] == "s0")
        ws.send_text(json.dumps({"type": "stop_playback"}))
        stopped = wait_for(ws, "playback", lambda m: not m["playing"])
    assert stopped["done"] < stopped["total"] == 5
    assert client.get("/api/state").json()["playback"]["playing"] is False
