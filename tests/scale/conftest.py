"""Scale-out tests need RabbitMQ (KUUKI_TEST_AMQP_URL, started by .ci/rabbitmq.sh); they
skip, saying so, when it is not set or cannot be reached (under CI=true they fail)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator

import pytest

from kuuki.testing.cluster import DISCORD_TOKEN
from kuuki.testing.discord_server import DiscordServer, serving
from kuuki.testing.services import service_missing


async def _reachable(url: str) -> str | None:
    try:
        import aio_pika
    except ImportError:
        return "aio-pika is not installed (pip install 'kuuki[scale]')"
    try:
        connection = await asyncio.wait_for(aio_pika.connect(url), 5)
    except Exception as exc:
        return f"RabbitMQ at KUUKI_TEST_AMQP_URL cannot be reached: {exc}"
    await connection.close()
    return None


@pytest.fixture
async def amqp_url() -> AsyncIterator[str]:
    """A fresh virtual host on the test RabbitMQ, so no test sees another's queues."""
    base = os.environ.get("KUUKI_TEST_AMQP_URL", "")
    if not base:
        service_missing("RabbitMQ", "KUUKI_TEST_AMQP_URL is not set (start it: eval \"$(bash "
                        ".ci/rabbitmq.sh)\")")
    why = await _reachable(base)
    if why is not None:
        service_missing("RabbitMQ", why)
    vhost = f"kuuki-test-{uuid.uuid4().hex[:8]}"
    admin = await _admin(base)
    await admin(["add_vhost", vhost])
    user = base.split("//", 1)[1].split(":", 1)[0]
    await admin(["set_permissions", "-p", vhost, user, ".*", ".*", ".*"])
    try:
        yield base.rstrip("/") + "/" + vhost
    finally:
        await admin(["delete_vhost", vhost])


async def _admin(base: str):  # type: ignore[no-untyped-def]
    async def run(args: list[str]) -> None:
        proc = await asyncio.create_subprocess_exec(
            "rabbitmqctl", "-q", *args,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
        if proc.returncode != 0:
            service_missing("RabbitMQ", f"rabbitmqctl {args[0]} failed: {err.decode()[:200]}")

    return run


@pytest.fixture
async def discord() -> AsyncIterator[DiscordServer]:
    """The local Discord, with a token shaped like a real one (the commands check it)."""
    async with serving(DiscordServer(bot_name="Kuu", token=DISCORD_TOKEN)) as s:
        yield s
