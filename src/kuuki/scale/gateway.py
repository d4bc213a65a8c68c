"""`kuuki gateway`: the platform connections, handing every event to the broker.

The gateway runs the same adapters as `kuuki run` (Discord shards, Slack over HTTP or
Socket Mode) on an engine whose inbox is the broker (`BrokerRelay`, kuuki.engine.intake.Relay):
taking an event in means publishing it and having the broker confirm it, and only then
does the platform hear that it arrived (Slack's 200; Discord has no acknowledgement, and
a channel whose events the broker refused is read back from its history, as after a
store outage). Nothing is judged here and no model is loaded: the workers own the
channels. Slash commands still reach the gateway's engine: those that only touch the
store (forget, remember-me, memory) work; `quiet` is kept by the gateway, not the worker
that owns the channel (docs/scaling.md, known gaps).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from kuuki.domain import Channel, ChatEvent
from kuuki.scale.broker import Envelope, Publisher

log = logging.getLogger("kuuki.scale")


class BrokerRelay:
    """A gateway engine's inbox: events go to the broker, keyed by channel, in order."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        # set by the gateway once the engine exists: waits for what intake holds
        self.drain: Callable[[], Awaitable[None]] | None = None
        self._markers: set[asyncio.Task[None]] = set()

    async def admit_events(self, events: Sequence[ChatEvent]) -> set[str]:
        await self.publisher.publish([Envelope(e.channel, e) for e in events])
        return {e.event_id for e in events}  # duplicates are the workers' store's to drop

    async def pending_events(
        self, *, platform: str | None = None, channel_id: str | None = None
    ) -> list[ChatEvent]:
        return []  # what a gateway took in is on the broker, not here

    def caught_up(self, channel: Channel) -> None:
        task = asyncio.get_running_loop().create_task(self._marker(channel))
        self._markers.add(task)
        task.add_done_callback(self._markers.discard)

    async def _marker(self, channel: Channel) -> None:
        try:
            if self.drain is not None:
                await self.drain()  # the catch-up events handed in before it go first
            await self.publisher.publish([Envelope(channel)])
        except Exception as exc:
            # The owner then answers the owed messages at its next marker, or on takeover.
            log.warning("could not send the catch-up marker of %s: %s", channel.id, exc)

    async def close(self) -> None:
        await asyncio.gather(*self._markers, return_exceptions=True)
