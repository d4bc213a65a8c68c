"""The local Discord and a bot connected to it, with its store in the test's directory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordDriver, DiscordServer


@pytest.fixture
async def server() -> DiscordServer:
    return DiscordServer(bot_name="Kuu")


@pytest.fixture
async def driver(server: DiscordServer, tmp_path: Path) -> AsyncIterator[DiscordDriver]:
    d = DiscordDriver(server)
    await d.start(replace(Settings(), store_url=f"sqlite:///{tmp_path}/x.sqlite3"))
    try:
        yield d
    finally:
        await d.stop()
