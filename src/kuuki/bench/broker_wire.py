"""What both sides of `kuuki bench broker` share: the partitions, the message shape, and
`BrokerEngine`, what one broker provides to the cases (kuuki.bench.broker runs the cases,
kuuki.bench.broker_engines implements the engines and their consumer loop).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

PARTITIONS = 8
PREFETCH = 64
NATS_LEASE_S = 2.0  # TTL of the NATS ownership lease; the takeover waits for it to expire
NATS_ACK_WAIT_S = 5.0  # JetStream redelivers an unacked message after this long
DEFAULT_AMQP = "amqp://guest:guest@127.0.0.1:5672/"
DEFAULT_NATS = "nats://127.0.0.1:4222"


def event(run: str, channel: str, seq: int) -> bytes:
    """A message shaped like a chat event (ids, author, text), padded to about 1 KB."""
    base = {
        "id": f"{run}-{channel}-{seq}", "platform": "discord", "guild": "g1",
        "channel": channel, "seq": seq, "author": {"id": "u42", "name": "hanako", "bot": False},
        "ts": "2026-11-23T05:00:00.000Z", "mentions": [], "reply_to": None,
    }
    room = 1000 - len(json.dumps(base, ensure_ascii=False).encode()) - len(', "text": ""')
    filler = ("空気を読む bot の負荷試験です。" * 40).encode()
    base["text"] = filler[:room].decode(errors="ignore")  # whole characters only
    return json.dumps(base, ensure_ascii=False).encode()


def partition(channel: str) -> int:
    return zlib.crc32(channel.encode()) % PARTITIONS


@dataclass
class BrokerEngine:
    """What one broker provides to the cases: set up, publish a plan, a consumer spec."""

    name: str
    setup: Callable[[], Awaitable[None]]
    publish: Callable[[list[tuple[str, int]]], Awaitable[None]]
    spec: Callable[[list[int], str], dict[str, Any]]  # (partitions, role) -> spec
    teardown: Callable[[], Awaitable[None]]
    note: str = ""
