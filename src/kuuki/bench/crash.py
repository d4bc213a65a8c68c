"""kill -9 and a stopped database in the middle of a stream, through each platform's local
server: the scenario behind tests/platforms/test_crash.py and `kuuki bench
crash` (kuuki.bench.crash_runs), which prints its counts.

The bot runs as its own OS process (kuuki.testing.bot_process: the real discord.py or
slack-bolt client, the real store) while people keep talking in three channels, every
fifth message addressed to the bot with its own ``#tag`` (the bot's scripted model answers
``Noted #tag.``). Mid-stream the bot is SIGKILLed (twice), or PostgreSQL is stopped for
several seconds and then the bot is SIGKILLed too. Once every addressed message has its
answer the bot is stopped normally and the store is read back:

* every event the platform counts as taken (Slack: acked; Discord: `Engine.submit`
  resolved, as the bot process recorded it) is in the store — and so is every message
  said at all, since catching up reads back what the bot never got;
* every addressed message got exactly one reply, and has exactly one decision;
* no event was handled twice (one decision a message at most, nothing left pending).

Each check raises `CrashCheckFailed` (an AssertionError) itself: a bare ``assert`` is gone
under ``python -O``, and the test and ``kuuki bench crash`` would then pass anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kuuki.testing.crashkit import (
    BotProcess,
    PrivateServer,
    decisions,
    pending,
    server_port,
    stored_ids,
)
from kuuki.testing.discord_server import DiscordServer
from kuuki.testing.slack_server import SlackServer

TAG = re.compile(r"#q\d+")
MESSAGES = 300
KILL_AT = (90, 200)  # messages said before each SIGKILL
DOWN_FOR = 15  # messages said while the bot is down
OUTAGE_AT = 90  # messages said before PostgreSQL is stopped (then a SIGKILL at 200)
OUTAGE_S = 6.0


class CrashCheckFailed(AssertionError):
    """A check of the crash scenario did not hold (raised, never asserted: see module
    doc). The message names the check and what it found."""


def check(holds: bool, message: str | Callable[[], str]) -> None:
    """Raise `CrashCheckFailed` with ``message`` unless ``holds``."""
    if not holds:
        raise CrashCheckFailed(message() if callable(message) else message)


class Stream:
    """What the people said: every message id, and the addressed ones by tag."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.addressed: dict[str, str] = {}  # tag → message id
        self.reports: list[dict[str, Any]] = []
        self.i = 0

    async def say_next(self, say: Callable[[int, str, bool], Awaitable[str]]) -> None:
        i = self.i
        tag = f"#q{i}" if i % 5 == 2 else None
        text = f"question {i}, can you look at this {tag}" if tag else f"chatter {i} about it"
        mid = await say(i, text, tag is not None)
        self.said.append(mid)
        if tag is not None:
            self.addressed[tag] = mid
        self.i += 1


class Platform:
    """One local server, the bot process in front of it, and how to read what it did."""

    name = ""
    bot: BotProcess

    async def say(self, i: int, text: str, addressed: bool) -> str:
        raise NotImplementedError

    def taken(self) -> set[str]:
        raise NotImplementedError

    def bot_texts(self) -> list[str]:
        raise NotImplementedError

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        raise NotImplementedError

    async def settled(self) -> None:
        """Whatever the platform still owes the bot has been delivered."""

    def notes(self) -> dict[str, int]:
        return {}

    async def close(self) -> None:
        raise NotImplementedError


class Discord(Platform):
    name = "discord"

    def __init__(self, server: DiscordServer, bot: BotProcess) -> None:
        self.server, self.bot = server, bot
        self.rooms = [str(server.text_channel(f"room{k}")["id"]) for k in range(3)]
        self.people = ("alice", "bob", "carol", "dave")

    @classmethod
    async def open(cls, tmp: Path, store: str, *, outage: bool = False) -> Discord:
        server = DiscordServer(bot_name="Kuu")
        await server.start()
        bot = BotProcess("discord", api=server.api_base, store=store,
                         accepted=tmp / "accepted.txt", token=server.token)
        return cls(server, bot)

    async def say(self, i: int, text: str, addressed: bool) -> str:
        if addressed:
            text = f"<@{self.server.bot_user['id']}> {text}"
        msg = await self.server.post(self.people[i % 4], self.rooms[i % 3], text)
        return str(msg["id"])

    def taken(self) -> set[str]:
        return set(self.bot.accepted)

    def bot_texts(self) -> list[str]:
        return [str(m["content"]) for m in self.server.bot_messages]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        await self.server.wait_for(predicate, timeout)

    async def close(self) -> None:
        await self.bot.close()
        await self.server.close()


