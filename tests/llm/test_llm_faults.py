"""A failing OpenAI-compatible server, through the whole engine (issue 11).

The real back-end (`OpenAICompatLLM`, the openai SDK, HTTP) talks to a local server that
misbehaves in one way per test. Every addressed message must end in a reply or the
documented fallback (a reaction), every call must be counted and recorded in the trace,
and the channel's other messages must not wait behind a slow call longer than the reply
budget. Time is the virtual clock's: the budget and Retry-After are asserted through it,
never by measuring.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from kuuki.app import App, build_app
from kuuki.clock import VirtualClock
from kuuki.domain import ActionKind, Channel, ChatEvent, Decision, EventKind, Message, User
from kuuki.llm.openai_compat import OpenAICompatLLM
from kuuki.settings import LLMSettings, Persona, Settings
from kuuki.testing import RecordingOutbox
from kuuki.testing.faulty_llm import FaultyLLMServer

GENERAL = Channel("general", "general")
ALICE = User("alice", "alice")
BOB = User("bob", "bob")
BUDGET_S = 15.0


async def no_wait(_: float) -> None:
    """Backoff pauses between retries: taken, not waited (the budget is the clock's)."""


@dataclass
class Room:
    app: App
    clock: VirtualClock
    outbox: RecordingOutbox
    server: FaultyLLMServer
    decisions: list[Decision] = field(default_factory=list)
    n: int = 0
    _decided: asyncio.Event = field(default_factory=asyncio.Event)

    def on_decision(self, decision: Decision) -> None:
        self.decisions.append(decision)
        self._decided.set()

    async def post(self, user: User, text: str) -> str:
        self.n += 1
        mid = f"m{self.n}"
        msg = Message(mid, GENERAL.id, user, text, self.clock.now())
        assert await self.app.engine.handle(
            ChatEvent(EventKind.POSTED, GENERAL, mid, msg.ts, message=msg)
        )
        return mid

    def decision(self, mid: str) -> Decision:
        found = [d for d in self.decisions if d.message_id == mid]
        assert found, f"no decision about {mid}"
        return found[-1]

    async def decided(self, mid: str) -> Decision:
        """Once the engine has decided about ``mid`` (the HTTP calls behind it are real)."""
        async with asyncio.timeout(10):
            while not any(d.message_id == mid for d in self.decisions):
                self._decided.clear()
                await self._decided.wait()
        return self.decision(mid)


@pytest.fixture
async def room(tmp_path: Path) -> AsyncIterator[Room]:
    server = FaultyLLMServer(["ok"])
    await server.start()
    clock = VirtualClock()
    outbox = RecordingOutbox(clock, User("Kuu", "Kuu", is_bot=True))
    llm = OpenAICompatLLM(
        "faulty-model", server.base_url, timeout_s=30, max_retries=2, sleep=no_wait
    )
    settings = Settings(
        persona=Persona(language="en"),
        llm=LLMSettings(backend="openai", reply_budget_s=BUDGET_S),
        judge_mode="rules",
    )
    app = await build_app(
        settings, clock=clock, outbox=outbox, llm=llm, judge_llm=None,
        store=f"sqlite:///{tmp_path}/faults.sqlite3", embedder=None,
    )
    r = Room(app, clock, outbox, server)
    app.engine.on_decision(r.on_decision)
    try:
        yield r
    finally:
        server.release()
        try:
            await app.close()
            await llm.aclose()
        finally:
            await server.close()


def reacted(d: Decision) -> bool:
    return d.action.kind is ActionKind.REACT and d.decided is ActionKind.REPLY


@pytest.mark.parametrize("fault", ["500", "nonjson", "notcompletion", "close"])
async def test_a_broken_answer_ends_in_the_fallback_and_is_counted(room: Room, fault: str) -> None:
    room.server.set_script([fault])
    mid = await room.post(ALICE, "Kuu, what time is the meeting?")
    await room.app.engine.idle()
    d = room.decision(mid)
    assert reacted(d), d
    assert "reacted" in d.reason
    calls = [c for c in d.trace.llm_calls if c.purpose == "reply"]
    assert calls and calls[0].outcome == "unavailable"
    assert room.app.engine.usage.calls >= 1  # the failed call is counted
    assert room.outbox.sent[-1][1].emoji == d.action.emoji


@pytest.mark.parametrize("fault", ["500", "nonjson", "notcompletion", "close"])
async def test_repeated_failures_open_the_breaker(room: Room, fault: str) -> None:
    room.server.set_script([fault])
    for i in range(3):
        await room.post(ALICE, f"Kuu, question {i}?")
        await room.app.engine.idle()
    asked = len(room.server.requests)
    mid = await room.post(ALICE, "Kuu, still there?")
    await room.app.engine.idle()
    d = room.decision(mid)
    assert reacted(d)
    assert [c.outcome for c in d.trace.llm_calls] == ["skipped"]
    assert "paused after failures" in d.reason
    assert len(room.server.requests) == asked  # the breaker kept the call off the server


async def test_a_hung_server_costs_one_reply_budget_and_holds_nothing_else(room: Room) -> None:
    room.server.set_script(["hang"])
    started = room.clock.now()
    asked = await room.post(ALICE, "Kuu, can you check the build?")
    await room.server.wait_for(lambda: len(room.server.requests) == 1)
    after = await room.post(BOB, "I'll grab lunch meanwhile")
    assert not room.decisions  # both wait: the reply is being written
    await room.clock.advance(BUDGET_S)
    d = await room.decided(asked)
    later = await room.decided(after)
    await room.app.engine.idle()
    assert reacted(d)
    assert f"not written within the reply budget ({BUDGET_S:g} s)" in d.reason
    assert d.trace.llm_calls[0].outcome == "timeout"
    # The message behind it waited the budget, not the back-end's 30 s timeout.
    assert later.decided_at - started <= timedelta(seconds=BUDGET_S)


async def test_after_a_hang_the_next_mention_does_not_pay_again_once_the_breaker_opens(
    room: Room,
) -> None:
    room.server.set_script(["hang"])
    for i in range(3):
        mid = await room.post(ALICE, f"Kuu, try {i}?")
        await room.server.wait_for(lambda i=i: len(room.server.requests) == i + 1)
        await room.clock.advance(BUDGET_S)
        assert reacted(await room.decided(mid))
    before = room.clock.now()
    mid = await room.post(ALICE, "Kuu, and now?")
    d = await room.decided(mid)
    assert reacted(d) and "paused after failures" in d.reason
    assert d.decided_at == before  # answered at once, no budget spent
    assert len(room.server.requests) == 3


async def test_retry_after_is_honoured_through_the_breaker(room: Room) -> None:
    room.server.retry_after = 30
    room.server.set_script(["429", "ok"])
    first = await room.post(ALICE, "Kuu, are you busy?")
    await room.app.engine.idle()
    d1 = room.decision(first)
    assert reacted(d1)
    assert len(room.server.requests) == 1  # not retried every few seconds meanwhile
    await room.clock.advance(10)
    second = await room.post(ALICE, "Kuu, now?")
    await room.app.engine.idle()
    d2 = room.decision(second)
    assert reacted(d2) and [c.outcome for c in d2.trace.llm_calls] == ["skipped"]
    assert len(room.server.requests) == 1
    await room.clock.advance(21)  # 31 s after the 429: Retry-After has passed
    third = await room.post(ALICE, "Kuu, what about now?")
    await room.app.engine.idle()
    d3 = room.decision(third)
    assert d3.action.kind is ActionKind.REPLY
    assert d3.action.text == room.server.reply_text
    assert len(room.server.requests) == 2


async def test_a_long_retry_after_is_bounded(room: Room) -> None:
    room.server.retry_after = 86_400  # "come back tomorrow"
    room.server.set_script(["429", "ok"])
    await room.post(ALICE, "Kuu, hello?")
    await room.app.engine.idle()
    await room.clock.advance(301)  # the bound: five minutes
    mid = await room.post(ALICE, "Kuu, hello again?")
    await room.app.engine.idle()
    assert room.decision(mid).action.kind is ActionKind.REPLY


@pytest.mark.parametrize("fault", ["hang", "429", "500", "nonjson", "notcompletion", "close"])
async def test_every_fault_ends_within_the_budget_and_holds_the_channel_no_longer(
    room: Room, fault: str
) -> None:
    """The issue's list, one server fault each: the addressed message ends in the fallback
    and the next message of the channel is handled, both within the reply budget."""
    room.server.set_script([fault])
    started = room.clock.now()
    asked = await room.post(ALICE, "Kuu, is the release branch cut?")
    await room.server.wait_for(lambda: len(room.server.requests) >= 1)
    after = await room.post(BOB, "I think it was yesterday")
    await room.clock.advance(BUDGET_S)
    d = await room.decided(asked)
    later = await room.decided(after)
    await room.app.engine.idle()
    assert reacted(d), d
    assert room.outbox.sent[-1][1].emoji == d.action.emoji  # the fallback was sent
    assert d.decided_at - started <= timedelta(seconds=BUDGET_S)
    assert later.decided_at - started <= timedelta(seconds=BUDGET_S)
    assert room.app.engine.usage.calls >= 1
