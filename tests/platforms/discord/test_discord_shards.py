"""Discord gateway sharding (issue 14): two bots, each running one shard of two, against
the local Discord; each sees, stores and answers only the guilds on its own shard."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kuuki.app import App, build_app
from kuuki.clock import RealClock
from kuuki.platforms.discord import DiscordOutbox, KuukiClient, run_discord
from kuuki.settings import Settings
from kuuki.testing.discord_server import DiscordServer, serving
from kuuki.testing.llm import ScriptedLLM


@dataclass
class Bot:
    app: App
    outbox: DiscordOutbox
    llm: ScriptedLLM
    task: asyncio.Task[None]

    @property
    def client(self) -> KuukiClient:
        assert self.outbox.client is not None
        return self.outbox.client


@pytest.fixture
async def server() -> AsyncIterator[DiscordServer]:
    async with serving(DiscordServer(bot_name="Kuu")) as s:
        yield s


async def start_bot(
    server: DiscordServer, tmp_path: Path, shard: int, *, store: str = ""
) -> Bot:
    settings = replace(Settings(), discord_shard_count=2, discord_shard_ids=(shard,))
    llm = ScriptedLLM()
    llm.enqueue(f"hello from shard {shard}")
    outbox = DiscordOutbox()
    app = await build_app(settings, clock=RealClock(), outbox=outbox, llm=llm, judge_llm=llm,
                          store=store or f"sqlite:///{tmp_path}/shard{shard}.sqlite3",
                          embedder=None)
    task = asyncio.create_task(run_discord(
        app, server.token, outbox, guild_ready_timeout=0.05,
        shard_count=settings.discord_shard_count, shard_ids=list(settings.discord_shard_ids),
    ))
    bot = Bot(app, outbox, llm, task)
    try:
        await unless_it_ends(task, outbox.bound.wait(), f"the bot on shard {shard} connects")
        await unless_it_ends(task, bot.client.caught_up.wait(),
                             f"the bot on shard {shard} catches up")
    except BaseException:
        await stop_bot(bot)
        raise
    return bot


async def unless_it_ends(task: asyncio.Task[None], until: Awaitable[object], what: str) -> None:
    """Wait for ``until``; the bot's task ending first (it failed) raises its error. The
    deadline only turns a hang into a failure that says what did not happen."""
    waiting = asyncio.ensure_future(until)
    done, _ = await asyncio.wait({task, waiting}, timeout=60,
                                 return_when=asyncio.FIRST_COMPLETED)
    if waiting in done:
        return
    waiting.cancel()
    if task in done:
        task.result()
    raise AssertionError(f"{what}: did not happen")


async def stop_bot(bot: Bot) -> None:
    bot.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await bot.task
    await bot.app.close()


async def test_each_process_sees_only_the_guilds_of_its_own_shards(
    server: DiscordServer, tmp_path: Path
) -> None:
    guild0 = server.add_guild(shard=0, shard_count=2)
    guild1 = server.add_guild(shard=1, shard_count=2)
    ch0 = server.text_channel("zero", guild_id=guild0)["id"]
    ch1 = server.text_channel("one", guild_id=guild1)["id"]
    bots = [await start_bot(server, tmp_path, 0), await start_bot(server, tmp_path, 1)]
    try:
        identified = sorted(f["d"]["shard"] for f in server.received if f["op"] == 2)
        assert identified == [[0, 2], [1, 2]]
        seen = [{str(g.id) for g in bot.client.guilds} for bot in bots]
        assert guild0 in seen[0] and guild1 in seen[1]
        assert not seen[0] & seen[1] and seen[0] | seen[1] == set(server.guild_ids)
        assert all((int(g) >> 22) % 2 == k for k, gs in enumerate(seen) for g in gs)

        bot_id = server.bot_user["id"]
        said = [
            await server.post("alice", ch0, "just chatting in guild zero"),
            await server.post("bob", ch1, "just chatting in guild one"),
            await server.post("alice", ch0, f"<@{bot_id}> hi there"),
            await server.post("bob", ch1, f"<@{bot_id}> hi there"),
        ]
        await server.wait_for(lambda: len(server.bot_messages) >= 2)
        await server.sync()
        for bot in bots:
            await bot.client.idle()
            await bot.app.engine.idle()

        answers = {m["channel_id"]: m["content"] for m in server.bot_messages}
        assert answers == {ch0: "hello from shard 0", ch1: "hello from shard 1"}
        assert len(server.bot_messages) == 2, "each mention was answered once, by one bot"
        for bot, mine, theirs in ((bots[0], ch0, ch1), (bots[1], ch1, ch0)):
            assert {c.id for c in await bot.app.store.roster.channels()} == {mine}
            stored = await bot.app.store.history.messages_by_ids([m["id"] for m in said])
            assert {m.channel_id for m in stored if m.user.id != bot_id} == {mine}
            assert await bot.app.store.history.last_message(theirs) is None
    finally:
        for bot in bots:
            await stop_bot(bot)


async def leave_in_inbox(
    store_url: str, server: DiscordServer, channel_id: str, user: str, text: str
) -> str:
    """A message taken into the inbox by shard 0's process, which died before handling it."""
    from kuuki.domain import ChatEvent, EventKind, Message, User
    from kuuki.store import Store

    msg = await server.post(user, channel_id, text)
    store = await Store.open(store_url)
    try:
        channel = await store.roster.get_channel(channel_id)
        assert channel is not None and channel.workspace == msg["guild_id"]
        m = Message(msg["id"], channel_id, User(server.user(user)["id"], user), text,
                    RealClock().now())
        assert await store.inbox.admit_events([ChatEvent(EventKind.POSTED, channel, m.id, m.ts,
                                                   message=m)]) == {m.id}
    finally:
        await store.close()
    return str(msg["id"])