class Slack(Platform):
    name = "slack"

    def __init__(self, server: SlackServer, bot: BotProcess) -> None:
        self.server, self.bot = server, bot
        self.rooms = [server.add_channel(f"room{k}") for k in range(3)]
        self.people = [server.add_user(n) for n in ("alice", "bob", "carol", "dave")]
        self.envelopes: dict[str, str] = {}  # envelope id → kuuki message id

    @classmethod
    async def open(cls, tmp: Path, store: str, *, outage: bool = False) -> Slack:
        server = SlackServer(bot_name="Kuu")
        if outage:  # Slack retries an unacked event (sooner here), then gives up on it
            server.redeliver_after = 1.0
        await server.start()
        bot = BotProcess("slack", api=server.api_url, store=store,
                         accepted=tmp / "accepted.txt", token="xoxb-kuuki-test")
        return cls(server, bot)

    async def say(self, i: int, text: str, addressed: bool) -> str:
        if addressed:
            text = f"<@{self.server.bot_user_id}> {text}"
        room = self.rooms[i % 3]
        msg = self.server.user_message(self.people[i % 4], room, text)
        env = await self.server.emit(self.server.message_event(room, msg))
        self.envelopes[env.id] = f"{room}:{msg['ts']}"
        return self.envelopes[env.id]

    def taken(self) -> set[str]:
        return {self.envelopes[a["envelope_id"]] for a in self.server.acks
                if a.get("envelope_id") in self.envelopes}

    def bot_texts(self) -> list[str]:
        return [str(m.get("text", "")) for m in self.server.bot_messages]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        await self.server.wait_for(predicate, timeout)

    async def settled(self) -> None:
        # acked, or given up by Slack after its retries (then read back from history)
        await self.server.wait_for(lambda: not self.server.pending, 30)

    def notes(self) -> dict[str, int]:
        return {"envelopes Slack gave up on": len(self.server.given_up)}

    async def close(self) -> None:
        await self.bot.close()
        await self.server.close()


async def kill_and_restart(p: Platform, stream: Stream) -> None:
    """SIGKILL without waiting for the bot to take in what was just said; people say
    DOWN_FOR more while it is down; start it again."""
    await p.bot.kill()
    killed_at, in_flight = stream.i, len(set(stream.said) - p.taken())
    for _ in range(DOWN_FOR):
        await stream.say_next(p.say)
    stream.reports.append({"kill at": killed_at, "not taken at the kill": in_flight,
                           "pending in the inbox": await pending(p.bot.store)})
    await p.bot.start()


def outage(pg: PrivateServer) -> Callable[[Platform, Stream], Awaitable[None]]:
    async def stop_the_database(p: Platform, stream: Stream) -> None:
        """PostgreSQL stopped for OUTAGE_S seconds while people keep talking."""
        taken = len(p.taken())
        await pg.stop()
        stopped_at, said_before = time.monotonic(), stream.i
        while time.monotonic() - stopped_at < OUTAGE_S:
            await stream.say_next(p.say)
            await asyncio.sleep(0.1)
        taken_during = len(p.taken()) - taken
        await pg.start()
        stream.reports.append({"outage at": said_before, "said during": stream.i - said_before,
                               "taken during": taken_during})

    return stop_the_database


async def run(p: Platform, stream: Stream,
              interruptions: dict[int, Callable[[Platform, Stream], Awaitable[None]]]
              ) -> dict[str, Any]:
    await p.bot.start()
    todo = sorted(interruptions.items())
    while stream.i < MESSAGES:
        await stream.say_next(p.say)
        await asyncio.sleep(0.002)  # a lively channel, not a bulk load
        if todo and stream.i >= todo[0][0]:
            await todo.pop(0)[1](p, stream)

    def answered() -> bool:
        return set(replies_by_tag(p.bot_texts())) >= set(stream.addressed)

    try:
        await p.wait_for(answered, timeout=60)
    except TimeoutError:
        missing = sorted(set(stream.addressed) - set(replies_by_tag(p.bot_texts())))
        ids = [stream.addressed[t] for t in missing]
        raise CrashCheckFailed(f"no answer to {missing} (ids {ids}); {stream.reports}; "
                               f"bot log {p.bot.log}") from None
    await p.settled()
    code = await p.bot.stop()
    check(code == 0, f"the bot exited with {code} when stopped; bot log {p.bot.log}")
    outcome = await read_outcome(p.bot, stream, p.taken(), replies_by_tag(p.bot_texts()))
    report = verify(outcome) | p.notes() | {"interruptions": stream.reports}
    print(f"{p.name} crash test:", report, file=sys.stderr)  # stdout: the bench's JSON
    return report


def replies_by_tag(texts: list[str]) -> Counter[str]:
    return Counter(tag for t in texts for tag in TAG.findall(t))


