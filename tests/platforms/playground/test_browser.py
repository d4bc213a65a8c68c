"""The playground in a real headless browser (Debian's chromium driven by Playwright).

One scenario, the way a person would try kuuki: the model loads (the page says so), two
people talk, the bot answers when addressed, the card says why, the clock jumps (and says
what it waits for) and an unanswered question is re-judged, a reply times out and the card
is headed by the timeout, the memory panel reads as sentences, a transcript is loaded and
the room is exported. A second session runs the tiny shipped model, whose note says so.
Screenshots go to test-artifacts/screenshots/ for a person to look at.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright, expect

from kuuki.decide.judge.base import Judge
from kuuki.decide.situation import Situation
from kuuki.domain import DecisionTrace, Verdict, Visibility
from kuuki.errors import LLMTimeout
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.memory.channel_context import ChannelContext
from kuuki.memory.fact_store import NewFact
from kuuki.platforms.playground import create_app, running_server
from kuuki.platforms.playground.model_status import PLUG_IN
from kuuki.replay.transcript import parse_lines
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLocalLLM
from kuuki.testing.services import service_missing

from .conftest import QuestionJudge, loading_llm

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 15_000



class LearnedModelsJudge(QuestionJudge):
    """The QuestionJudge, with what the learned addressee and seat models write into the
    trace of a message addressed to the bot (issue 25), for the card to show."""

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Verdict:
        if situation.addressing:
            other = "bob" if situation.message.user.name == "alice" else "alice"
            trace.features["addressee"] = {
                "to": "Kuu", "p": 0.91, "bot": 0.91,
                "candidates": {"Kuu": 0.91, other: 0.06, "room": 0.03},
                "top": [["@mention", 3.2], ["a question", 0.7]], "threshold": 0.6}
            trace.features["seat"] = {
                "p": 0.88, "short": 0.1, "score": 88.0,
                "top": [["p(to the seat)", 2.4], ["turns since the seat spoke", -0.2]]}
        return await super().judge(situation, trace)


@pytest.fixture
def judge() -> Judge:
    return LearnedModelsJudge()


@pytest.fixture(autouse=True)
def _chromium() -> None:
    """Skip without Debian's chromium; under CI=true (.ci/run installs it) fail."""
    if shutil.which(CHROMIUM) is None:
        service_missing("chromium", f"no browser at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture
async def served(
    settings: Settings, store_url: str, judge: Judge
) -> AsyncIterator[tuple[str, ScriptedLocalLLM, Any]]:
    llm = loading_llm()
    app = create_app(settings, llm=llm, judge=judge, store_url=store_url, embedder=None)
    try:
        async with running_server(app, port=0) as port:
            yield f"http://127.0.0.1:{port}/", llm, app
    finally:
        llm.loaded.set()
        llm.hold.set()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            await b.close()


async def send(page: Any, text: str) -> None:
    box = page.get_by_test_id("message-input")
    await box.fill(text)
    await box.press("Enter")


async def test_a_person_tries_kuuki_in_the_browser(
    served: tuple[str, ScriptedLocalLLM, Any],
    browser: Any,
    tmp_path: Path,
    screenshots: Path,
    transcript_text: str,
    bad_transcript_text: str,
) -> None:
    url, llm, app = served
    expect.set_options(timeout=TIMEOUT_MS)
    context = await browser.new_context(
        viewport={"width": 1280, "height": 800}, accept_downloads=True
    )
    page = await context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    await page.goto(url)
    await expect(page.get_by_test_id("persona")).to_contain_text("bot: Kuu")

    # The model loads once, at start-up, and the page says so until it is ready.
    state = page.get_by_test_id("model-state")
    await expect(state).to_have_text("loading the model tiny-local…")
    await expect(page.locator("#chat-hint")).to_contain_text("the model is loading")
    await expect(page.get_by_test_id("model-note")).to_be_hidden()  # not the tiny built-in one
    await page.screenshot(path=str(screenshots / "playground-loading-1280x800.png"))
    llm.loaded.set()
    await expect(state).to_be_hidden()
    await expect(page.get_by_test_id("persona")).to_contain_text("model: tiny-local (loaded in")
    await expect(page.locator("#chat-hint")).to_have_text("")

    # Two people talk; small talk gets no answer, but a decision all the same.
    await send(page, "morning all")
    messages = page.get_by_test_id("message")
    await expect(messages.filter(has_text="morning all")).to_be_visible()
    first_card = page.get_by_test_id("decision").first
    await expect(first_card.get_by_test_id("decision-action")).to_have_text("none")
    await expect(first_card.get_by_test_id("decision-reason")).to_have_text("nothing to add")
    await expect(first_card.get_by_test_id("card-addressee")).to_have_count(0)  # no models
    await expect(first_card.get_by_test_id("card-seat")).to_have_count(0)

    await page.locator('[data-speaker="bob"]').click()
    await expect(page.locator('[data-speaker="bob"]')).to_have_attribute("aria-checked", "true")
    llm.enqueue("Sunny and 24°C, Bob. Bring a hat!")
    await send(page, "@Kuu what's the weather going to be like tomorrow?")
    await expect(messages.filter(has_text="weather going")).to_contain_text("bob")
    bot_reply = page.get_by_test_id("bot-message").filter(has_text="Bring a hat!")
    await expect(bot_reply).to_be_visible()
    reply_card = page.get_by_test_id("decision").first
    await expect(reply_card.get_by_test_id("decision-action")).to_have_text("reply")
    await expect(reply_card.get_by_test_id("rule").first).to_contain_text("addressed:mention")
    await expect(reply_card.get_by_test_id("card-calls")).to_contain_text(
        re.compile(r"reply · tiny-local · \d+ ms · \d+\+\d+ tokens"))
    await expect(reply_card.get_by_test_id("card-features")).to_contain_text(
        "language: English (en)")
    await expect(reply_card.get_by_test_id("card-guard")).to_have_text("reply passed the guard")
    await expect(reply_card.get_by_test_id("card-state")).to_contain_text("last replied")
    # The learned models: who the message is for, a bar each, and whether its seat speaks.
    addressee = reply_card.get_by_test_id("card-addressee")
    await expect(addressee.get_by_test_id("addressee-candidate")).to_have_text(
        ["Kuu (the bot)", "alice", "the room"])
    await expect(addressee.locator(".pts")).to_have_text(["91 %", "6 %", "3 %"])
    await expect(addressee.locator(".bar span").first).to_have_attribute(
        "style", re.compile(r"width: 91(\.\d+)?%"))
    await expect(addressee.locator(".model-notes")).to_have_text(
        "counts as addressed at ≥ 60 %to Kuu (the bot) because: @mention +3.2, a question +0.7")
    seat = reply_card.get_by_test_id("card-seat")
    await expect(seat.get_by_test_id("seat-p")).to_have_text("speaks now")
    await expect(seat.locator(".pts")).to_have_text("88 %")
    await expect(seat.locator(".model-notes")).to_have_text(
        "short remark 10 %because: p(to the seat) +2.4, turns since the seat spoke -0.2")
    judged = await reply_card.get_by_test_id("card-features").inner_text()
    assert "addressee" not in judged and "seat" not in judged, judged  # told once, above
    await reply_card.screenshot(path=str(screenshots / "playground-card-models.png"))

    # A third person joins and asks an open question nobody answers …
    await page.get_by_test_id("add-participant").locator("input").fill("carol")
    await page.get_by_test_id("add-participant").locator("button").click()
    await expect(page.locator('[data-speaker="carol"]')).to_have_attribute("aria-checked", "true")
    await send(page, "does anyone know a good ramen place near the office?")
    await expect(page.get_by_test_id("decision").first).to_contain_text("open question")
    await expect(page.get_by_test_id("timers")).to_contain_text(re.compile(r"next in [45] min"))
    # … and five virtual minutes later the bot picks it up, on a timer. The reply takes its
    # time: the jump button says it is jumping, and what it waits for.
    llm.hold.clear()
    llm.enqueue("Menya Sora on 3rd street does a great shoyu ramen.")
    jump = page.get_by_test_id("jump-5m")
    await jump.click()
    await expect(jump).to_have_text("jumping +5 min…")
    await expect(jump).to_be_disabled()
    await expect(page.get_by_test_id("jump-1h")).to_be_disabled()
    await expect(page.get_by_test_id("timers")).to_contain_text(
        "waiting for: Kuu writing a reply in #general")
    await page.screenshot(path=str(screenshots / "playground-jumping-1280x800.png"))
    llm.hold.set()
    await expect(page.get_by_test_id("bot-message").filter(has_text="shoyu ramen")).to_be_visible()
    await expect(jump).to_have_text("+5 min")
    await expect(jump).to_be_enabled()
    timer_card = page.get_by_test_id("decision").first
    await expect(timer_card.get_by_test_id("timer-tag")).to_be_visible()
    await expect(timer_card.get_by_test_id("decision-action")).to_have_text("reply")
    await expect(timer_card).to_contain_text("unanswered question")
    await page.screenshot(path=str(screenshots / "playground-1280x800.png"))

    # The prompt behind a reply, on demand.
    await timer_card.locator(".calls button").first.click()
    await expect(page.get_by_test_id("prompt-dialog")).to_contain_text("ramen place")
    await page.get_by_test_id("prompt-dialog").get_by_role("button", name="Close").click()

    # A reply that times out: the card's headline says so, and what the bot did instead.
    await page.locator('[data-speaker="alice"]').click()
    llm.enqueue(LLMTimeout("tiny-local took longer than 20s"))
    await send(page, "@Kuu are you still there?")
    timeout_card = page.get_by_test_id("decision").first
    await expect(timeout_card.get_by_test_id("decision-reason")).to_have_text(
        "addressed → reply timed out: reacted 🤔")
    await expect(timeout_card).to_have_class(re.compile(r"\bfallback\b"))
    await expect(timeout_card.get_by_test_id("card-guard")).to_have_text(
        "fallback: reacted 🤔 instead")
    await expect(timeout_card.get_by_test_id("card-calls")).to_contain_text("timed out")
    await expect(messages.filter(has_text="still there").get_by_test_id("reaction")).to_have_text(
        "🤔")
    await page.screenshot(path=str(screenshots / "playground-fallback-1280x800.png"))

    # The memory panel: what the memory layer holds, in sentences.
    memory = app.state.playground.engine_app.memory
    now = app.state.playground.clock.now()
    ctx = ChannelContext("general", summary="Bob asked about the weather; Carol wants ramen.",
                         mood="curious", topic_keywords=["weather", "ramen"], last_updated=now)
    await memory.book.put("channel", "general", "context", ctx.to_json(),
                          visibility=Visibility.PUBLIC, workspace="default",
                          source_channel_id="general", source_user_ids=["bob", "carol"], at=now)
    general = memory.registry.get("general")
    await memory.facts.add_many(
        general, [NewFact("Carol likes ramen", ("carol",), ("ramen",), 0.9, True)], now)
    await page.get_by_test_id("tab-memory").click()
    panel = page.get_by_test_id("memory")
    await expect(panel).to_contain_text("Carol wants ramen")
    await expect(panel).to_contain_text("mood: curious · topics: weather, ramen")
    await expect(panel).to_contain_text("People (3)")
    await expect(panel).to_contain_text("bob — stranger")
    await expect(panel).to_contain_text("1 message seen · talked to Kuu once")
    await expect(panel).to_contain_text("Carol likes ramen")
    await expect(panel).to_contain_text("about carol · from #general · learned ")
    shown = await panel.inner_text()
    assert "{" not in shown and "2026-" not in shown, shown  # the raw JSON stays folded
    await page.screenshot(path=str(screenshots / "playground-1280x800-memory.png"))
    await page.get_by_test_id("tab-trace").click()

    # A transcript with a broken line is refused, naming the line.
    bad = tmp_path / "broken.jsonl"
    bad.write_text(bad_transcript_text, encoding="utf-8")
    await page.get_by_test_id("speed").select_option("instant")
    await page.get_by_test_id("transcript-file").set_input_files(str(bad))
    await expect(page.get_by_test_id("toast-error")).to_contain_text("broken.jsonl:2:")

    # A good one plays into the room (the bot answers its name call in it).
    good = tmp_path / "lunch.jsonl"
    good.write_text(transcript_text, encoding="utf-8")
    llm.enqueue("Count me in!")
    await page.get_by_test_id("transcript-file").set_input_files(str(good))
    await expect(page.get_by_test_id("toast-ok")).to_contain_text("Playing 5 events")
    await expect(page.get_by_test_id("playback")).to_contain_text("5/5 played")
    await expect(page.get_by_test_id("bot-message").filter(has_text="Count me in!")).to_be_visible()
    await expect(messages.filter(has_text="ramen again").get_by_test_id("reaction")).to_have_text(
        "🍜"
    )

    # Export: a transcript in the same format, with the bot's messages in it.
    async with page.expect_download() as info:
        await page.get_by_test_id("export").click()
    download = await info.value
    saved = tmp_path / "export.jsonl"
    await download.save_as(str(saved))
    exported = parse_lines(saved.read_text(encoding="utf-8").splitlines(), str(saved))
    said = [(e.message.user.id, e.message.text) for e in exported.events if e.message]
    assert ("bob", "@Kuu what's the weather going to be like tomorrow?") in said
    assert ("Kuu", "Sunny and 24°C, Bob. Bring a hat!") in said
    assert ("Kuu", "Count me in!") in said
    assert ("erin", "deploy done") in said

    # A phone-sized window: the panels stack and the chat still works.
    phone = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    small = await phone.new_page()
    await small.goto(url)
    await expect(
        small.get_by_test_id("bot-message").filter(has_text="Count me in!")
    ).to_be_visible()
    await expect(small.get_by_test_id("message-input")).to_be_visible()
    await small.screenshot(path=str(screenshots / "playground-390x844.png"))
    await small.screenshot(path=str(screenshots / "playground-390x844-full.png"), full_page=True)
    width = await small.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width}px wide)"
    await small.get_by_test_id("tab-memory").click()
    await expect(small.get_by_test_id("memory")).to_contain_text("Carol likes ramen")
    await small.get_by_test_id("memory").scroll_into_view_if_needed()
    await small.screenshot(path=str(screenshots / "playground-390x844-memory.png"))
    await phone.close()
    await context.close()
    assert page_errors == []


