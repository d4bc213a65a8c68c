"""A gateway and a worker on a real RabbitMQ, against the local Discord: events go through
the broker to the worker, which stores them once and answers through Discord's REST API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kuuki.scale.run import run_gateway, run_worker
from kuuki.settings import Settings
from kuuki.store import Store
from kuuki.testing.discord_server import DiscordServer
from kuuki.testing.llm import ScriptedLLM


async def started(run: Callable[..., Any], *args: Any, **kw: Any) -> asyncio.Task[Any]:
    up = asyncio.Event()
    task = asyncio.create_task(run(*args, ready=up.set, **kw))
    waiter = asyncio.create_task(up.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED, timeout=30)
    if task.done():
        task.result()
    assert up.is_set(), "did not start"
    return task


async def stop(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_mention_through_gateway_broker_and_worker_is_stored_once_and_answered(
    discord: DiscordServer, amqp_url: str, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path}/kuuki.sqlite3"
    settings = replace(Settings(), discord_token=discord.token, broker_url=amqp_url,
                       store_url=store_url, broker_partitions=4)
    channel = discord.text_channel("general")["id"]
    llm = ScriptedLLM()
    llm.enqueue("the broker says hi", "and hi again")
    worker = await started(run_worker, settings,
                           build={"llm": llm, "judge_llm": llm, "embedder": None})
    gateway = await started(run_gateway, settings)
    try:
        await discord.wait_for(lambda: discord.connected, timeout=20)
        bot = discord.bot_user["id"]
        said = [await discord.post("alice", channel, "morning all"),
                await discord.post("bob", channel, f"<@{bot}> are you there?")]
        await discord.wait_for(lambda: len(discord.bot_messages) >= 1, timeout=20)
        # A second mention, after the first reply: a channel's events travel and are
        # handled in order, so once it is answered, a second answer to the first mention
        # (a duplicate delivery, say) would already have been posted before it.
        said.append(await discord.post("carol", channel, f"<@{bot}> and once more?"))
        await discord.wait_for(lambda: len(discord.bot_messages) >= 2, timeout=20)
        assert [m["content"] for m in discord.bot_messages] == ["the broker says hi",
                                                                "and hi again"]
        replies = [m["id"] for m in discord.bot_messages]
        assert {m["channel_id"] for m in discord.bot_messages} == {channel}
    finally:
        await stop(gateway)
        await stop(worker)
    store = await Store.open(store_url)
    try:
        ids = [m["id"] for m in said] + replies
        stored = await store.history.messages_by_ids(ids)
        assert sorted(m.id for m in stored) == sorted(ids)
        assert await store.inbox.pending_events() == []
        for mention in (said[1], said[2]):
            decision = await store.browse.decision_for(mention["id"])
            assert decision is not None and decision["action"] == "reply"
    finally:
        await store.close()
