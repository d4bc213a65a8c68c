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
from kuuki.decide.situation import Situation
from kuuki.domain import ActionKind, DecisionTrace, Stage, User, Verdict
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
    assert why.startswith("message t2-")
    assert "in #general, decided at 10:00:00 (just now): Replied: called by name\n" in why
    assert "addressed:name" in why
    assert re.search(r"llm: reply · scripted · \d+ ms · \d+\+\d+ tokens", why), why
    assert "guard: reply passed the guard" in why
    assert "{" not in why
    assert "(now in #random)\nbob in #random> /nope\n(unknown command /nope" in text
    assert text.endswith("bob in #random> /quit\n")
    assert "never read" not in text


class ThanksAndQuestions:
    """Thanks → an emoji; a call → a reply; a question → wait, and reply when it is still
    open five minutes later; the rest → nothing."""

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        text = situation.message.text
        if "thanks" in text:
            return Verdict(ActionKind.REACT, Stage.ADDRESSED, 50, "thanks", emoji="🙏")
        if situation.addressing:
            return Verdict(ActionKind.REPLY, Stage.ADDRESSED, 100, "addressed")
        if situation.extra.get("recheck"):
            return Verdict(ActionKind.REPLY, Stage.LOCAL, 70, "nobody answered the question")
        if text.endswith("?"):
            return Verdict(ActionKind.NONE, Stage.LOCAL, 30, "open question", recheck_s=300)
        return Verdict(ActionKind.NONE, Stage.LOCAL, 0, "nothing to add")


async def test_why_by_id_memory_a_clock_jump_and_no_typing_before_an_emoji(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    console = Console(out, echo=True)
    clock = VirtualClock()
    llm = ScriptedLLM("Try a cache mount.", "Hi!")
    app = await build_app(
        Settings(), clock=clock,
        outbox=TerminalOutbox(clock, User("Kuu", "Kuu", is_bot=True), console),
        llm=llm, judge_llm=None, store=f"sqlite:///{tmp_path}/chat.sqlite3",
        judge=ThanksAndQuestions(),
    )
    assert app.memory is not None
    room = TerminalRoom(app.engine.handle, app.engine.idle, clock, console,
                        memory=app.memory.snapshot, jump=clock.advance, bot_name="Kuu")
    app.engine.on_decision(room.on_decision)
    try:
        await room.run(lines(
            "alice: how do I keep the build cache?", "bob: thanks Kuu!", "/why t2", "/why t1",
            "/jump 5m", "/why t1", "/why t9", "/memory", "/jump soon", "/quit"))
    finally:
        await app.close()
    text = out.getvalue()
    thanks = text.split("bob: thanks Kuu!\n")[1].split("bob in #general> /why t2")[0]
    assert "(Kuu reacted 🙏)" in thanks and "typing" not in thanks  # an emoji is not typed
    why_t2 = text.split("> /why t2\n")[1].split("bob in #general> ")[0]
    assert why_t2.startswith("message t2-") and ": Reacted 🙏: thanks" in why_t2
    why_t1 = text.split("> /why t1\n")[1].split("bob in #general> ")[0]
    assert why_t1.startswith("message t1-") and "Stayed silent: open question" in why_t1
    jump = text.split("> /jump 5m\n")[1].split("bob in #general> ")[0]
    assert "(jumping 5 min ahead…)" in jump and "(Kuu is typing…)" in jump
    assert "Kuu: Try a cache mount." in jump and "(the clock moved 5 min ahead: it is now" in jump
    again = text.split("> /why t1\n")[2].split("bob in #general> ")[0]
    assert again.count("message t1-") == 2  # the first decision and the re-check's reply
    assert "Replied: nobody answered the question" in again
    assert "(no decision about t9 yet" in text
    memory = text.split("> /memory\n")[1].split("bob in #general> ")[0]
    assert memory.startswith("memory of #general")
    assert "People (2)" in memory and "- alice — stranger" in memory
    assert "(/jump: expected a duration such as 30m" in text


def test_a_line_typed_on_a_terminal_is_not_shown_twice() -> None:
    """A terminal shows what is typed on it (stdin a tty); only a line from a pipe or file
    is echoed by the room — whatever stdout is (`kuuki chat | tee log`)."""
    typed = io.StringIO()
    Console(typed, tty=False, echo=False).answered("alice: hi\n")
    assert typed.getvalue() == ""
    piped = io.StringIO()
    Console(piped, tty=True, echo=True).answered("alice: hi\n")
    assert piped.getvalue() == "alice: hi\n"


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
    # As a terminal's foreground process: Ctrl-C live. A test run started in the background
    # of a shell (`pytest &`: SIGINT ignored) would pass its SIG_IGN on, and Python keeps it.
    proc = subprocess.Popen([sys.executable, "-c", CLI, "chat"], stdin=child, stdout=child,
                            stderr=child, env=env, close_fds=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_kuuki_chat_piped_on_shows_each_typed_line_once(tmp_path: Path) -> None:
    """`kuuki chat | cat`: typed on a terminal (which shows the line), read by a pipe; the
    pipe gets the room's answers, not the line a second time."""
    import pty

    env = {**os.environ, "KUUKI_STORE_URL": f"sqlite:///{tmp_path}/chat.sqlite3"}
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", CLI, "chat", "--llm", "none"], stdin=child,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            close_fds=True)
    os.close(child)
    assert proc.stdout is not None
    piped = b""

    def read_until(token: bytes) -> None:
        nonlocal piped
        while token not in piped:
            ready, _, _ = select.select([proc.stdout], [], [], 120)
            assert ready, f"waited for {token!r} after: {piped.decode(errors='replace')}"
            chunk = os.read(proc.stdout.fileno(), 4096)  # type: ignore[union-attr]
            assert chunk, piped.decode(errors="replace")
            piped += chunk

    try:
        read_until(b"you in #general> ")
        os.write(main, b"alice: hello there\n")
        read_until(b"(you are now alice)")
        os.write(main, b"/quit\n")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        shown = b""
        while select.select([main], [], [], 0)[0]:
            try:
                shown += os.read(main, 4096)
            except OSError:
                break
        os.close(main)
        proc.stdout.close()
    assert b"alice: hello there" not in piped  # the terminal showed it; the pipe did not
    assert shown.count(b"alice: hello there") == 1  # the terminal's own echo, once