async def test_the_tiny_built_in_model_is_named_with_the_line_that_plugs_in_another(
    settings: Settings, judge: Judge, browser: Any, tmp_path: Path, screenshots: Path
) -> None:
    expect.set_options(timeout=TIMEOUT_MS)
    app = create_app(settings, llm=EmbeddedLLM(), judge=judge, embedder=None,
                     store_url=f"sqlite:///{tmp_path}/shipped.sqlite3")
    async with running_server(app, port=0) as port:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(f"http://127.0.0.1:{port}/")
        note = page.get_by_test_id("model-note")
        await expect(note).to_contain_text(
            "A tiny built-in model (SmolLM2-135M-Instruct) writes the replies")
        await expect(page.get_by_test_id("model-state")).to_be_hidden()  # the real load ends
        box = await note.bounding_box()
        assert box is not None and box["height"] < 40, box  # one line
        await page.get_by_test_id("model-note-more").click()
        lines = page.get_by_test_id("plug-in-line")
        await expect(lines).to_have_text([line for _, line in PLUG_IN])
        await page.screenshot(path=str(screenshots / "playground-note-1280x800.png"))
        await page.get_by_test_id("model-note-close").click()
        await expect(note).to_be_hidden()
        await page.reload()
        await expect(page.get_by_test_id("persona")).to_contain_text("SmolLM2-135M-Instruct")
        await expect(note).to_be_hidden()  # dismissed stays dismissed
        await context.close()

        phone = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
        small = await phone.new_page()
        await small.goto(f"http://127.0.0.1:{port}/")
        await expect(small.get_by_test_id("model-note")).to_contain_text("tiny built-in model")
        box = await small.get_by_test_id("model-note").bounding_box()
        assert box is not None and box["height"] < 40, box
        await small.get_by_test_id("model-note-more").click()
        await expect(small.get_by_test_id("plug-in")).to_be_visible()
        await small.screenshot(path=str(screenshots / "playground-note-390x844.png"))
        width = await small.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways on a phone ({width}px wide)"
        await phone.close()
