"""The dashboard's charts and totals: the store's aggregation (kuuki.explain.stats, the one
`kuuki stats` prints) as the page's JSON, over a window ending now (the clock's now), or
over everything the store holds.

A window of two days or less is drawn per hour, a longer one per UTC day. When the window
holds nothing but the store does, the page is told where the data lies (``reach``), so it
can offer the window that shows it.

DMs are one row, "direct messages (N)", and one line in the charts: counted, never named.
A private channel is named only with ``show_private``; otherwise the private channels are
one row too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuuki.clock import Clock
from kuuki.domain import Visibility
from kuuki.explain.stats import ChannelStats, Stats
from kuuki.explain.stats_read import channel_names, data_span, find_channel, read_stats
from kuuki.explain.window import HOURLY_UP_TO, buckets, outside, parse_span, span_words
from kuuki.platforms.dashboard.app import ALL, Overview
from kuuki.store import Store


def overview_of(
    store: Store, clock: Clock, *, prices: Mapping[str, float] | None = None,
    show_private: bool = False,
) -> Overview:
    """The `Overview` the dashboard's routes call."""

    async def overview(window: str, channel: str | None) -> Mapping[str, Any]:
        now = clock.now()
        names = await channel_names(store)
        channel_id = find_channel(names, channel) if channel else None
        if channel_id is not None and names[channel_id][1] != Visibility.PUBLIC.value \
                and not (show_private and names[channel_id][1] == Visibility.PRIVATE.value):
            channel_id = None  # a channel the page may not name is not a filter either
        if window == ALL:
            span = await data_span(store, channel_id)
            since, until = (span.first, span.last) if span is not None else (now, now)
        else:
            since, until = now - parse_span(window), now
        stats = await read_stats(store, since, until, channel_id=channel_id, prices=prices,
                                 channels=names, hourly=until - since <= HOURLY_UP_TO)
        return page_data(stats, window=window, show_private=show_private)

    return overview


def window_words(window: str) -> str:
    return "everything the store holds" if window == ALL else span_words(window)


def page_data(stats: Stats, *, window: str = ALL, show_private: bool) -> dict[str, Any]:
    times = buckets(stats.since, stats.until, stats.hourly)
    index = {t: i for i, t in enumerate(times)}
    messages, bot, reactions = ([0] * len(times) for _ in range(3))
    for cd in stats.channel_days:
        if (i := index.get(cd.at)) is not None:
            messages[i] += cd.messages
            bot[i] += cd.bot_messages
            reactions[i] += cd.reactions
    models: dict[str, tuple[list[int], list[int]]] = {}
    for md in stats.model_days:
        calls, tokens = models.setdefault(md.model, ([0] * len(times), [0] * len(times)))
        if (i := index.get(md.at)) is not None:
            calls[i] += md.calls
            tokens[i] += md.tokens
    p50: list[float | None] = [None] * len(times)
    p95: list[float | None] = [None] * len(times)
    for ld in stats.latency_days:
        if (i := index.get(ld.at)) is not None:
            p50[i], p95[i] = ld.latency.p50_ms, ld.latency.p95_ms
    return {
        "since": stats.since.isoformat(), "until": stats.until.isoformat(),
        "window": window, "window_words": window_words(window),
        "step": "hour" if stats.hourly else "day",
        "buckets": [t.isoformat() for t in times],
        "data": _data(stats),
        "reach": _reach(stats, window),
        "totals": _totals(stats),
        "speech": [{"label": "messages", "values": messages},
                   {"label": "the bot's replies and acks", "values": bot},
                   {"label": "the bot's reactions", "values": reactions}],
        "llm": [{"model": m, "calls": c, "tokens": t} for m, (c, t) in sorted(models.items())],
        "latency": {"p50": p50, "p95": p95},
        "channels": _rows(stats, show_private=show_private),
    }


def _data(stats: Stats) -> dict[str, str] | None:
    d = stats.data
    return None if d is None else {"first": d.first.isoformat(), "last": d.last.isoformat()}


def _reach(stats: Stats, window: str) -> dict[str, Any] | None:
    """The window holds nothing but the store does: where its data lies."""
    if not stats.empty or window == ALL:
        return None
    text = outside(stats.data, stats.since, stats.until, window=window_words(window),
                   suggest=False)
    return None if text is None else {"text": text, "window": ALL}


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _totals(stats: Stats) -> dict[str, Any]:
    t = stats.total
    latency, waited = t.latency, t.waited
    return {
        "messages": t.messages, "replies": t.replies, "acks": t.acks, "reactions": t.reactions,
        "share": t.share, "asked": t.asked_total, "unasked": t.unasked,
        "llm_calls": t.llm_calls, "tokens": t.tokens, "cost": stats.cost,
        "guard_rejections": t.guard_rejections, "fallbacks": t.fallbacks,
        "latency_count": latency.count,
        "latency_p50_ms": _ms(latency.p50_ms), "latency_p95_ms": _ms(latency.p95_ms),
        "waited_count": waited.count, "waited_p50_ms": _ms(waited.p50_ms),
        "would_replies": t.would_replies, "would_acks": t.would_acks,
        "would_reactions": t.would_reactions,
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
            "reactions": c.reactions, "share": c.share, "llm_calls": c.llm_calls,
            "would": c.would, "would_replies": c.would_replies, "would_acks": c.would_acks,
            "would_reactions": c.would_reactions}