async def test_catching_up_reads_back_only_the_channels_of_its_own_shards(
    server: DiscordServer, tmp_path: Path
) -> None:
    """Processes share one store: a start must not read back (and answer) a channel of a
    guild on another process's shard."""
    shared = f"sqlite:///{tmp_path}/shared.sqlite3"
    guild0 = server.add_guild(shard=0, shard_count=2)
    ch0 = server.text_channel("zero", guild_id=guild0)["id"]
    first = await start_bot(server, tmp_path, 0, store=shared)
    try:
        await server.post("alice", ch0, "morning")
        await server.sync()
        await first.client.idle()
        await first.app.engine.idle()
    finally:
        await stop_bot(first)
    owed = await server.post("alice", ch0, f"<@{server.bot_user['id']}> still there?")
    left = await leave_in_inbox(shared, server, ch0, "bob", "and one taken in at a crash")

    before = len(server.requests)
    other = await start_bot(server, tmp_path, 1, store=shared)  # caught up on start
    try:
        await other.app.engine.idle()
        assert server.bot_messages == []
        assert await other.app.store.history.messages_by_ids([owed["id"], left]) == []
        touched = [r.path for r in server.requests[before:] if ch0 in r.path]
        assert touched == [], "the channel was neither fetched nor read by shard 1"
        pending = await other.app.store.inbox.pending_events(platform="discord")
        assert [e.event_id for e in pending] == [left], "not recovered by shard 1"
    finally:
        await stop_bot(other)

    again = await start_bot(server, tmp_path, 0, store=shared)
    try:
        await server.wait_for(lambda: len(server.bot_messages) >= 1)
        await again.app.engine.idle()
        assert [(m["channel_id"], m["content"]) for m in server.bot_messages] == [
            (ch0, "hello from shard 0")]
        assert len(await again.app.store.history.messages_by_ids([owed["id"], left])) == 2
        assert await again.app.store.inbox.pending_events(platform="discord") == []
    finally:
        await stop_bot(again)
