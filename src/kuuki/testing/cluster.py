"""A scale-out deployment on this machine, for the end-to-end test and `kuuki bench scale`.

The local Discord (two shards of guilds) and the local Slack run in this process; the
gateways and workers are OS processes (`kuuki.testing.scale_process`, the product path)
on a real RabbitMQ and one PostgreSQL. Gateway g runs Discord shard g of the gateways'
count and a Slack HTTP endpoint; Slack's events are posted, signed, to the endpoints in
turn, as a load balancer would. `traffic` says the same thing every run: channels split
between the two platforms, every ``addressed_every``-th message a mention carrying its own
``#tag`` (the worker's tagged_llm answers ``Noted #tag.``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from kuuki.testing.discord_server import DiscordServer
from kuuki.testing.slack_server import SlackServer

DISCORD_TOKEN = "MTA4NzY1NDMyMTA5ODc2NTQzMjE.GkUuKi.a-local-test-token-shaped-like-discords"
SLACK_TOKEN = "xoxb-kuuki-scale-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
STANDBY_S = 15.0  # workers start in a few seconds each on 2 loaded cores
PEOPLE = ("alice", "bob", "carol", "dave", "erin", "frank")


@dataclass(slots=True)
class Sent:
    platform: str
    channel: str  # the platform's channel id
    message_id: str  # as kuuki stores it
    tag: str | None  # set on addressed messages


@dataclass
class Cluster:
    amqp_url: str
    store_url: str
    gateways: int = 2
    workers: int = 3
    partitions: int = 16
    llm: str = "tagged"
    log_dir: str | None = None  # each process's stderr goes to <log_dir>/<name>.log
    discord: DiscordServer = field(init=False)
    slack: SlackServer = field(init=False)
    procs: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    ports: list[int] = field(default_factory=list)
    discord_channels: list[str] = field(default_factory=list)
    slack_channels: list[str] = field(default_factory=list)
    users: dict[str, str] = field(default_factory=dict)  # Slack name → id
    _http: Any = None
    _turn: int = 0
    _said: int = 0

    async def start(self, channels: int) -> None:
        """Servers, ``channels`` channels (half on each platform), then the processes."""
        import httpx

        self.discord = DiscordServer(bot_name="Kuu", token=DISCORD_TOKEN)
        await self.discord.start()
        self.slack = SlackServer(bot_name="Kuu")
        await self.slack.start()
        shards = max(1, self.gateways)
        guilds = [self.discord.add_guild(shard=g, shard_count=shards) for g in range(shards)]
        on_discord = channels // 2
        for i in range(on_discord):
            ch = self.discord.text_channel(f"d{i}", guild_id=guilds[i % len(guilds)])
            self.discord_channels.append(str(ch["id"]))
        for i in range(channels - on_discord):
            self.slack_channels.append(self.slack.add_channel(f"s{i}"))
        for name in PEOPLE:
            self.users[name] = self.slack.add_user(name)
        self._http = httpx.AsyncClient(timeout=30)
        self.ports = [_free_port() for _ in range(self.gateways)]
        # Started together, each registers its own share of the partitions well before
        # any standby registration (--standby), so each is active on its share.
        await asyncio.gather(*(self.start_worker(w) for w in range(self.workers)))
        for g in range(self.gateways):
            await self._spawn(f"gateway{g}", ["gateway"], self._env(shard=g))
        if self.gateways:
            await self._wait_up()

    async def start_worker(self, index: int) -> None:
        await self._spawn(f"worker{index}", ["worker", "--index", str(index), "--of",
                                              str(self.workers), "--llm", self.llm,
                                              "--standby", str(STANDBY_S)],
                          self._env())

    def _env(self, *, shard: int | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("KUUKI_", "DISCORD_", "SLACK_"))}
        env.update({
            "KUUKI_CONFIG": "/nonexistent/kuuki.toml",
            "KUUKI_BROKER_URL": self.amqp_url,
            "KUUKI_BROKER_PARTITIONS": str(self.partitions),
            "KUUKI_STORE_URL": self.store_url,
            "DISCORD_TOKEN": DISCORD_TOKEN,
            "SLACK_BOT_TOKEN": SLACK_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "KUUKI_SLACK_MODE": "http",
            "KUUKI_SLACK_HOST": "127.0.0.1",
        })
        if shard is not None:
            env.update({
                "KUUKI_DISCORD_SHARD_COUNT": str(self.gateways),
                "KUUKI_DISCORD_SHARD_IDS": str(shard),
                "KUUKI_SLACK_PORT": str(self.ports[shard]),
            })
        return env

    async def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        err: Any = None
        if self.log_dir is not None:
            err = open(os.path.join(self.log_dir, f"{name}.log"), "ab")  # noqa: SIM115
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kuuki.testing.scale_process", *args,
            "--discord-api", self.discord.api_base, "--slack-api", self.slack.api_url,
            env=env, stdout=asyncio.subprocess.PIPE, stderr=err,
        )
        if err is not None:
            err.close()
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
        except TimeoutError:
            line = b""
        while line and line.strip() != b"ready":
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
        if not line:
            raise RuntimeError(f"{name} exited before it was ready ({await proc.wait()})")
        self.procs[name] = proc
        asyncio.get_running_loop().create_task(_drain(proc))

    async def _wait_up(self) -> None:
        """Until every shard is identified and every Slack endpoint accepts requests."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shards = sum(1 for link in self.discord.shard_links.values() if link.ws is not None)
            if shards >= self.gateways and all(_listening(p) for p in self.ports):
                await asyncio.sleep(1.0)  # the start-up catch-up rounds
                return
            await asyncio.sleep(0.1)
        raise TimeoutError("the gateways did not come up in 60 s")

    # -- traffic -----------------------------------------------------------------------------

    async def say(self, platform: str, channel: str, text: str, *, tag: str | None) -> Sent:
        if tag is not None:
            bot = (self.discord.bot_user["id"] if platform == "discord"
                   else self.slack.bot_user_id)
            text = f"<@{bot}> {text} #{tag}"
        speaker = PEOPLE[self._said % len(PEOPLE)]  # people take turns
        self._said += 1
        if platform == "discord":
            msg = await self.discord.post(speaker, channel, text)
            return Sent(platform, channel, str(msg["id"]), tag)
        user = self.users[speaker]
        msg = self.slack.user_message(user, channel, text)
        payload = self.slack.event_envelope(self.slack.message_event(channel, msg)).payload
        port = self.ports[self._turn % len(self.ports)]  # the load balancer's turn
        self._turn += 1
        body = json.dumps(payload).encode()
        for _ in range(20):  # Slack retries what was not answered 200
            resp = await self._http.post(f"http://127.0.0.1:{port}/slack/events",
                                         content=body, headers=_signed(body))
            if resp.status_code == 200:
                break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError(f"Slack event refused: {resp.status_code}")
        return Sent(platform, channel, f"{channel}:{msg['ts']}", tag)

    def took_over(self) -> int:
        """How many channel takeovers the workers logged (needs ``log_dir``)."""
        if self.log_dir is None:
            return 0
        total = 0
        for name in os.listdir(self.log_dir):
            with open(os.path.join(self.log_dir, name), errors="replace") as f:
                total += sum(1 for line in f if "took channel" in line)
        return total

    def pause(self, name: str) -> None:
        """Stop ``name`` without killing it (SIGSTOP): the broker goes on handing it
        deliveries up to its prefetch, which it can no longer acknowledge."""
        self.procs[name].send_signal(signal.SIGSTOP)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)

    def answers(self) -> dict[str, int]:
        """How many replies each tag got, on both platforms."""
        counts: dict[str, int] = {}
        texts = [m["content"] for m in self.discord.bot_messages]
        texts += [m.get("text", "") for m in self.slack.bot_messages]
        for text in texts:
            for word in text.split():
                if word.startswith("#"):
                    tag = word[1:].rstrip(".")
                    counts[tag] = counts.get(tag, 0) + 1
        return counts

    async def stop(self) -> None:
        for proc in self.procs.values():
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
        self.procs.clear()
        if self._http is not None:
            await self._http.aclose()
        await self.slack.close()
        await self.discord.close()


def traffic(channels: list[tuple[str, str]], messages: int, *, addressed_every: int,
            ) -> list[tuple[str, str, str, str | None]]:
    """(platform, channel, text, tag or None) in sending order: round robin over channels."""
    out: list[tuple[str, str, str, str | None]] = []
    for i in range(messages):
        turn, c = divmod(i, len(channels))
        platform, channel = channels[c]
        # each channel is addressed every ``addressed_every``-th round, the channels in
        # turn: a mention now and then, as people do (a flood would be rate limited)
        tag = f"t{i}" if turn % addressed_every == c % addressed_every else None
        out.append((platform, channel, f"message {i} about the release plan", tag))
    return out


def _signed(body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    digest = hmac.new(SIGNING_SECRET.encode(), b"v0:" + stamp.encode() + b":" + body,
                      hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}",
            "Content-Type": "application/json"}


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket()) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


async def _drain(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdout is not None
    while await proc.stdout.readline():
        pass
