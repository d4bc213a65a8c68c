from __future__ import annotations

import io
import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.decide.judge.base import AddressedOnlyJudge
from kuuki.domain import User
from kuuki.platforms.terminal import Console, TerminalOutbox, TerminalRoom
from kuuki.run import run_chat
from kuuki.settings import Settings, load_settings
from kuuki.testing.llm import ScriptedLLM, ScriptedLocalLLM


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item + "\n"


async def test_terminal_room_speaks_as_anyone_answers_inline_and_explains(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    console = Console(out)
    clock = VirtualClock()
    llm = ScriptedLLM("Hi Bob! Tea sounds good.")
    app = await build_app(
        Settings(),
        clock=clock,
        outbox=TerminalOutbox(clock, User("Kuu", "Kuu", is_bot=True), console),
        llm=llm,
        judge_llm=None,
        store=f"sqlite:///{tmp_path}/chat.sqlite3",
        judge=AddressedOnlyJudge(),
    )
    room = TerminalRoom(app.engine.handle, app.engine.idle, clock, console)
    app.engine.on_decision(room.on_decision)
    try:
        await room.run(
            lines("alice: anyone up for tea?", "/as bob", "Kuu, tea or coffee?", "/why",
                  "/channel random", "/nope", "/quit", "never read")
        )
    finally:
        await app.close()
    text = out.getvalue()
    # The prompt says who speaks where; the typed line follows it (echoed: not a terminal).
    assert "you in #general> alice: anyone up for tea?\n(you are now alice)\n" in text
    assert "alice in #general> /as bob\n(you are now bob)\n" in text
    # A line without `name:` says who it was sent as.
    assert "bob in #general> Kuu, tea or coffee?\n(sent as bob in #general)\n" in text
    assert "Kuu: Hi Bob! Tea sounds good." in text
    assert "(you are now bob)" in text
    assert llm.history[0].messages[-1].content == "bob: tea or coffee?"  # the message to answer
    assert "alice:\nanyone up for tea?" in llm.history[0].prompt
    # /why tells the decision about bob's message in sentences, not JSON.
    why = text.split("bob in #general> /why\n")[1].split("bob in #general> ")[0]
    assert why.startswith(
        "message t2-") and "in #general: reply (stage addressed, score 100) — " in why
    assert "addressed:name" in why
    assert re.search(r"llm: reply · scripted · \d+ ms · \d+\+\d+ tokens", why), why
    assert "guard: reply passed the guard" in why
    assert "{" not in why
    assert "(now in #random)\nbob in #random> /nope\n(unknown command /nope" in text
    assert text.endswith("bob in #random> /quit\n")
    assert "never read" not in text


async def test_a_second_session_on_the_same_store_is_heard(tmp_path: Path) -> None:
    for attempt in range(2):
        out = io.StringIO()
        console = Console(out)
        clock = VirtualClock()
        app = await build_app(
            Settings(),
            clock=clock,
            outbox=TerminalOutbox(clock, User("Kuu", "Kuu", is_bot=True), console),
            llm=ScriptedLLM(f"answer {attempt}"),
            judge_llm=None,
            store=f"sqlite:///{tmp_path}/same.sqlite3",
            judge=AddressedOnlyJudge(),
        )
        room = TerminalRoom(app.engine.handle, app.engine.idle, clock, console)
        try:
            await room.run(lines("bob: Kuu, hello?"))
        finally:
            await app.close()
        assert f"Kuu: answer {attempt}" in out.getvalue()


async def test_chat_loads_the_model_once_before_the_first_prompt(tmp_path: Path) -> None:
    out = io.StringIO()
    llm = ScriptedLocalLLM("Hello Alice!")  # a local model: loaded at start-up
    code = await run_chat(
        load_settings(env={}), lines=lines("alice: Kuu, are you there?"), out=out, llm=llm,
        judge_llm=None, judge=AddressedOnlyJudge(), embedder=None,
        store=f"sqlite:///{tmp_path}/chat.sqlite3",
    )
    text = out.getvalue()
    assert code == 0 and llm.warms == 1
    loading = text.index("(loading the model local-test…)\n")
    ready = text.index("(model local-test ready in ")
    prompt = text.index("you in #general> ")
    assert loading < ready < prompt
    assert "Kuu: Hello Alice!" in text
    assert "tiny built-in model" not in text  # a model of one's own gets no note


async def test_a_line_typed_while_the_bot_speaks_on_its_own_keeps_its_prompt() -> None:
    out = io.StringIO()
    console = Console(out, tty=True)
    console.ask("alice in #general> ")
    console.line("Kuu: picked up your question")  # a timer's reply, while the prompt waits
    assert out.getvalue() == (
        "alice in #general> \r\x1b[KKuu: picked up your question\nalice in #general> ")


CLI = "import sys; from kuuki.cli import main; raise SystemExit(main(sys.argv[1:]))"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_leaves_kuuki_chat_cleanly(tmp_path: Path) -> None:
    """The real command on a pseudo-terminal, with the shipped model: Ctrl-C at the prompt
    (SIGINT, as the terminal sends it to the foreground process)."""
    import pty

    env = {**os.environ, "KUUKI_STORE_URL": f"sqlite:///{tmp_path}/chat.sqlite3",
           "KUUKI_LLM": "embedded"}
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", CLI, "chat"], stdin=child, stdout=child,
                            stderr=child, env=env, close_fds=True)
    os.close(child)
    seen = b""

    def read_until(token: bytes | None) -> None:
        nonlocal seen
        while token is None or token not in seen:
            ready, _, _ = select.select([main], [], [], 120)
            assert ready, f"waited for {token!r} after: {seen.decode(errors='replace')}"
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the child is gone and the terminal closed
                return
            if not chunk:
                return
            seen += chunk

    try:
        read_until(b"you in #general> ")
        proc.send_signal(signal.SIGINT)
        read_until(None)  # everything, until the child has closed the terminal
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    text = seen.decode(errors="replace")
    assert code == 130, text
    assert "(leaving kuuki chat)" in text
    assert "Traceback" not in text and "Error" not in text, text
    # What the terminal showed before the prompt: the tiny model's note and its loading.
    assert "A tiny built-in model (SmolLM2-135M-Instruct) writes the replies" in text
    assert "KUUKI_LLM_MODEL_PATH=/path/model.gguf" in text
    assert text.index("(loading the model SmolLM2-135M-Instruct…)") < text.index(
        "(model SmolLM2-135M-Instruct ready in ")
