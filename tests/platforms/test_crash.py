"""kill -9 in the middle of a stream, through each platform's local server (issue 11).

The bot runs as its own OS process (kuuki.testing.bot_process: the real discord.py or
slack-bolt client, the real store) and is SIGKILLed twice while messages keep coming, some
of them addressed to it, each addressed one with its own ``#tag`` (the bot's scripted model
answers ``Noted #tag.``). After the last restart, once every addressed message has its
answer, the bot is stopped normally and the store is read back:

* every event the platform counts as taken (Slack: acked; Discord: `Engine.submit`
  resolved, as the bot process recorded it) is in the store — and so is every message
  said at all, since catching up reads back what the bot never got;
* every addressed message got exactly one reply, and has exactly one decision;
* no event was handled twice (one decision a message at most, nothing left pending).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from crashkit import BotProcess, decisions, pending, stored_ids

from kuuki.testing.discord_server import DiscordServer
from kuuki.testing.slack_server import SlackServer

TAG = re.compile(r"#q\d+")
MESSAGES = 300
KILL_AT = (90, 200)  # messages said before each SIGKILL
DOWN_FOR = 15  # messages said while the bot is down


class Stream:
    """What the people said: every message id, and the addressed ones by tag."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.addressed: dict[str, str] = {}  # tag → message id
        self.kill_reports: list[dict[str, int]] = []

    @staticmethod
    def text(i: int) -> tuple[str, str | None]:
        if i % 5 == 2:
            return f"question {i}, can you look at this #q{i}", f"#q{i}"
        return f"chatter {i} about the release", None


async def run_stream(
    bot: BotProcess,
    say: Callable[[int, str, bool], Awaitable[str]],
    stream: Stream,
    taken: Callable[[], set[str]],
) -> None:
    """Say MESSAGES messages; SIGKILL the bot at each KILL_AT without waiting for it to
    take in what was just said, say DOWN_FOR more, start it again."""
    i = 0
    while i < MESSAGES:
        text, tag = Stream.text(i)
        mid = await say(i, text, tag is not None)
        stream.said.append(mid)
        if tag is not None:
            stream.addressed[tag] = mid
        i += 1
        await asyncio.sleep(0.002)  # a lively channel, not a bulk load
        if i in KILL_AT:
            await bot.kill()
            in_flight = len(set(stream.said) - taken())
            for _ in range(DOWN_FOR):
                text, tag = Stream.text(i)
                mid = await say(i, text, tag is not None)
                stream.said.append(mid)
                if tag is not None:
                    stream.addressed[tag] = mid
                i += 1
            stream.kill_reports.append(
                {"said": i, "taken": len(taken()), "not taken at the kill": in_flight,
                 "pending in the inbox": await pending(bot.store)}
            )
            await bot.start()


def replies_by_tag(texts: list[str]) -> Counter[str]:
    return Counter(tag for t in texts for tag in TAG.findall(t))


async def check_store(bot: BotProcess, stream: Stream, taken: set[str],
                      replies: Counter[str]) -> dict[str, int]:
    stored = await stored_ids(bot.store, set(stream.said) | taken)
    assert taken <= stored, f"taken but not stored: {sorted(taken - stored)[:10]}"
    assert set(stream.said) <= stored, f"said, never stored: {sorted(set(stream.said) - stored)}"
    assert {t: n for t, n in replies.items() if n != 1} == {}, "replies per tag"
    assert set(replies) == set(stream.addressed)
    found = await decisions(bot.store, stream.said)
    twice = {mid: len(ds) for mid, ds in found.items() if len(ds) > 1}
    assert twice == {}, "an event was decided twice"
    undecided = [t for t, mid in stream.addressed.items() if len(found[mid]) != 1]
    assert undecided == []
    assert await pending(bot.store) == 0
    # The kills did hit the middle of the stream: something was in flight at one of them.
    assert any(r["not taken at the kill"] or r["pending in the inbox"]
               for r in stream.kill_reports), stream.kill_reports
    return {"said": len(stream.said), "taken": len(taken),
            "stored (of said)": len(stored & set(stream.said)),
            "addressed": len(stream.addressed), "replies": sum(replies.values())}


async def test_discord_kill_9_mid_stream(tmp_path: Path) -> None:
    server = DiscordServer(bot_name="Kuu")
    await server.start()
    rooms = [str(server.text_channel(f"room{k}")["id"]) for k in range(3)]
    people = ("alice", "bob", "carol", "dave")
    bot = BotProcess("discord", api=server.api_base,
                     store=f"sqlite:///{tmp_path}/kuuki.sqlite3",
                     accepted=tmp_path / "accepted.txt", token=server.token)
    stream = Stream()
    try:
        await bot.start()

        async def say(i: int, text: str, addressed: bool) -> str:
            if addressed:
                text = f"<@{server.bot_user['id']}> {text}"
            msg = await server.post(people[i % len(people)], rooms[i % len(rooms)], text)
            return str(msg["id"])

        await run_stream(bot, say, stream, lambda: set(bot.accepted))

        def texts() -> list[str]:
            return [str(m["content"]) for m in server.bot_messages]

        await server.wait_for(lambda: set(replies_by_tag(texts())) >= set(stream.addressed),
                              timeout=90)
        assert await bot.stop() == 0
        counts = await check_store(bot, stream, set(bot.accepted), replies_by_tag(texts()))
        print("discord crash test:", counts, stream.kill_reports)
    finally:
        await bot.close()
        await server.close()


async def test_slack_kill_9_mid_stream(tmp_path: Path) -> None:
    server = SlackServer(bot_name="Kuu")
    await server.start()
    rooms = [server.add_channel(f"room{k}") for k in range(3)]
    people = [server.add_user(n) for n in ("alice", "bob", "carol", "dave")]
    bot = BotProcess("slack", api=server.api_url,
                     store=f"sqlite:///{tmp_path}/kuuki.sqlite3",
                     accepted=tmp_path / "accepted.txt", token="xoxb-kuuki-test")
    envelopes: dict[str, str] = {}  # envelope id → kuuki message id
    stream = Stream()
    try:
        await bot.start()

        async def say(i: int, text: str, addressed: bool) -> str:
            if addressed:
                text = f"<@{server.bot_user_id}> {text}"
            room = rooms[i % len(rooms)]
            msg = server.user_message(people[i % len(people)], room, text)
            env = await server.emit(server.message_event(room, msg))
            envelopes[env.id] = f"{room}:{msg['ts']}"
            return envelopes[env.id]

        def acked() -> set[str]:
            return {envelopes[a["envelope_id"]] for a in server.acks
                    if a.get("envelope_id") in envelopes}

        await run_stream(bot, say, stream, acked)

        def texts() -> list[str]:
            return [str(m.get("text", "")) for m in server.bot_messages]

        await server.wait_for(lambda: set(replies_by_tag(texts())) >= set(stream.addressed),
                              timeout=90)
        await server.wait_acked(timeout=30)
        assert await bot.stop() == 0
        counts = await check_store(bot, stream, acked(), replies_by_tag(texts()))
        print("slack crash test:", counts, stream.kill_reports)
    finally:
        await bot.close()
        await server.close()
