"""The operator dashboard on a store that a running bot filled: what it shows, what it never
shows, and the page in a real browser (chromium)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.async_api import async_playwright, expect
from starlette.applications import Starlette

from kuuki.clock import VirtualClock
from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    Contribution,
    Decision,
    DecisionTrace,
    LLMCallRecord,
    Message,
    Stage,
    User,
    Visibility,
)
from kuuki.platforms.asgi_server import running_server
from kuuki.platforms.dashboard import dashboard_routes
from kuuki.platforms.dashboard.overview import overview_of
from kuuki.store import Store
from kuuki.testing.services import service_missing

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SHOTS = Path("test-artifacts/screenshots")
DM_TEXT = "my bank PIN is 4711, keep it between us"
PRIVATE_TEXT = "the layoffs are planned for Friday"
GENERAL = Channel("c-gen", "general")
OPS = Channel("c-ops", "ops", Visibility.PRIVATE)
DM = Channel("d-1", "@alice", Visibility.DM)


def decision(mid: str, ch: Channel, kind: ActionKind, at: datetime, *, calls: int = 0) -> Decision:
    trace = DecisionTrace(mid, ch.id, at)
    trace.features["addressed"] = "name" if kind is not ActionKind.NONE else None
    trace.contributions.append(Contribution("addressed:name", 80.0) if calls
                               else Contribution("seat", 10.0, "p 0.10"))
    for _ in range(calls):
        trace.llm_calls.append(LLMCallRecord("reply", "llama3.2", 600, 40, 900.0, "ok"))
    text = "Sure, on it." if kind in (ActionKind.REPLY, ActionKind.ACK) else None
    emoji = "👍" if kind is ActionKind.REACT else None
    return Decision(mid, ch.id, Action(kind, ch.id, mid, text=text, emoji=emoji),
                    Stage.ADDRESSED if calls else Stage.LOCAL, 80.0 if calls else 10.0,
                    "addressed by name" if calls else "nothing to add",
                    at + timedelta(seconds=2), trace)


async def fill(store: Store) -> None:
    """Three days: general talks and the bot answers, ops (private) and a DM talk too."""
    alice, bob = User("u-a", "alice"), User("u-b", "bob")
    said: list[tuple[Channel, User, str, ActionKind, int]] = [
        (GENERAL, alice, "Kuu, when is the deploy?", ActionKind.REPLY, 1),
        (GENERAL, bob, "lunch anyone?", ActionKind.NONE, 0),
        (GENERAL, alice, "thanks Kuu", ActionKind.REACT, 0),
        (OPS, bob, PRIVATE_TEXT, ActionKind.NONE, 0),
        (DM, alice, DM_TEXT, ActionKind.REPLY, 1),
    ]
    for ch in (GENERAL, OPS, DM):
        await store.roster.upsert_channel(ch)
    n = 0
    for day in (2, 1, 0):
        for ch, user, text, kind, calls in said:
            n += 1
            at = NOW - timedelta(days=day, hours=1, minutes=n)
            await store.messages.add_message(Message(f"m{n}", ch.id, user, text, at))
            await store.messages.save_decisions([decision(f"m{n}", ch, kind, at, calls=calls)])


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(f"sqlite:///{tmp_path}/bot.db")
    await fill(s)
    try:
        yield s
    finally:
        await s.close()


def app_of(store: Store, *, show_private: bool = False) -> Starlette:
    clock = VirtualClock(NOW)
    return Starlette(routes=dashboard_routes(
        store.browse, overview_of(store, clock, show_private=show_private), bot_names=("Kuu",),
        show_private=show_private))


async def get(app: Starlette, path: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://dash") as client:
        return await client.get(path)


async def test_the_charts_count_every_channel_and_name_only_what_may_be_shown(
    store: Store,
) -> None:
    o = (await get(app_of(store), "/api/overview?window=7d")).json()
    assert o["totals"]["messages"] == 15 and o["totals"]["replies"] == 6
    assert o["totals"]["reactions"] == 3 and o["totals"]["llm_calls"] == 6
    assert sum(o["speech"][0]["values"]) == 15  # messages per day, DMs and ops included
    [model] = o["llm"]
    assert model["model"] == "llama3.2" and sum(model["calls"]) == 6
    assert sum(model["tokens"]) == 6 * 640
    names = [r["name"] for r in o["channels"]]
    assert names == ["general", "private channels (1)", "direct messages (1)"]
    shown = (await get(app_of(store, show_private=True), "/api/overview?window=7d")).json()
    assert [r["name"] for r in shown["channels"]][:2] == ["general", "ops"]
    one_day = (await get(app_of(store), "/api/overview?window=24h")).json()
    assert one_day["totals"]["messages"] == 5
    assert (await get(app_of(store), "/api/overview?window=3y")).status_code == 400


async def test_decisions_never_show_a_dm_and_private_text_only_when_asked(store: Store) -> None:
    listed = (await get(app_of(store), "/api/decisions")).text
    assert "Kuu, when is the deploy?" in listed
    assert DM_TEXT not in listed and PRIVATE_TEXT not in listed
    found = (await get(app_of(store), "/api/search?message_id=m5")).json()
    assert found["decisions"] == [] and "direct message" in found["note"]
    private = app_of(store, show_private=True)
    assert PRIVATE_TEXT in (await get(private, "/api/decisions")).text
    assert DM_TEXT not in (await get(private, "/api/decisions")).text
    card = (await get(app_of(store), "/api/search?message_id=m1")).json()["decisions"][0]
    assert card["action"] == "reply" and card["card"]["calls"]  # the playground's card


async def test_a_long_id_searched_for_is_echoed_cut_to_80_characters(store: Store) -> None:
    found = (await get(app_of(store), "/api/search?message_id=" + "x" * 50_000)).json()
    assert found == {"decisions": [], "note": "no decision stored for " + "x" * 80 + "…"}


async def test_a_person_reads_the_dashboard_in_a_browser(store: Store) -> None:
    if shutil.which(CHROMIUM) is None:
        service_missing("chromium", f"no browser at {CHROMIUM} (apt-get install chromium)")
    async with running_server(app_of(store), port=0) as port, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1400})
            await page.goto(f"http://127.0.0.1:{port}/")
            speech = page.get_by_test_id("chart-speech")
            await expect(speech.locator("path[data-series='messages']")).to_have_count(1)
            assert await speech.locator("circle").count() >= 3  # one point a day, or more
            await expect(page.get_by_test_id("chart-llm").locator("path")).to_have_count(2)
            await expect(page.get_by_test_id("totals")).to_contain_text("15")
            await expect(page.get_by_test_id("channel-row")).to_have_count(3)
            first = page.get_by_test_id("decision").first
            await expect(first).to_be_visible()
            html = await page.content()  # the latest decisions are listed
            assert "Kuu, when is the deploy?" in html
            assert DM_TEXT not in html and PRIVATE_TEXT not in html
            await first.locator(":scope > summary").click()
            await expect(first.get_by_test_id("rules")).to_be_visible()
            await page.get_by_test_id("search-id").fill("m1")
            await page.get_by_test_id("search-id").press("Enter")
            await expect(page.get_by_test_id("decisions-note")).to_contain_text("m1")
            SHOTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)
        finally:
            await browser.close()


TOKEN = "a-long-dashboard-token-0123456789"


async def test_with_a_token_the_data_needs_it_and_the_page_sends_it(store: Store) -> None:
    from kuuki.ops.metrics import Metrics
    from kuuki.ops.server import operator_app

    routes = app_of(store).routes
    served = operator_app(Metrics(), name="Kuu", token=TOKEN, pages=routes)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=served),
                                 base_url="http://localhost") as client:
        for path in ("/", "/api/decisions", "/api/overview?window=7d", "/metrics"):
            assert (await client.get(path)).status_code == 401
        for path in ("/shared/cards.js", "/shared/base.css", "/dashboard/dashboard.js"):
            assert (await client.get(path)).status_code == 200  # packaged files, no data
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert (await client.get("/api/decisions", headers=bearer)).status_code == 200
    if shutil.which(CHROMIUM) is None:
        service_missing("chromium", f"no browser at {CHROMIUM} (apt-get install chromium)")
    async with running_server(served, port=0) as port, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page()
            await page.goto(f"http://127.0.0.1:{port}/?token={TOKEN}")
            await expect(page.get_by_test_id("totals")).to_contain_text("15")
            await expect(page.get_by_test_id("decision").first).to_be_visible()
            assert TOKEN not in page.url  # out of the address bar once read
            assert await page.get_attribute("#metrics-link", "href") == f"/metrics?token={TOKEN}"
        finally:
            await browser.close()
