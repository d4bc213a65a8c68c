"""`kuuki stats`: what the bot did over a window, as aligned text or one JSON object.

The figures are `kuuki.explain.stats`'s; this module only finds the store (as `kuuki why`
does), the channel asked for, and writes them. DMs are one line, "direct messages (N)":
a DM's channel name may be a person's, so it is never printed, nor any message text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TextIO

from kuuki.errors import KuukiError
from kuuki.explain.lines import duration
from kuuki.explain.stats import ChannelStats, Latency, Stats
from kuuki.explain.why import open_to_read, where_looked
from kuuki.explain.window import outside, span_words
from kuuki.settings import Settings
from kuuki.text.wording import echoed


async def run_stats(
    settings: Settings,
    span: timedelta,
    span_text: str,
    channel: str | None,
    as_json: bool,
    out: TextIO,
    now: datetime,
    store_url: str | None = None,
) -> int:
    """Print the stats of the last ``span`` before ``now`` (one channel, or all)."""
    from kuuki.explain.stats_read import channel_names, find_channel, read_stats
    store = await open_to_read(settings, store_url)
    try:
        names = await channel_names(store)
        channel_id = None
        if channel is not None:
            channel_id = find_channel(names, channel)
            if channel_id is None:
                raise KuukiError(
                    f"--channel {echoed(channel)!r}: no channel with that name or id in "
                    f"{where_looked(settings, store_url)}; `kuuki stats` without --channel "
                    "lists the channels it has seen"
                )
        stats = await read_stats(store, now - span, now, channel_id=channel_id,
                                 prices=settings.llm.price_per_1k_tokens, channels=names)
    finally:
        await store.close()
    if as_json:
        out.write(json.dumps(stats_json(stats, span_text), ensure_ascii=False, indent=2) + "\n")
    else:
        out.write(stats_text(stats, span_text) + "\n")
    return 0


def latency_json(latency: Latency) -> dict[str, Any]:
    return {"count": latency.count, "p50_ms": _ms(latency.p50_ms),
            "p95_ms": _ms(latency.p95_ms)}


def channel_json(s: ChannelStats) -> dict[str, Any]:
    return {
        "id": s.channel_id,
        "name": s.name,
        "visibility": s.visibility,
        "messages": s.messages,
        "bot_messages": s.bot_messages,
        "share": None if s.share is None else round(s.share, 4),
        "replies": s.replies,
        "acks": s.acks,
        "reactions": s.reactions,
        "asked": s.asked_total,
        "asked_by": dict(sorted(s.asked.items())),
        "unasked": s.unasked,
        "llm_calls": s.llm_calls,
        "tokens": s.tokens,
        "latency": latency_json(s.latency),
        "waited": latency_json(s.waited),
        "guard_rejections": s.guard_rejections,
        "fallbacks": s.fallbacks,
        "silences": {"budget": s.silent_budget, "quiet": s.silent_quiet},
        "would_have": {"replies": s.would_replies, "acks": s.would_acks,
                       "reactions": s.would_reactions},
    }


def stats_json(stats: Stats, span: str) -> dict[str, Any]:
    """One object with stable keys (docs/decisions.md, "Issue 27: kuuki stats")."""
    dm_name = stats.dms.name

    def name_of(cid: str) -> str:
        return dm_name if cid == "dm" else next(
            (c.name for c in stats.channels if c.channel_id == cid), cid)

    data = stats.data
    return {
        "window": {"since": stats.since.isoformat(), "until": stats.until.isoformat(),
                   "span": span},
        "data": None if data is None else {"first": data.first.isoformat(),
                                           "last": data.last.isoformat()},
        "hint": reach(stats, span),
        "channels": [channel_json(c) for c in stats.channels],
        "dms": {**channel_json(stats.dms), "conversations": stats.dms.channels},
        "total": channel_json(stats.total),
        "models": [
            {"model": m.model, "calls": m.calls, "errors": m.errors,
             "prompt_tokens": m.prompt_tokens, "completion_tokens": m.completion_tokens,
             "tokens": m.tokens, "cost": _cost(m.cost)}
            for m in stats.models
        ],
        "cost": _cost(stats.cost),
        "series": {
            "channels": [
                {"day": d.day.isoformat(), "channel": d.channel_id, "name": name_of(d.channel_id),
                 "messages": d.messages, "bot_messages": d.bot_messages,
                 "reactions": d.reactions}
                for d in stats.channel_days
            ],
            "models": [{"day": d.day.isoformat(), "model": d.model, "calls": d.calls,
                        "tokens": d.tokens} for d in stats.model_days],
            "latency": [{"day": d.day.isoformat(), "count": d.latency.count,
                         "p50_ms": _ms(d.latency.p50_ms), "p95_ms": _ms(d.latency.p95_ms)}
                        for d in stats.latency_days],
        },
    }


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def _cost(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def reach(stats: Stats, span: str) -> str | None:
    """When the window holds nothing but the store holds data: where, and which --since
    reaches it (kuuki.explain.window)."""
    if not stats.empty:
        return None
    return outside(stats.data, stats.since, stats.until, window=span_words(span))


def stats_text(stats: Stats, span: str) -> str:
    """Aligned tables for a terminal: the bot's speech, then how it went, then the models."""
    when = f"{stats.since:%Y-%m-%d %H:%M} → {stats.until:%Y-%m-%d %H:%M} UTC"
    lines = [f"kuuki stats, last {span} ({when})", ""]
    rows = [*stats.channels]
    if stats.dms.channels:
        rows.append(stats.dms)
    if len(rows) != 1:
        rows.append(stats.total)
    if stats.empty:
        return "\n".join([*lines, reach(stats, span) or "nothing was recorded in this window"])
    lines += table(
        ("channel", "messages", "bot", "share", "replies", "acks", "reactions", "asked",
         "unasked"),
        [(_label(s), s.messages, s.bot_messages, _pct(s.share), s.replies, s.acks, s.reactions,
          s.asked_total, s.unasked) for s in rows],
    )
    lines += ["", *table(
        ("channel", "latency p50", "p95", "guard rejections", "fallbacks", "silent: budget",
         "quiet"),
        [(_label(s), _secs(s.latency.p50_ms), _secs(s.latency.p95_ms), s.guard_rejections,
          s.fallbacks, s.silent_budget, s.silent_quiet) for s in rows],
    )]
    if stats.total.would:
        lines += ["", *table(
            ("listening only", "did: replies", "acks", "reactions", "would have: replies",
             "acks", "reactions"),
            [(_label(s), s.replies, s.acks, s.reactions, s.would_replies, s.would_acks,
              s.would_reactions) for s in rows],
        )]
    lines += ["", "latency: from a message that addressed the bot to its answer"]
    waited = stats.total.waited
    if waited.count:
        replies = "1 reply" if waited.count == 1 else f"{waited.count} replies"
        median = duration((waited.p50_ms or 0) / 1000)
        lines.append(
            f"waited on purpose: {replies} after a deliberate wait (12–30 s for a burst to "
            f"settle, 3 min before taking up an open question), median {median}; kept out "
            "of the latency")
    asked = stats.total.asked
    if asked:
        lines += ["", "asked by: " + ", ".join(f"{k} {n}" for k, n in sorted(asked.items()))]
    lines.append("")
    if not stats.models:
        return "\n".join([*lines, "no LLM calls"])
    lines += table(
        ("model", "calls", "errors", "prompt tokens", "completion tokens", "cost"),
        [(m.model, m.calls, m.errors, m.prompt_tokens, m.completion_tokens,
          "-" if m.cost is None else f"{m.cost:.4f}") for m in stats.models],
    )
    if stats.cost is None:
        lines.append("(no price set: llm.price_per_1k_tokens / KUUKI_LLM_PRICE_PER_1K)")
    return "\n".join(lines)


def _label(s: ChannelStats) -> str:
    if s.visibility == "dm":
        return f"{s.name} ({s.channels})"
    if s.channel_id == "*":
        return s.name
    return f"#{s.name}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f} %"


def _secs(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Columns aligned: the first to the left, the others (figures) to the right."""
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                  enumerate(zip(r, widths, strict=True))).rstrip()
        for r in cells
    ]
