"""The declarative HTTP JSON tool against a local API (aiohttp on 127.0.0.1, port 0):
parameters into the URL, fields kept, secrets sent but never shown, and every kind of
bad answer turned into a short note."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kuuki.clock import VirtualClock
from kuuki.domain import Channel, User
from kuuki.errors import ConfigError
from kuuki.llm.base import ToolCall
from kuuki.respond.tools.base import ToolContext
from kuuki.respond.tools.http import HttpJsonTool
from kuuki.respond.tools.toolbox import Toolbox
from kuuki.settings import describe, load_settings
from kuuki.settings.tools import http_tools

TOKEN = "s3cret-token-123"


@pytest.fixture
def slow_reached() -> asyncio.Event:
    """Set once a request has reached the API's /slow endpoint (which then never answers)."""
    return asyncio.Event()


@pytest.fixture
async def api(slow_reached: asyncio.Event) -> AsyncIterator[str]:
    hang = asyncio.Event()

    async def maintenance(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "no"}, status=401)
        region = request.match_info["region"]
        return web.json_response({
            "region": region, "lang": request.query.get("lang"),
            "next": {"start": "2026-01-07T02:00Z", "end": "2026-01-07T06:00Z",
                     "internal": "do not show"},
            "items": [{"title": "patch 7.1", "id": 1}, {"title": "server move", "id": 2}],
        })

    async def fail(request: web.Request) -> web.Response:
        return web.Response(status=500, text="Internal Server Error")

    async def html(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Login</body></html>", content_type="text/html")

    async def huge(request: web.Request) -> web.Response:
        return web.json_response({"blob": "x" * 1_100_000})

    async def slow(request: web.Request) -> web.Response:
        slow_reached.set()
        await hang.wait()
        return web.json_response({})

    async def echo(request: web.Request) -> web.Response:  # a careless debug field
        return web.json_response({"ok": True, "you_sent": request.headers.get("X-Key", "")})

    app = web.Application()
    app.router.add_get("/maintenance/{region}", maintenance)
    for path, handler in (("/fail", fail), ("/html", html), ("/huge", huge), ("/slow", slow),
                          ("/echo", echo)):
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    hang.set()
    await runner.cleanup()


def _tool(base: str, path: str, *, timeout_s: float = 5.0, **extra: Any) -> HttpJsonTool:
    table = {"name": "maintenance", "description": "next maintenance", "url": base + path,
             "params": {"region": "the region"}, **extra}
    [spec] = http_tools("tools.http", [table])
    return HttpJsonTool(spec, timeout_s=timeout_s)


def _ctx(clock: VirtualClock) -> ToolContext:
    return ToolContext(Channel("general", "general"), User("alice", "Alice"), clock.now())


async def test_parameters_headers_and_kept_fields(api: str, tmp_path: Path) -> None:
    config = tmp_path / "kuuki.toml"
    config.write_text(f"""
[[tools.http]]
name = "maintenance"
description = "When the game's next maintenance is"
url = "{api}/maintenance/{{region}}"
params = {{ region = "the region, such as eu", lang = {{ type = "string", required = false }} }}
headers = {{ Authorization = "Bearer ${{MAINT_TOKEN}}" }}
keep = ["region", "lang", "next.start", "next.end", "items[].title"]
""")
    s = load_settings(env={"MAINT_TOKEN": TOKEN}, path=config)
    assert TOKEN not in repr(s) and TOKEN not in json.dumps(describe(s))
    clock = VirtualClock()
    box = Toolbox([HttpJsonTool(s.tools.http[0])], clock=clock)
    outcome = await box.run(ToolCall("c", "maintenance", '{"region": "eu west", "lang": "en"}'),
                            _ctx(clock))
    assert json.loads(outcome.text) == {
        "region": "eu west", "lang": "en", "next.start": "2026-01-07T02:00Z",
        "next.end": "2026-01-07T06:00Z", "items[].title": ["patch 7.1", "server move"],
    }
    assert TOKEN not in repr(outcome.record)


@pytest.mark.parametrize(("path", "note"), [
    ("/fail", "error: the service answered HTTP 500"),
    ("/html", "error: the service answered with HTML, not JSON"),
    ("/huge", "error: the answer was too large (over 1000 kB)"),
    ("/maintenance/eu", "error: the service answered HTTP 401"),
])
async def test_bad_answers_become_short_notes(api: str, path: str, note: str) -> None:
    clock = VirtualClock()
    box = Toolbox([_tool(api, path)], clock=clock)
    outcome = await box.run(ToolCall("c", "maintenance", '{"region": "eu"}'), _ctx(clock))
    assert (outcome.text, outcome.record.outcome) == (note, "error")


async def test_a_service_that_echoes_the_secret_header_hands_over_no_secret(api: str) -> None:
    clock = VirtualClock()
    box = Toolbox([_tool(api, "/echo", headers={"X-Key": TOKEN})], clock=clock)
    outcome = await box.run(ToolCall("c", "maintenance", '{"region": "eu"}'), _ctx(clock))
    assert json.loads(outcome.text) == {"ok": True, "you_sent": "***"}
    assert outcome.record.outcome == "ok"


async def test_a_slow_api_times_out(api: str, slow_reached: asyncio.Event) -> None:
    clock = VirtualClock()
    # The client's own (real-time) limit is an hour: only the toolbox's, on the clock, ends it.
    box = Toolbox([_tool(api, "/slow", timeout_s=3600)], clock=clock, timeout_s=3)
    task = asyncio.ensure_future(
        box.run(ToolCall("c", "maintenance", '{"region": "eu"}'), _ctx(clock)))
    await asyncio.wait_for(slow_reached.wait(), 10)  # the request waits at the server
    assert not task.done()
    await clock.advance(3)
    outcome = await asyncio.wait_for(task, 10)  # due now: 10 s only stops a hang
    assert outcome.text == "error: maintenance did not answer in time"
    assert outcome.record.outcome == "timeout"


async def test_unreachable_api_is_a_note() -> None:
    # A port bound but not listening, held for the whole call: a connection to it is
    # refused, and no other process can start listening there meanwhile.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        clock = VirtualClock()
        box = Toolbox([_tool(f"http://127.0.0.1:{port}", "/x")], clock=clock)
        outcome = await box.run(ToolCall("c", "maintenance", '{"region": "eu"}'), _ctx(clock))
    assert outcome.text == "error: could not reach the service (ClientConnectorError)"
    assert outcome.record.outcome == "error"


@pytest.mark.parametrize(("table", "key", "problem"), [
    ({"description": "d", "url": "http://x"}, "tools.http[0].name", "required"),
    ({"name": "m", "description": "d", "url": "ftp://x"}, "tools.http[0].url", "http://"),
    ({"name": "m", "description": "d", "url": "http://x/{city}"}, "tools.http[0].url",
     "{city} is not declared"),
    ({"name": "m", "description": "d", "url": "http://x", "method": "DELETE"},
     "tools.http[0].method", "GET or POST"),
    ({"name": "m", "description": "d", "url": "http://x", "kep": []}, "tools.http[0].kep",
     "unknown key"),
    ({"name": "now", "description": "d", "url": "http://x"}, "tools.http[0].name", "taken"),
])
def test_config_errors_name_the_key(table: dict[str, Any], key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        http_tools("tools.http", [table])
    assert err.value.key == key and problem in err.value.problem


def test_a_missing_secret_names_the_header(tmp_path: Path) -> None:
    config = tmp_path / "kuuki.toml"
    config.write_text("""
[[tools.http]]
name = "m"
description = "d"
url = "http://127.0.0.1/x"
headers = { Authorization = "Bearer ${NOPE_TOKEN}" }
""")
    with pytest.raises(ConfigError) as err:
        load_settings(env={}, path=config)
    assert "tools.http[0].headers.Authorization" in str(err.value)
    assert "NOPE_TOKEN" in str(err.value)


def test_tool_settings_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={"KUUKI_TIMEZONE": "Asia/Tokio"}, path=None)
    assert "KUUKI_TIMEZONE" in str(err.value) and "Asia/Tokio" in str(err.value)
    with pytest.raises(ConfigError) as err:
        load_settings(env={"KUUKI_TOOL_ROUNDS": "5"})
    assert "KUUKI_TOOL_ROUNDS" in str(err.value) and "0 to 3" in str(err.value)
