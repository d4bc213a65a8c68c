from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.testclient import WebSocketTestSession as WS

from kuuki.decide.judge.base import Judge
from kuuki.decide.situation import Situation
from kuuki.domain import ActionKind, DecisionTrace, Stage, Verdict
from kuuki.platforms.playground import create_app
from kuuki.settings import Settings, load_settings
from kuuki.testing.llm import REPLIES, ScriptedLLM, ScriptedLocalLLM

REPO = Path(__file__).resolve().parents[3]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"

TRANSCRIPT = "\n".join(
    json.dumps(line, ensure_ascii=False)
    for line in [
        {"setup": {"bot": "Kuu", "language": "en"}},
        {"id": "m1", "t": 0, "channel": "general", "user": "dave", "text": "lunch plans?"},
        {"id": "m2", "t": 20, "channel": "general", "user": "erin", "text": "ramen again"},
        {"id": "m3", "t": 40, "channel": "general", "user": "dave", "text": "Kuu, you in?"},
        {
            "t": 45,
            "channel": "general",
            "user": "erin",
            "kind": "reaction",
            "target": "m2",
            "emoji": "🍜",
        },
        {
            "id": "m4",
            "t": 60,
            "channel": "ops",
            "user": "erin",
            "text": "deploy done",
            "channel_visibility": "private",
        },
    ]
)

BAD_TRANSCRIPT = (
    '{"id": "m1", "t": 0, "user": "dave", "text": "fine"}\n'
    '{"id": "m2", "t": 5, "user": "erin", "text": "broken\n'
    '{"id": "m3", "t": 9, "user": "erin", "text": "also fine"}\n'
)


def loading_llm() -> ScriptedLocalLLM:
    """A local model the test lets load (`loaded.set()`), scripted like the `llm` fixture."""
    return ScriptedLocalLLM(name="tiny-local", loaded=False, queue_for=REPLIES)


class QuestionJudge:
    """A judge with a timer: addressed → reply; an open question → wait, and if it is
    still open when re-judged five minutes later, reply; anything else → stay silent."""

    RECHECK_S = 300.0

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        if situation.addressing:
            trace.add(f"addressed:{situation.addressing.kind}", 100, "spoken to directly")
            return Verdict(ActionKind.REPLY, Stage.ADDRESSED, 100, "addressed")
        if situation.extra.get("recheck"):
            trace.add("unanswered question", 70, "nobody answered for 5 minutes")
            return Verdict(ActionKind.REPLY, Stage.LOCAL, 70, "nobody answered the question")
        if situation.message.text.rstrip().endswith("?"):
            trace.add("open question", 30, "give the others time")
            return Verdict(
                ActionKind.NONE,
                Stage.LOCAL,
                30,
                "open question: wait for the others",
                recheck_s=self.RECHECK_S,
            )
        trace.add("small talk", -10)
        return Verdict(ActionKind.NONE, Stage.LOCAL, -10, "nothing to add")


@pytest.fixture
def llm() -> ScriptedLLM:
    """The scripted model whose shared queue answers only replies and acks (and their
    guarded retries); anything else the engine asks in the background (memory jobs,
    judging) gets the passive default, so a scripted reply is never eaten by a summary that
    happened to run first. Clearing its `hold` makes the next replies wait."""
    return ScriptedLLM(queue_for=REPLIES)


@pytest.fixture
def transcript_text() -> str:
    return TRANSCRIPT


@pytest.fixture
def bad_transcript_text() -> str:
    return BAD_TRANSCRIPT


@pytest.fixture
def judge() -> QuestionJudge:
    return QuestionJudge()


@pytest.fixture
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def settings() -> Settings:
    return load_settings(env={})


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/playground.sqlite3"


@pytest.fixture
def client(
    settings: Settings, store_url: str, llm: ScriptedLLM, judge: Judge
) -> Iterator[TestClient]:
    app = create_app(
        settings, llm=llm, judge=judge, store_url=store_url, embedder=None, tick_s=0.05
    )
    with TestClient(app) as c:
        yield c


# -- talking to the page's WebSocket (Starlette's TestClient) --------------------------------

Pred = Callable[[dict[str, Any]], bool]


def wait_for(ws: WS, kind: str, pred: Pred = lambda m: True, limit: int = 2000) -> dict[str, Any]:
    """The next server message of `kind` matching `pred` (clock ticks keep messages coming)."""
    for _ in range(limit):
        msg = ws.receive_json()
        if msg["type"] == kind and pred(msg):
            return msg
    raise AssertionError(f"no {kind} message arrived")


def collect_until(ws: WS, kind: str, pred: Pred) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for _ in range(400):
        msg = ws.receive_json()
        seen.append(msg)
        if msg["type"] == kind and pred(msg):
            return seen
    raise AssertionError(f"no {kind} message arrived")


def say(ws: WS, user: str, text: str, channel: str = "general") -> None:
    ws.send_text(json.dumps({"type": "say", "user": user, "channel": channel, "text": text}))


