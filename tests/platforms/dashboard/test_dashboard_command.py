"""`kuuki dashboard --store`: the operator page on a replayed store, no bot and no platform,
the way an operator meets it — a transcript replayed into a store with `kuuki replay
--store`, the command started as a process, the page read in chromium.

The replayed day (tests/platforms/dashboard/replayed.py) is dated 2026-01-05, where the
scenario transcripts are: the default window (the last 7 days) holds nothing, and the page
must say where the data is and show it in one click, per hour. Screenshots go to
screenshots/ for a person to look at.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import async_playwright, expect

from kuuki.cli import main
from kuuki.testing.services import service_missing

from .replayed import day_transcript

REPO = Path(__file__).resolve().parents[3]
SHOTS = REPO / "screenshots"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
URL = re.compile(rb"kuuki dashboard: (http://127\.0\.0\.1:\d+/) ")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A day of scenarios replayed into a store (LLM off: the decisions, not the words)."""
    folder = tmp_path_factory.mktemp("replayed")
    transcript = folder / "day.jsonl"
    transcript.write_text(day_transcript(), encoding="utf-8")
    store = folder / "day.db"
    assert main(["replay", str(transcript), "--llm", "none", "--store", str(store)]) == 0
    return store


@pytest.fixture
async def served(replayed: Path, tmp_path: Path) -> AsyncIterator[str]:
    """`kuuki dashboard --store` as a process; its first line names where it listens."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kuuki.cli", "dashboard", "--store", str(replayed), "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "KUUKI_CONFIG": str(tmp_path / "absent.toml"),
             "XDG_DATA_HOME": str(tmp_path / "xdg")},
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=120)
        found = URL.search(line)
        assert found, line
        assert b"read-only" in line and str(replayed).encode() in line
        yield found.group(1).decode()
    finally:
        proc.terminate()
        await proc.wait()


async def test_the_overview_reaches_the_replayed_day_per_hour(served: str) -> None:
    async with httpx.AsyncClient(base_url=served) as client:
        about = (await client.get("/api/about")).json()
        assert about == {"window": "7d", "metrics": False,
                         "store": about["store"]} and about["store"].endswith("(--store)")
        assert (await client.get("/metrics")).status_code == 404  # no bot counts anything
        week = (await client.get("/api/overview")).json()
        assert week["totals"]["messages"] == 0 and week["step"] == "day"
        assert week["reach"] == {
            "text": "nothing in the last 7 days; the store holds data on 2026-01-05",
            "window": "all"}
        day = (await client.get("/api/overview?window=all")).json()
        assert day["step"] == "hour" and day["reach"] is None
        assert day["buckets"][0] == "2026-01-05T10:00:00+00:00"
        assert day["buckets"][-1] == "2026-01-05T19:00:00+00:00" and len(day["buckets"]) == 10
        messages = day["speech"][0]["values"]
        assert len(messages) == 10 and sum(messages) == day["totals"]["messages"] > 0
        assert all(v > 0 for v in messages)  # one scenario an hour
        last_day = (await client.get("/api/overview?window=24h")).json()
        assert last_day["step"] == "hour" and len(last_day["buckets"]) in (24, 25)
        replies = (await client.get("/api/decisions?action=reply")).json()["decisions"]
        assert replies and {d["action"] for d in replies} == {"reply"}
        assert (await client.get("/api/decisions?action=shout")).status_code == 400


async def test_an_operator_reads_the_replayed_store_in_a_browser(served: str) -> None:
    if shutil.which(CHROMIUM) is None:
        service_missing("chromium", f"no browser at {CHROMIUM} (apt-get install chromium)")
    SHOTS.mkdir(exist_ok=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(served)
            reach = page.get_by_test_id("reach")
            await expect(reach).to_contain_text(
                "Nothing in the last 7 days; the store holds data on 2026-01-05.")
            await expect(page.locator("#metrics-link")).to_be_hidden()  # no /metrics here
            await page.screenshot(path=str(SHOTS / "dashboard-store-week.png"))
            await page.get_by_test_id("reach-show").click()
            await expect(reach).to_be_hidden()
            speech = page.get_by_test_id("chart-speech")
            points = speech.locator("path[data-series='messages'] ~ circle")
            await expect(speech.locator("path[data-series='messages']")).to_have_count(1)
            await expect(speech.locator("circle")).to_have_count(30)  # 3 series × 10 hours
            await check_axes(speech)
            await expect(page.locator("#speech-h .per")).to_have_text("per hour")
            assert await points.count() >= 10
            await page.screenshot(path=str(SHOTS / "dashboard-store-day.png"))
            await read_a_card(page)
            await page.screenshot(path=str(SHOTS / "dashboard-store-card.png"), full_page=False)
            assert errors == []
        finally:
            await browser.close()


async def check_axes(chart: Any) -> None:
    """Labels are at least 11 px as shown, the SVG is drawn at its shown size (no squeeze),
    ticks are whole numbers, and no x label runs past the chart's edge."""
    svg = chart.locator("svg")
    box = await svg.bounding_box()
    assert box is not None and abs(box["width"] - float(await svg.get_attribute("width"))) < 1
    sizes = await chart.locator("text").evaluate_all(
        "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert sizes and min(sizes) >= 11
    ticks = await texts(chart.locator("text.y"))
    assert len(ticks) >= 2 and all(re.fullmatch(r"\d+", t.replace(",", "")) for t in ticks), ticks
    hours = await texts(chart.locator("text.x:not(.day)"))
    assert hours[0] == "10:00" and all(re.fullmatch(r"\d\d:00", h) for h in hours), hours
    edges = await chart.locator("text").evaluate_all(
        "els => els.map(e => [e.getBBox().x, e.getBBox().x + e.getBBox().width])")
    width = float(await svg.get_attribute("width"))
    assert all(left >= -0.5 and right <= width + 0.5 for left, right in edges), edges


async def texts(locator: Any) -> list[str]:
    """The text of SVG elements (which have no innerText)."""
    found: list[str] = await locator.evaluate_all("els => els.map(e => e.textContent)")
    return found


async def read_a_card(page: Any) -> None:
    """The replies only; a reply to a message that called the bot by name: its headline,
    the addressee figures and the reason agree, and its time carries the date."""
    await page.get_by_test_id("action-filter").select_option("reply")
    await expect(page.get_by_test_id("decisions")).to_have_attribute("data-action", "reply")
    cards = page.get_by_test_id("decision")
    await expect(cards.first).to_be_visible()
    actions = await texts(page.get_by_test_id("decision-action"))
    assert actions and set(actions) == {"reply"}
    named = cards.filter(has_text="Replied: called by name").first
    await expect(named).to_be_visible()
    await named.locator(":scope > summary").click()
    who = named.get_by_test_id("card-addressee")
    await expect(who).to_contain_text("called by name: that decides")
    assert "counts as addressed" not in await who.inner_text()
    chosen = await texts(who.locator(".chosen"))
    assert chosen == ["Kuu (the bot)"]
    when = await named.get_by_test_id("decision-time").inner_text()
    assert re.match(r"Jan 5(, 2026)?, \d\d:\d\d:\d\d$", when), when  # a date: not today
    await named.scroll_into_view_if_needed()


def test_the_command_refuses_what_it_cannot_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", "--store", str(tmp_path / "none.db")]) == 2
    assert f"no store at {tmp_path}/none.db (--store)" in capsys.readouterr().err
    assert main(["dashboard", "--store", str(tmp_path / "none.db"), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "KUUKI_DASHBOARD_TOKEN" in err and "listens on 0.0.0.0 (--host)" in err
    with pytest.raises(SystemExit):
        main(["dashboard", "--since", "5x"])
    assert "argument --since: " in capsys.readouterr().err
