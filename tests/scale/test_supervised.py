"""`kuuki run --workers N` (`run_supervised`): N worker processes beside the gateway; a
worker that dies is started again, and all stop with the gateway. (The gateway runs
in-process under `kuuki run`; `test_gateway_worker.py` covers it in-process.)"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from dataclasses import replace

import pytest

from kuuki.scale.run import run_supervised
from kuuki.settings import Settings
from kuuki.testing.cluster import DISCORD_TOKEN
from kuuki.testing.discord_server import DiscordServer

pytestmark = pytest.mark.postgres


def logins(discord: DiscordServer) -> int:
    """How often a client logged in to the local Discord's REST API."""
    return sum(1 for r in discord.requests if (r.method, r.path) == ("GET", "/users/@me"))


def workers_running(api: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"scale_process worker .*{api}"],
                           capture_output=True, text=True)
    return found.stdout.split()


async def test_workers_are_started_again_when_they_die_and_stop_with_the_gateway(
    discord: DiscordServer, amqp_url: str, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("KUUKI_BROKER_URL", amqp_url), ("KUUKI_STORE_URL", postgres_url),
                        ("KUUKI_BROKER_PARTITIONS", "4"), ("DISCORD_TOKEN", DISCORD_TOKEN)):
        monkeypatch.setenv(name, value)
    settings = replace(Settings(), discord_token=DISCORD_TOKEN, broker_url=amqp_url,
                       store_url=postgres_url, broker_partitions=4)
    api = discord.api_base

    def argv_of(i: int) -> list[str]:
        return [sys.executable, "-m", "kuuki.testing.scale_process", "worker", "--index",
                str(i), "--of", "2", "--standby", "1", "--discord-api", api]

    async def gateway() -> int:
        # `kuuki run --workers` runs the gateway in its own process; here it is a child
        # too, so this test process holds no store connection of its own.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kuuki.testing.scale_process", "gateway", "--discord-api",
            api, stdout=asyncio.subprocess.DEVNULL,
        )
        try:
            return await proc.wait()
        finally:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()

    channel = discord.text_channel("general")["id"]
    task = asyncio.create_task(run_supervised(settings, 2, argv_of, gateway=gateway))
    try:
        await discord.wait_for(lambda: discord.connected, timeout=30)
        bot = discord.bot_user["id"]
        await discord.post("alice", channel, f"<@{bot}> first question #one")
        await discord.wait_for(lambda: len(discord.bot_messages) >= 1, timeout=60)
        assert len(workers_running(api)) == 2

        before = set(workers_running(api))
        logged_in = logins(discord)
        subprocess.run(["pkill", "-9", "-f", f"scale_process worker --index 0 .*{api}"])
        # Started again about a second after it died: a worker logs in to Discord's REST
        # API (GET /users/@me) as it starts.
        await discord.wait_for(lambda: logins(discord) > logged_in, timeout=60)
        now = set(workers_running(api))
        assert len(now) == 2 and len(now & before) == 1, "the dead worker was started again"
        await discord.post("bob", channel, f"<@{bot}> second question #two")
        await discord.wait_for(lambda: len(discord.bot_messages) >= 2, timeout=60)
        assert [m["content"] for m in discord.bot_messages] == ["Noted #one.", "Noted #two."]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert workers_running(api) == [], "the workers stop with the gateway"
