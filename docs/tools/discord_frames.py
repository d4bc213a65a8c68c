"""What it costs discord.py to read a MESSAGE_CREATE frame, by how kuuki sees its payload.

    python docs/tools/discord_frames.py [FRAMES] [ROUNDS]

Used for docs/benchmarks.md ("Issue 34"). Feeds FRAMES (20,000) frames of a captured
MESSAGE_CREATE (tests/platforms/payloads/discord/serenity_message_create_1.json) through
discord.py's own `DiscordWebSocket.received_message` and lets every task they start run,
two ways, alternately ROUNDS (6) times:

- ``parser``: the MESSAGE_CREATE parser wrapped to show the payload to `Payloads` (before
  issue 34; debug events off);
- ``raw receive``: `enable_debug_events` and an `on_socket_raw_receive` handler calling
  `Payloads.keep_frame` (after).

Prints the CPU time of this process per frame (`time.process_time`, steadier than wall
time on a shared machine) and the reference loop (20M additions).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import discord
from discord.gateway import DiscordWebSocket

from kuuki.platforms.discord.content import Payloads

PAYLOADS = Path(__file__).parents[2] / "tests" / "platforms" / "payloads" / "discord"
FIXTURE = PAYLOADS / "serenity_message_create_1.json"


class Plain(discord.AutoShardedClient):
    payloads = Payloads()

    async def on_message(self, message: discord.Message) -> None:
        pass


class RawReceive(Plain):
    async def on_socket_raw_receive(self, frame: str) -> None:
        self.payloads.keep_frame(frame)


def frames(count: int) -> list[str]:
    raw = FIXTURE.read_text(encoding="utf-8")
    for key, value in {"{channel}": "1", "{guild}": "2", "{bot}": "3", "{thread}": "4"}.items():
        raw = raw.replace(key, value)
    payload = json.loads(raw)["payload"]
    return [json.dumps({"op": 0, "t": "MESSAGE_CREATE", "s": i + 1,
                        "d": payload | {"id": str(10**18 + i)}}) for i in range(count)]


async def per_frame(way: str, sent: list[str]) -> float:
    debug = way == "raw receive"
    client = (RawReceive if debug else Plain)(intents=discord.Intents.default(),
                                              enable_debug_events=debug)
    loop = asyncio.get_running_loop()
    client.loop = loop
    state: Any = client._connection
    if not debug:
        parse = state.parsers["MESSAGE_CREATE"]

        def parse_kept(data: Any) -> None:
            client.payloads.keep(data)
            parse(data)

        state.parsers["MESSAGE_CREATE"] = parse_kept
    ws: Any = DiscordWebSocket(None, loop=loop)  # type: ignore[arg-type]
    ws._connection, ws._discord_parsers = state, state.parsers
    ws._dispatch, ws.shard_id = client.dispatch, 0
    if debug:
        ws.log_receive = ws.debug_log_receive
    start = time.process_time()
    for frame in sent:
        await ws.received_message(frame)
        await asyncio.sleep(0)
    while len(asyncio.all_tasks()) > 1:
        await asyncio.sleep(0)
    return (time.process_time() - start) / len(sent) * 1e6


async def main(count: int, rounds: int) -> None:
    sent = frames(count)
    print(f"{count} frames of {len(sent[0])} bytes, discord.py {discord.__version__}")
    for _ in range(rounds):
        before = await per_frame("parser", sent)
        after = await per_frame("raw receive", sent)
        print(f"parser {before:.1f} µs/frame   raw receive {after:.1f} µs/frame   "
              f"({after - before:+.1f})")


if __name__ == "__main__":
    started, x = time.process_time(), 0
    for i in range(20_000_000):
        x += i
    print(f"reference loop (20M additions): {time.process_time() - started:.2f} s")
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000,
                     int(sys.argv[2]) if len(sys.argv) > 2 else 6))
