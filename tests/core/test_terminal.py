from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.domain import User
from kuuki.judge.base import AddressedOnlyJudge
from kuuki.platforms.terminal import TerminalOutbox, TerminalRoom
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item + "\n"


async def test_terminal_room_speaks_as_anyone_answers_inline_and_explains(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    clock = VirtualClock()
    llm = ScriptedLLM("Hi Bob! Tea sounds good.")
    app = await build_app(
        Settings(),
        clock=clock,
        outbox=TerminalOutbox(clock, User("Kuu", "Kuu", is_bot=True), out),
        llm=llm,
        judge_llm=None,
        store_url=f"sqlite:///{tmp_path}/chat.sqlite3",
        judge=AddressedOnlyJudge(),
    )
    room = TerminalRoom(app.engine.handle, app.engine.idle, clock, out)
    app.engine.on_decision(room.on_decision)
    try:
        await room.run(
            lines("alice: anyone up for tea?", "/as bob", "Kuu, tea or coffee?", "/why", "/quit",
                  "never read")
        )
    finally:
        await app.close()
    text = out.getvalue()
    assert "Kuu: Hi Bob! Tea sounds good." in text
    assert "(you are now bob)" in text
    assert llm.history[0].messages[-1].content == "bob: tea or coffee?"  # the message to answer
    assert "alice:\nanyone up for tea?" in llm.history[0].prompt
    # /why shows the decision about bob's message, with the rule that fired.
    why = text.split("Kuu: Hi Bob! Tea sounds good.")[1]
    assert "reply (stage addressed" in why and "addressed:name" in why
    assert "never read" not in text


async def test_a_second_session_on_the_same_store_is_heard(tmp_path: Path) -> None:
    for attempt in range(2):
        out = io.StringIO()
        clock = VirtualClock()
        app = await build_app(
            Settings(),
            clock=clock,
            outbox=TerminalOutbox(clock, User("Kuu", "Kuu", is_bot=True), out),
            llm=ScriptedLLM(f"answer {attempt}"),
            judge_llm=None,
            store_url=f"sqlite:///{tmp_path}/same.sqlite3",
            judge=AddressedOnlyJudge(),
        )
        room = TerminalRoom(app.engine.handle, app.engine.idle, clock, out)
        try:
            await room.run(lines("bob: Kuu, hello?"))
        finally:
            await app.close()
        assert f"Kuu: answer {attempt}" in out.getvalue()
