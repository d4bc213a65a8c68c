"""The dashboard's charts and totals: the store's aggregation (kuuki.explain.stats, the one
`kuuki stats` prints) as the page's JSON, over a window ending now (the clock's now).

DMs are one row, "direct messages (N)", and one line in the charts: counted, never named.
A private channel is named only with ``show_private``; otherwise the private channels are
one row too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from kuuki.clock import Clock
from kuuki.domain import Visibility
from kuuki.explain.stats import ChannelStats, Stats
from kuuki.explain.stats_read import channel_names, find_channel, read_stats
from kuuki.platforms.dashboard.app import Overview
from kuuki.store import Store


def overview_of(
    store: Store, clock: Clock, *, prices: Mapping[str, float] | None = None,
    show_private: bool = False,
) -> Overview:
    """The `Overview` the dashboard's routes call."""

    async def overview(window: timedelta, channel: str | None) -> Mapping[str, Any]:
        now = clock.now()
        names = await channel_names(store)
        channel_id = find_channel(names, channel) if channel else None
        if channel_id is not None and names[channel_id][1] != Visibility.PUBLIC.value \
                and not (show_private and names[channel_id][1] == Visibility.PRIVATE.value):
            channel_id = None  # a channel the page may not name is not a filter either
        stats = await read_stats(store, now - window, now, channel_id=channel_id,
                                 prices=prices, channels=names)
        return page_data(stats, show_private=show_private)

    return overview


def page_data(stats: Stats, *, show_private: bool) -> dict[str, Any]:
    days = _days(stats.since.date(), stats.until.date())
    index = {d: i for i, d in enumerate(days)}
    messages, bot, reactions = ([0] * len(days) for _ in range(3))
    for cd in stats.channel_days:
        if cd.day in index:
            messages[index[cd.day]] += cd.messages
            bot[index[cd.day]] += cd.bot_messages
            reactions[index[cd.day]] += cd.reactions
    models: dict[str, tuple[list[int | None], list[int | None]]] = {}
    for md in stats.model_days:
        calls, tokens = models.setdefault(md.model, ([0] * len(days), [0] * len(days)))
        if md.day in index:
            calls[index[md.day]] = (calls[index[md.day]] or 0) + md.calls
            tokens[index[md.day]] = (tokens[index[md.day]] or 0) + md.tokens
    p50: list[float | None] = [None] * len(days)
    p95: list[float | None] = [None] * len(days)
    for ld in stats.latency_days:
        if ld.day in index:
            p50[index[ld.day]], p95[index[ld.day]] = ld.latency.p50_ms, ld.latency.p95_ms
    return {
        "since": stats.since.isoformat(), "until": stats.until.isoformat(),
        "days": [d.isoformat() for d in days],
        "totals": _totals(stats),
        "speech": [{"label": "messages", "values": messages},
                   {"label": "the bot's replies and acks", "values": bot},
                   {"label": "the bot's reactions", "values": reactions}],
        "llm": [{"model": m, "calls": c, "tokens": t} for m, (c, t) in sorted(models.items())],
        "latency": {"p50": p50, "p95": p95},
        "channels": _rows(stats, show_private=show_private),
    }


def _totals(stats: Stats) -> dict[str, Any]:
    t = stats.total
    latency = t.latency
    return {
        "messages": t.messages, "replies": t.replies, "acks": t.acks, "reactions": t.reactions,
        "share": t.share, "asked": t.asked_total, "unasked": t.unasked,
        "llm_calls": t.llm_calls, "tokens": t.tokens, "cost": stats.cost,
        "guard_rejections": t.guard_rejections, "fallbacks": t.fallbacks,
        "latency_p50_ms": latency.p50_ms, "latency_p95_ms": latency.p95_ms,
    }


def _rows(stats: Stats, *, show_private: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    hidden = ChannelStats("private", "private", Visibility.PRIVATE.value, channels=0)
    for c in stats.channels:
        if c.visibility == Visibility.PRIVATE.value and not show_private:
            hidden.add(c)
            continue
        rows.append(_row(f"{c.name}", c, selectable=True))
    if hidden.channels:
        rows.append(_row(f"private channels ({hidden.channels})", hidden, selectable=False))
    if stats.dms.channels and stats.dms.messages:
        rows.append(_row(f"direct messages ({stats.dms.channels})", stats.dms, selectable=False))
    return rows


def _row(name: str, c: ChannelStats, *, selectable: bool) -> dict[str, Any]:
    return {"name": name, "visibility": c.visibility, "selectable": selectable,
            "messages": c.messages, "replies": c.replies, "acks": c.acks,
            "reactions": c.reactions, "share": c.share, "llm_calls": c.llm_calls}


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]
