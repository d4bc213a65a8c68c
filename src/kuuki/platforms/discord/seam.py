"""The one place kuuki reaches past discord.py's public API, one client at a time.

The adapter runs discord.py's own client on its public API and documented events
(`on_message`, the `on_raw_*` events, `on_socket_raw_receive`, `setup_hook`, `on_error`).
Four things it needs have no hook there; `attach` and `launch_shards` provide them for one
`KuukiClient` (its connection state and the websockets it opens), never process-wide:

- **A frame that cannot be decoded** (nested too deep, not JSON, not an object): discord.py
  decodes each gateway frame in `DiscordWebSocket.received_message` and treats any error
  there as fatal, the shard ends and with it the client. discord.py hands every websocket
  it opens to `ConnectionState._update_references` before reading from it; there each gets
  a `received_message` that logs such a frame and skips it. Everything else, discord.py's
  own reconnect signals included, passes through unchanged.
- **A dispatch a parser cannot read** (a MESSAGE_CREATE without an author): the parser,
  one of `ConnectionState.parsers`, raises, with the same fatal end. Each is wrapped to
  log the event's name and skip the payload; unknown event types discord.py ignores itself.
- **Messages built from REST payloads**: discord.py parses ``mention_channels`` and a
  forward's ``mentions`` away (kuuki.platforms.discord.content). Messages read back over
  REST are built by `ConnectionState.create_message`, wrapped to show each raw payload to
  `Payloads` first. (The gateway's MESSAGE_CREATE reaches `Payloads` through the public
  `on_socket_raw_receive`.)
- **The gateway URL with a given shard count**: discord.py then dials a hard-coded URL;
  `launch_shards` asks ``GET /gateway/bot`` for it, as discord.py does without one.

`missing` lists what of this a discord.py release lacks; tests/platforms/discord/
test_seam.py fails on any, and `attach` logs them and carries on with the public API alone.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import discord
import yarl
from discord.gateway import DiscordWebSocket

from kuuki.platforms.discord.content import Payloads

log = logging.getLogger("kuuki.discord")

# What decoding a frame raises on bad input; discord.py's reconnect signals are none of these.
_UNREADABLE = (RecursionError, ValueError, TypeError, AttributeError, KeyError)


def missing(client: discord.AutoShardedClient) -> list[str]:
    """What the seam relies on that `client`'s discord.py lacks (empty: all of it there)."""
    state: Any = getattr(client, "_connection", None)
    parsers = getattr(state, "parsers", None)
    gaps = [] if isinstance(parsers, dict) and "MESSAGE_CREATE" in parsers else [
        "ConnectionState.parsers['MESSAGE_CREATE']"
    ]
    called: list[tuple[str, Any, list[str]]] = [  # what is called, with the names passed
        ("ConnectionState.create_message", getattr(state, "create_message", None),
         ["channel", "data"]),
        ("ConnectionState._update_references", getattr(state, "_update_references", None),
         ["ws"]),
        ("DiscordWebSocket.received_message", DiscordWebSocket.received_message, ["self", "msg"]),
        ("AutoShardedClient.launch_shards", discord.AutoShardedClient.launch_shards, ["self"]),
        ("AutoShardedClient.launch_shard", discord.AutoShardedClient.launch_shard,
         ["self", "gateway", "shard_id", "initial"]),
        ("HTTPClient.get_bot_gateway", getattr(client.http, "get_bot_gateway", None), []),
    ]
    gaps += [name for name, found, names in called if not _takes(found, names)]
    return gaps


def _takes(found: Any, names: list[str]) -> bool:
    """Whether `found` can be called with these arguments and no others."""
    if not callable(found):
        return False
    try:
        parameters = inspect.signature(found).parameters.values()
    except (TypeError, ValueError):
        return False
    named = {p.name for p in parameters}
    required = {p.name for p in parameters if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return set(names) <= named and required <= set(names)


def attach(client: discord.AutoShardedClient, payloads: Payloads) -> None:
    """Make `client` skip what it cannot read, and show REST payloads to `payloads`."""
    gaps = missing(client)
    if gaps:
        log.warning("discord.py %s lacks what kuuki relies on (%s): a malformed gateway "
                    "payload may end the client", discord.__version__, ", ".join(gaps))
        return
    state: Any = client._connection
    parsers: dict[str, Callable[[Any], None]] = state.parsers
    for event, parse in list(parsers.items()):
        parsers[event] = _guarded(event, parse)
    make = state.create_message

    def create_message(*, channel: Any, data: Any) -> discord.Message:
        payloads.keep(data)
        return make(channel=channel, data=data)  # type: ignore[no-any-return]

    state.create_message = create_message
    update_references = state._update_references

    def update_references_tolerant(ws: DiscordWebSocket) -> None:
        ws.received_message = _tolerant(ws.received_message)  # type: ignore[method-assign]
        update_references(ws)

    state._update_references = update_references_tolerant


def _guarded(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(parse)
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:
            log.warning("skipped a malformed %s payload: %s: %s", event, type(exc).__name__, exc)

    return guarded


def _tolerant(receive: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(receive)
    async def received_message(msg: Any, /) -> None:
        try:
            await receive(msg)
        except _UNREADABLE as exc:
            log.warning("skipped a gateway frame that cannot be read: %s: %s",
                        type(exc).__name__, str(exc)[:200])

    return received_message


async def launch_shards(client: discord.AutoShardedClient) -> None:
    """`client`'s shards (its `shard_count` given) at the gateway URL ``GET /gateway/bot``
    returns: Discord asks bots to use it, and the local test server is found the same way.
    Each process runs only its `shard_ids`."""
    assert client.shard_count is not None
    found = await client.http.get_bot_gateway()  # (count, url), and since 2.5 the limits
    url = yarl.URL(found[1])
    state: Any = client._connection
    state.shard_count = client.shard_count
    shard_ids = client.shard_ids or list(range(client.shard_count))
    state.shard_ids = shard_ids
    for shard_id in shard_ids:
        await client.launch_shard(url, shard_id, initial=shard_id == shard_ids[0])
