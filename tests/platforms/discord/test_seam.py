"""kuuki.platforms.discord.seam, the one place the adapter reaches past discord.py's public
API: what it relies on is in the discord.py installed, it touches only kuuki's client, and
what it is for holds through the real client (a frame discord.py cannot decode is skipped;
malformed dispatches, REST payloads and shards are tested with the adapter)."""

from __future__ import annotations

import logging

import discord
import pytest
from discord.gateway import DiscordWebSocket

from kuuki.platforms.discord import intents, seam
from kuuki.testing.discord_server import DiscordDriver, DiscordServer

DEEP = "[" * 100_000 + "]" * 100_000


def test_the_installed_discord_py_has_what_the_seam_relies_on() -> None:
    assert seam.missing(discord.AutoShardedClient(intents=intents())) == []


def test_a_discord_py_that_changed_what_the_seam_relies_on_is_noticed() -> None:
    client = discord.AutoShardedClient(intents=intents())
    state = client._connection
    state._update_references = lambda: None  # type: ignore[assignment,method-assign]
    state.create_message = lambda message: message  # type: ignore[assignment,method-assign]
    del state.parsers["MESSAGE_CREATE"]
    assert seam.missing(client) == [
        "ConnectionState.parsers['MESSAGE_CREATE']",
        "ConnectionState.create_message",
        "ConnectionState._update_references",
    ]


async def test_other_discord_py_clients_are_left_as_discord_py_made_them(
    driver: DiscordDriver,
) -> None:
    assert hasattr(driver.client._connection.parsers["MESSAGE_CREATE"], "__wrapped__")
    other = discord.AutoShardedClient(intents=intents())
    assert not any(hasattr(p, "__wrapped__") for p in other._connection.parsers.values())
    assert other._connection.create_message.__func__ is discord.state.ConnectionState.create_message
    # nothing of discord.py's own classes is replaced
    assert DiscordWebSocket.received_message.__code__.co_filename.endswith("gateway.py")


async def test_frames_discord_py_cannot_decode_are_logged_and_skipped(
    driver: DiscordDriver, server: DiscordServer, caplog: pytest.LogCaptureFixture
) -> None:
    frames = [DEEP, "not json {", "[1, 2]", "5", "null", '"a string"']
    with caplog.at_level(logging.WARNING, logger="kuuki.discord"):
        for frame in frames:
            await server.send_raw(frame)
        await driver.settle()
    skipped = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(skipped) == len(frames), skipped
    assert "RecursionError" in skipped[0]
    assert server.identifies == 1 and server.resumes == 0, "no reconnect was needed"
    driver.llm.enqueue("still here")
    await driver.say("alice", "are you there?", mention_bot=True)
    assert [m.text for m in await driver.wait_bot_messages(1)] == ["still here"]


async def test_messages_read_back_over_rest_keep_what_discord_py_drops(
    driver: DiscordDriver, server: DiscordServer
) -> None:
    await driver.say("alice", "good morning")  # the store knows the channel
    await driver.settle()
    said: dict[str, str] = {}

    async def meanwhile() -> None:  # read back over REST at start-up
        said["crosspost"] = await driver.crosspost("v2 is out, see #announcements")

    await driver.restart(meanwhile)
    await driver.settle()
    stored = await driver.app.store.messages.get_message(said["crosspost"])
    # the channel is another guild's: only the payload's mention_channels names it
    assert stored is not None and stored.text == "v2 is out, see #announcements"
