"""The playground in a real headless browser (Debian's chromium driven by Playwright).

One scenario, the way a person would try kuuki: two people talk, the bot answers when
addressed, the trace shows why, the clock jumps and an unanswered question is re-judged,
a transcript is loaded and the room is exported. Screenshots go to
test-artifacts/screenshots/ for a person to look at.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kuuki.judge.base import Judge
from kuuki.platforms.playground import create_app, running_server
from kuuki.platforms.transcript import parse_lines
from kuuki.settings import Settings
from kuuki.testing.llm import ScriptedLLM

playwright_api = pytest.importorskip("playwright.async_api")
async_playwright = playwright_api.async_playwright
expect = playwright_api.expect

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 15_000

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None, reason="needs Debian's chromium at /usr/bin/chromium"
)


@pytest.fixture
async def served(
    settings: Settings, store_url: str, judge: Judge, llm: ScriptedLLM
) -> AsyncIterator[tuple[str, ScriptedLLM, Any]]:
    app = create_app(settings, llm=llm, judge=judge, store_url=store_url, embedder=None)
    async with running_server(app, port=0) as port:
        yield f"http://127.0.0.1:{port}/", llm, app


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
    served: tuple[str, ScriptedLLM, Any],
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

    # Two people talk; small talk gets no answer, but a decision all the same.
    await send(page, "morning all")
    messages = page.get_by_test_id("message")
    await expect(messages.filter(has_text="morning all")).to_be_visible()
    first_card = page.get_by_test_id("decision").first
    await expect(first_card.get_by_test_id("decision-action")).to_have_text("none")
    await expect(first_card.get_by_test_id("decision-reason")).to_have_text("nothing to add")

    await page.locator('[data-speaker="bob"]').click()
    await expect(page.locator('[data-speaker="bob"]')).to_have_attribute("aria-checked", "true")
    llm.enqueue("Sunny and 24°C, Bob. Bring a hat!")
    await send(page, "@Kuu what's the weather tomorrow?")
    await expect(messages.filter(has_text="weather tomorrow")).to_contain_text("bob")
    bot_reply = page.get_by_test_id("bot-message").filter(has_text="Bring a hat!")
    await expect(bot_reply).to_be_visible()
    reply_card = page.get_by_test_id("decision").first
    await expect(reply_card.get_by_test_id("decision-action")).to_have_text("reply")
    await expect(reply_card.get_by_test_id("rule").first).to_contain_text("addressed:mention")
    await expect(reply_card.locator(".calls")).to_contain_text("reply")

    # A third person joins and asks an open question nobody answers …
    await page.get_by_test_id("add-participant").locator("input").fill("carol")
    await page.get_by_test_id("add-participant").locator("button").click()
    await expect(page.locator('[data-speaker="carol"]')).to_have_attribute("aria-checked", "true")
    await send(page, "does anyone know a good ramen place near the office?")
    await expect(page.get_by_test_id("decision").first).to_contain_text("open question")
    await expect(page.get_by_test_id("timers")).to_contain_text(re.compile(r"next in [45] min"))
    # … and five virtual minutes later the bot picks it up, on a timer.
    llm.enqueue("Menya Sora on 3rd street does a great shoyu ramen.")
    await page.get_by_test_id("jump-5m").click()
    await expect(page.get_by_test_id("bot-message").filter(has_text="shoyu ramen")).to_be_visible()
    timer_card = page.get_by_test_id("decision").first
    await expect(timer_card.get_by_test_id("timer-tag")).to_be_visible()
    await expect(timer_card.get_by_test_id("decision-action")).to_have_text("reply")
    await expect(timer_card).to_contain_text("unanswered question")
    await page.screenshot(path=str(screenshots / "playground-1280x800.png"))

    # The prompt behind a reply, on demand.
    await timer_card.locator(".calls button").first.click()
    await expect(page.get_by_test_id("prompt-dialog")).to_contain_text("ramen place")
    await page.get_by_test_id("prompt-dialog").get_by_role("button", name="Close").click()

    # The memory panel reads what the store holds.
    store = app.state.playground.engine_app.store
    await store.set_memory(
        "channel", "general", "summary", "Bob asked about the weather; Carol wants ramen."
    )
    await store.add_fact(
        "Carol likes ramen", source_channel_id="general", source_user_ids=["carol"]
    )
    await page.get_by_test_id("tab-memory").click()
    await expect(page.get_by_test_id("memory")).to_contain_text("Carol wants ramen")
    await expect(page.get_by_test_id("memory")).to_contain_text("Carol likes ramen")
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
    assert ("bob", "@Kuu what's the weather tomorrow?") in said
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
    await phone.close()
    await context.close()
    assert page_errors == []
