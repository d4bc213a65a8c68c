"""The operator server's rules (issue 27): loopback by default; any other host needs
KUUKI_DASHBOARD_TOKEN, refused at start without it; with a token every request carries it
(Bearer or ?token=); GET only; the token never reaches the logs. And `kuuki run
--dashboard` serves it beside the bot."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kuuki.cli import main
from kuuki.cli import run as cli_run
from kuuki.cli.parser import build_parser
from kuuki.errors import ConfigError, KuukiError
from kuuki.ops.metrics import Metrics
from kuuki.ops.server import serving
from kuuki.platforms.discord import discord  # imported there without the audioop warning
from kuuki.run import run_platforms
from kuuki.settings import Settings, describe, load_settings
from kuuki.testing.slack_server import SlackServer
from kuuki.text.secrets import redact

TOKEN = "op-7f3a9c1e5b2d4f60a8e1"
GOOD_SHAPE = "MTEyMzQ1Njc4OTAxMjM0NTY3OA.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"


def test_a_host_beyond_loopback_without_a_token_stops_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_settings({"KUUKI_DASHBOARD_PORT": "9100", "KUUKI_DASHBOARD_HOST": "0.0.0.0"})
    assert exc.value.key == "KUUKI_DASHBOARD_TOKEN"
    assert "listens on 0.0.0.0 (KUUKI_DASHBOARD_HOST)" in str(exc.value)
    toml = tmp_path / "kuuki.toml"
    toml.write_text('[dashboard]\nport = 9100\nhost = "10.0.0.5"\ntoken = "short"\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError, match=r"setting dashboard.token \(from kuuki.toml\): "
                       "expected at least 16 characters"):
        load_settings({})
    toml.unlink()
    # Loopback needs no token; a host name is not known to be loopback.
    for host in ("127.0.0.1", "::1", "localhost"):
        assert load_settings({"KUUKI_DASHBOARD_PORT": "9100", "KUUKI_DASHBOARD_HOST": host})
    with pytest.raises(ConfigError):
        load_settings({"KUUKI_DASHBOARD_PORT": "9100", "KUUKI_DASHBOARD_HOST": "bot.example"})


async def test_serving_refuses_before_binding() -> None:
    settings = replace(Settings(), dashboard_host="0.0.0.0")
    with pytest.raises(ConfigError, match=r"setting KUUKI_DASHBOARD_TOKEN: the operator server "
                       r"listens on 0\.0\.0\.0"):
        async with serving(settings, Metrics(), port=0):
            pytest.fail("served without a token")


def test_kuuki_run_dashboard_is_refused_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Were it to connect, Discord's closed port would say "cannot reach Discord".
    monkeypatch.setattr(discord.http.Route, "BASE", "http://127.0.0.1:1/api/v10")
    for name, value in {"DISCORD_TOKEN": GOOD_SHAPE, "KUUKI_LLM": "none",
                        "KUUKI_DASHBOARD_HOST": "0.0.0.0",
                        "KUUKI_STORE_URL": f"sqlite:///{tmp_path}/kuuki.sqlite3"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--dashboard"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kuuki: setting KUUKI_DASHBOARD_TOKEN: the operator server listens "
                          "on 0.0.0.0 (KUUKI_DASHBOARD_HOST)"), err
    assert "Discord" not in err and len(err.strip().splitlines()) == 1


async def test_with_a_token_every_request_carries_it_and_no_log_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for client_side in ("httpx", "httpcore"):  # the test's own client logs its URLs
        caplog.set_level(logging.WARNING, logger=client_side)
    monkeypatch.chdir(tmp_path)
    settings = load_settings({"KUUKI_DASHBOARD_TOKEN": TOKEN})
    assert describe(settings)["dashboard_token"] != TOKEN
    assert TOKEN not in redact(f"a library's error quoting {TOKEN}")  # registered as a secret
    metrics = Metrics()
    metrics.guard.labels("ok").inc()
    async with serving(settings, metrics, port=0) as port, httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}"
    ) as client:
        # uvicorn set its loggers to warnings at start, and its access log does not
        # propagate: here they would show every request to the capture.
        for server_side in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            caplog.set_level(logging.DEBUG, logger=server_side)
            monkeypatch.setattr(logging.getLogger(server_side), "handlers", [caplog.handler])
        for path in ("/", "/metrics", "/nowhere"):
            refused = await client.get(path)
            assert refused.status_code == 401 and TOKEN not in refused.text
            assert refused.headers["www-authenticate"] == "Bearer"
        for wrong in ("Bearer " + TOKEN[:-1], "Bearer " + TOKEN + "x", "Basic " + TOKEN):
            assert (await client.get("/metrics",
                                     headers={"Authorization": wrong})).status_code == 401
        assert (await client.get("/metrics", params={"token": "nope"})).status_code == 401

        scraped = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert scraped.status_code == 200
        samples = {(s.name, tuple(s.labels.items())): s.value
                   for f in text_string_to_metric_families(scraped.text) for s in f.samples}
        assert samples[("kuuki_guard_verdicts_total", (("verdict", "ok"),))] == 1
        page = await client.get("/", params={"token": TOKEN})
        assert page.status_code == 200 and "operator server" in page.text
        assert f'href="metrics?token={TOKEN}"' in page.text  # the browser's link keeps it
        assert (await client.get(f"/metrics?token={TOKEN}")).status_code == 200
        # Read-only: nothing but GET.
        for method in ("POST", "PUT", "DELETE"):
            response = await client.request(method, "/metrics",
                                             headers={"Authorization": f"Bearer {TOKEN}"})
            assert response.status_code == 405
    assert TOKEN not in caplog.text


async def test_loopback_without_a_token_serves_anyone_here() -> None:
    async with serving(Settings(), Metrics(), port=0) as port, httpx.AsyncClient() as client:
        page = await client.get(f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and 'href="metrics"' in page.text
        assert (await client.get(f"http://127.0.0.1:{port}/metrics")).status_code == 200


@pytest.mark.parametrize(
    ("argv", "env", "port"),
    [
        (["run"], {}, None),
        (["run", "--dashboard"], {}, 8766),
        (["run", "--dashboard", "9100"], {}, 9100),
        (["run", "--dashboard"], {"KUUKI_DASHBOARD_PORT": "9200"}, 9200),
    ],
)
def test_the_dashboard_flag_names_the_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str],
    port: int | None,
) -> None:
    seen: list[object] = []

    async def fake_run(settings: Settings, *, dashboard: int | None) -> int:
        seen.append(dashboard)
        return 0

    monkeypatch.setattr("kuuki.run.run_platforms", fake_run)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUUKI_CONFIG", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == 0 and seen == [port]


def test_the_dashboard_is_not_offered_with_workers(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "--workers", "2", "--dashboard"])
    with pytest.raises(KuukiError, match="not with --workers"):
        cli_run.cmd_run(args)
    monkeypatch.setenv("KUUKI_DASHBOARD_PORT", "9100")  # the setting, not the flag
    args = build_parser().parse_args(["run", "--workers", "2"])
    with pytest.raises(KuukiError, match="not with --workers"):
        cli_run.cmd_run(args)


async def test_kuuki_run_dashboard_serves_metrics_beside_the_bot(tmp_path: Path) -> None:
    server = SlackServer(bot_name="Kuu")
    await server.start()
    settings = load_settings({
        "SLACK_BOT_TOKEN": "xoxb-1234-5678-abcdefgh", "SLACK_APP_TOKEN": "xapp-1-A0123-456-abcdef",
        "KUUKI_LLM": "none", "KUUKI_STORE_URL": f"sqlite:///{tmp_path}/kuuki.sqlite3",
    }, path=None)
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(run_platforms(settings, dashboard=0, slack_api=server.api_url,
                                             ready=listening.set_result))
    try:
        await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
        assert not task.done(), task.result()
        port = listening.result()
        await server.wait_for(lambda: server.connected, 15)  # the bot runs, too
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            scraped = await client.get("/metrics")
            page = await client.get("/")
            overview = await client.get("/api/overview", params={"window": "24h"})
        names = {f.name for f in text_string_to_metric_families(scraped.text)}
        assert {"kuuki_decisions", "kuuki_queue_depth", "kuuki_llm_breaker_state"} <= names
        # the operator dashboard, on the bot's own store (kuuki.platforms.dashboard)
        assert page.status_code == 200 and "kuuki — how the bot is doing" in page.text
        assert overview.json()["totals"]["messages"] == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.close()
    async with httpx.AsyncClient() as client:  # gone with the bot
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/metrics")
