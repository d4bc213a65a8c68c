"""What both adapters' reading back shares (kuuki.platforms.discord.catchup,
kuuki.platforms.slack.backfill): what it asks the store (`History`), where each channel's
reading starts (`start_points`, by `kuuki.platforms.retry.start_point`'s rule), and
handing what was read in (`hand_in`). The platform's part is its history API and its ids.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import Protocol

from kuuki.domain import Channel, ChatEvent, Message

# (channel id, its last message stored or None, the inbox's events) → where reading starts
StartPoint = Callable[[str, str | None, Sequence[ChatEvent]], str | None]


class History(Protocol):
    """What reading back asks the store (kuuki.store.history): the channels it knows, the
    last message of one, and the events still in the inbox."""

    async def channels(self) -> list[Channel]: ...

    async def last_message(
        self, channel_id: str, *, not_by: Collection[str] = ()
    ) -> Message | None: ...

    async def pending_events(self, *, platform: str | None = None) -> list[ChatEvent]: ...


async def last_id(store: History, channel_id: str, *, not_by: Collection[str]) -> str | None:
    """The id of the channel's last message stored that is not by ``not_by`` (the bot: its
    own messages are recorded when sent, and may lie past messages an outage refused)."""
    last = await store.last_message(channel_id, not_by=not_by)
    return last.id if last is not None else None


async def start_points(
    store: History,
    channel_ids: Iterable[str],
    pending: Sequence[ChatEvent],
    *,
    not_by: Collection[str],
    start_point: StartPoint,
) -> dict[str, str | None]:
    """Where reading each channel back starts after a restart: after its `last_id`, or
    from just before its oldest message still in the inbox (``pending``) when that is
    earlier — ``start_point``, the platform's `kuuki.platforms.retry.start_point`."""
    return {
        cid: start_point(cid, await last_id(store, cid, not_by=not_by), pending)
        for cid in channel_ids
    }


async def hand_in(
    submit: Callable[[ChatEvent], Awaitable[bool]], events: Sequence[ChatEvent]
) -> tuple[int, BaseException | None]:
    """Submit ``events`` in order and await them together, so the lot shares one group
    commit: how many were new, and the first failure (None: all were taken in)."""
    done = await asyncio.gather(*[submit(e) for e in events], return_exceptions=True)
    failed = next((r for r in done if isinstance(r, BaseException)), None)
    return sum(1 for r in done if r is True), failed
