"""Payloads Discord really sends, from its documentation and from captures others made,
run through the real discord.py client and kuuki's mapping (issue 26).

Each file in tests/platforms/payloads/discord/ names its source and what kuuki must make
of it (`expect`). Ids that must be the local server's are placeholders: ``{channel}``,
``{guild}``, ``{bot}`` and ``{thread}`` (a thread the client was never told about).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kuuki.domain import ChatEvent, EventKind
from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordDriver, DiscordServer

PAYLOADS = Path(__file__).parents[1] / "payloads" / "discord"
FIXTURES = sorted(PAYLOADS.glob("*.json"))


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


def substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, real in ids.items():
            value = value.replace(key, real)
        return value
    if isinstance(value, list):
        return [substitute(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ids) for k, v in value.items()}
    return value


def summary(event: ChatEvent, bot_id: str) -> dict[str, Any]:
    """What kuuki made of a payload, in the terms of a fixture's ``expect``."""
    if event.kind is EventKind.POSTED:
        msg = event.message
        assert msg is not None
        return {"kind": "posted", "text": msg.text, "mentions_bot": bot_id in msg.mentions,
                "reply_to": msg.reply_to, "thread": msg.thread is not None,
                "user_is_bot": msg.user.is_bot}
    out: dict[str, Any] = {"kind": event.kind.value, "target": event.target_id}
    if event.kind is EventKind.EDITED:
        out["text"] = event.text
    if event.kind is EventKind.REACTION_ADDED:
        out["emoji"] = event.emoji
    return out


def recording(driver: DiscordDriver) -> list[ChatEvent]:
    """Every event the client hands to the engine from now on."""
    seen: list[ChatEvent] = []
    engine = driver.app.engine
    submit: Callable[[ChatEvent], Awaitable[bool]] = engine.submit

    def record(event: ChatEvent) -> Awaitable[bool]:
        seen.append(event)
        return submit(event)

    engine.submit = record  # type: ignore[method-assign]
    return seen


async def local_ids(driver: DiscordDriver, server: DiscordServer, raw: str) -> dict[str, str]:
    ids = {"{channel}": driver.channel_id(), "{guild}": server.guild_id,
           "{bot}": server.bot_user["id"]}
    if "{thread}" in raw:
        root = await driver.say("alice", "the nightly build broke again")
        await server.create_thread(driver.channel_id(), root, "nightly", announce=False)
        ids["{thread}"] = root
    return ids


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
async def test_a_payload_maps_as_the_platform_documents_it(
    path: Path, driver: DiscordDriver, server: DiscordServer
) -> None:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    assert fixture["source"].startswith("https://"), "every fixture names where it is from"
    payload = substitute(fixture["payload"], await local_ids(driver, server, path.read_text()))
    await driver.settle()
    seen = recording(driver)
    if fixture["event"] == "MESSAGE_CREATE":
        await server.deliver(payload)
    else:
        await server.dispatch(fixture["event"], payload)
    await driver.settle()

    expect = fixture["expect"]
    if expect["kind"] == "none":
        assert seen == []
        return
    [event] = seen
    got = summary(event, server.bot_user["id"])
    assert {k: got.get(k) for k in expect} == expect
