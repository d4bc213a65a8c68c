"""The operator server's gates (issue 33), over real HTTP against the running server: on
loopback it answers only requests for this machine (a page of another site re-pointed at
127.0.0.1 by DNS rebinding gets 421, its data unread); with a token, the scheme in any case
(RFC 9110) but the token only once. `/metrics`, the dashboard's data and its page alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import BaseRoute

from kuuki.clock import VirtualClock
from kuuki.domain import (
    Action,
    ActionKind,
    Channel,
    Decision,
    DecisionTrace,
    Message,
    Stage,
    User,
)
from kuuki.ops.metrics import Metrics
from kuuki.ops.server import serving
from kuuki.platforms.dashboard import dashboard_routes
from kuuki.platforms.dashboard.overview import overview_of
from kuuki.settings import Settings
from kuuki.store import Store

TOKEN = "op-7f3a9c1e5b2d4f60a8e1"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SAID = "the deploy moves to Thursday"  # public channel text the dashboard shows
DATA = ("/metrics", "/api/decisions", "/api/overview?window=7d", "/")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(f"sqlite:///{tmp_path}/bot.db")
    general = Channel("c-gen", "general")
    await s.roster.upsert_channel(general)
    at = NOW - timedelta(hours=1)
    await s.messages.add_message(Message("m1", general.id, User("u-a", "alice"), SAID, at))
    await s.messages.save_decisions([Decision(
        "m1", general.id, Action(ActionKind.REPLY, general.id, "m1", text="Noted."),
        Stage.ADDRESSED, 80.0, "addressed by name", at, DecisionTrace("m1", general.id, at))])
    try:
        yield s
    finally:
        await s.close()


def _pages(store: Store) -> list[BaseRoute]:
    return dashboard_routes(store.browse, overview_of(store, VirtualClock(NOW)), bot_names=("Kuu",))


REBOUND = ["attacker.example", "attacker.example:{port}", "localhost.attacker.example",
           "127.0.0.1.nip.io:{port}", "localhost:notaport", "x" * 1000]


@pytest.mark.parametrize("host", REBOUND, ids=lambda h: h[:30])
async def test_on_loopback_a_request_for_another_host_is_refused(store: Store,
                                                                 host: str) -> None:
    async with serving(Settings(), Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for path in (*DATA, "/shared/base.css"):
            refused = await client.get(path, headers={"Host": host.format(port=port)})
            assert refused.status_code == 421, (path, refused.text)
            assert "answers requests for localhost, 127.0.0.1 or [::1]" in refused.text
            assert SAID not in refused.text and len(refused.text) < 400


async def test_on_loopback_a_request_for_this_machine_is_answered(store: Store) -> None:
    async with serving(Settings(), Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for host in ("localhost", f"localhost:{port}", "LOCALHOST:9", "localhost.",
                     "127.0.0.1", f"127.0.0.1:{port}", "127.0.0.2:1", "[::1]", f"[::1]:{port}"):
            for path in DATA:
                answered = await client.get(path, headers={"Host": host})
                assert answered.status_code == 200, (host, path, answered.text)
            assert SAID in (await client.get("/api/decisions", headers={"Host": host})).text


async def test_the_configured_loopback_host_is_named_in_the_refusal(store: Store) -> None:
    settings = replace(Settings(), dashboard_host="127.0.0.2")
    async with serving(settings, Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.2:{port}") as client:
        assert (await client.get("/api/decisions")).status_code == 200  # Host 127.0.0.2:port
        refused = await client.get("/metrics", headers={"Host": "rebound.example"})
        assert refused.status_code == 421 and "(or 127.0.0.2)" in refused.text


async def test_beyond_loopback_the_token_is_the_gate(store: Store) -> None:
    settings = replace(Settings(), dashboard_host="0.0.0.0", dashboard_token=TOKEN)
    async with serving(settings, Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        host = {"Host": f"bot.example:{port}"}  # the machine's own name: any, here
        assert (await client.get("/api/decisions", headers=host)).status_code == 401
        answered = await client.get("/api/decisions",
                                    headers={**host, "Authorization": f"Bearer {TOKEN}"})
        assert answered.status_code == 200 and SAID in answered.text


async def test_the_token_in_any_case(store: Store) -> None:
    settings = replace(Settings(), dashboard_token=TOKEN)
    async with serving(settings, Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for path in DATA:
            for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
                answered = await client.get(path, headers={"Authorization": f"{scheme} {TOKEN}"})
                assert answered.status_code == 200, (path, scheme)
            agreeing = await client.get(path, params={"token": TOKEN},
                                        headers={"Authorization": f"Bearer {TOKEN}"})
            assert agreeing.status_code == 200
            wrong = await client.get(path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and SAID not in wrong.text


TWICE: dict[str, dict[str, Any]] = {
    "?token= twice": {"params": [("token", TOKEN), ("token", TOKEN)]},
    "?token= twice, the right one last": {"params": [("token", "nope"), ("token", TOKEN)]},
    "?token= twice, the right one first": {"params": [("token", TOKEN), ("token", "nope")]},
    "header right, ?token= wrong": {"params": {"token": "nope"},
                                    "headers": {"Authorization": f"Bearer {TOKEN}"}},
    "header wrong, ?token= right": {"params": {"token": TOKEN},
                                    "headers": {"Authorization": "Bearer nope"}},
    "two headers, the right one first": {
        "headers": [("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer nope")]},
    "the same header twice": {"headers": [("Authorization", f"Bearer {TOKEN}")] * 2},
}


@pytest.mark.parametrize("given", TWICE.values(), ids=TWICE.keys())
async def test_a_token_given_twice_is_refused(store: Store, given: dict[str, Any]) -> None:
    settings = replace(Settings(), dashboard_token=TOKEN)
    async with serving(settings, Metrics(), port=0, pages=_pages(store)) as port, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for path in DATA:
            refused = await client.get(path, **given)
            assert refused.status_code == 400, (path, refused.text)
            assert "the token was given more than once" in refused.text
            assert TOKEN not in refused.text and SAID not in refused.text