@dataclass
class CrashOutcome:
    """What a run left: what was said and taken, and what the store and the platform
    hold once the bot is stopped (`read_outcome`); `verify` checks it."""

    said: list[str]
    addressed: dict[str, str]  # tag → message id
    taken: set[str]
    stored: set[str]  # of said and taken
    replies: Counter[str]  # tag → the bot's replies naming it
    decisions: dict[str, int]  # message id (said) → its decisions
    pending: int  # events left in the inbox, taken in and never handled
    reports: list[dict[str, Any]] = field(default_factory=list)


async def read_outcome(bot: BotProcess, stream: Stream, taken: set[str],
                       replies: Counter[str]) -> CrashOutcome:
    found = await decisions(bot.store, stream.said)
    return CrashOutcome(
        said=list(stream.said), addressed=dict(stream.addressed), taken=set(taken),
        stored=await stored_ids(bot.store, set(stream.said) | taken), replies=replies,
        decisions={mid: len(ds) for mid, ds in found.items()},
        pending=await pending(bot.store), reports=list(stream.reports),
    )


def verify(o: CrashOutcome) -> dict[str, int]:
    """Every check of the module doc, each raising `CrashCheckFailed`; the counts."""
    said = set(o.said)
    check(o.taken <= o.stored, lambda: f"taken but not stored: {sorted(o.taken - o.stored)[:10]}")
    check(said <= o.stored, lambda: f"said, never stored: {sorted(said - o.stored)}")
    wrong = {t: n for t, n in o.replies.items() if n != 1}
    check(wrong == {}, lambda: f"replies per tag: {wrong} (each mention answered once)")
    check(set(o.replies) == set(o.addressed), lambda: (
        f"replies to tags never said: {sorted(set(o.replies) - set(o.addressed))}; "
        f"mentions with no reply: {sorted(set(o.addressed) - set(o.replies))}"))
    twice = {mid: n for mid, n in o.decisions.items() if n > 1}
    check(twice == {}, lambda: f"an event was decided twice: {twice}")
    undecided = [t for t, mid in o.addressed.items() if o.decisions.get(mid, 0) != 1]
    check(undecided == [], lambda: f"mentions without exactly one decision: {undecided}")
    check(o.pending == 0, lambda: f"{o.pending} events left in the inbox, never handled")
    # The kills did hit the middle of the stream: something was in flight at one of them.
    kills = [r for r in o.reports if "kill at" in r]
    check(any(r["not taken at the kill"] or r["pending in the inbox"] for r in kills),
          lambda: f"no kill hit anything in flight: {kills}")
    return {"said": len(o.said), "taken": len(o.taken),
            "stored (of said)": len(o.stored & said),
            "addressed": len(o.addressed), "replies": sum(o.replies.values()),
            "mentions answered once": sum(1 for t in o.addressed if o.replies[t] == 1),
            "mentions decided once": sum(1 for mid in o.addressed.values()
                                         if o.decisions.get(mid) == 1),
            "decided twice": len(twice), "left in the inbox": o.pending}


PLATFORMS: dict[str, type[Discord] | type[Slack]] = {"discord": Discord, "slack": Slack}


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivateServer]:
    """A throwaway PostgreSQL cluster of its own (never the shared one), to stop and start;
    RuntimeError when the server binaries are not installed."""
    bindir = PrivateServer.find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
    root = Path(tempfile.mkdtemp(prefix="kuuki-pg-outage-"))  # its data and socket dir
    pg = PrivateServer(bindir, root, server_port())
    try:
        asyncio.run(pg.init())
        for attempt in range(3):
            try:
                asyncio.run(pg.start())
                break
            except RuntimeError:  # the port was taken since it was chosen
                if attempt == 2:
                    raise
                pg.port = server_port()
        yield pg
    finally:
        with contextlib.suppress(RuntimeError):  # not running (a case failed mid-outage)
            asyncio.run(pg.stop())
        if not os.environ.get("KUUKI_CRASH_KEEP"):  # set it to look at the cluster after
            shutil.rmtree(root, ignore_errors=True)


async def kill_9(platform: str, workdir: Path) -> dict[str, Any]:
    """The kill -9 case on SQLite: its report (raises `CrashCheckFailed` on a failure)."""
    p = await PLATFORMS[platform].open(workdir, f"sqlite:///{workdir}/kuuki.sqlite3")
    try:
        return await run(p, Stream(), dict.fromkeys(KILL_AT, kill_and_restart))
    finally:
        await p.close()


async def postgres_outage(platform: str, workdir: Path, pg: PrivateServer) -> dict[str, Any]:
    """PostgreSQL stopped for OUTAGE_S seconds, then kill -9: its report (raises
    `CrashCheckFailed` on a failure)."""
    # a database of its own each time: `kuuki bench crash --runs N` runs it N times on one server
    store = await pg.create_database(f"crash_{platform}_{uuid.uuid4().hex[:12]}")
    p = await PLATFORMS[platform].open(workdir, store, outage=True)
    try:
        return await run(p, Stream(), {OUTAGE_AT: outage(pg), 200: kill_and_restart})
    finally:
        await p.close()
