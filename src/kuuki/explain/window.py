"""The window a report looks at (`kuuki stats --since`, the dashboard's window), the
buckets its charts are drawn in, and what to say when the store's data lies outside it.

A store filled by `kuuki replay` is dated where the transcript says (2026-01-05 in the
examples), so a window ending now may hold nothing while the store holds plenty: the
report then says where the data is and which ``--since`` reaches it, instead of a bare
"nothing was recorded".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

SPAN_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
MAX_SPAN_S = 10 * 365 * 86400
HOURLY_UP_TO = timedelta(hours=48)  # a window this short is drawn per hour, not per day


def parse_span(text: str) -> timedelta:
    """``30m``, ``12h``, ``7d``, ``2w``, ``2y`` as a duration; ValueError saying what is
    accepted."""
    raw = text.strip().lower()
    number, unit = raw[:-1], raw[-1:]
    if unit not in SPAN_UNITS or not number.isdigit() or int(number) <= 0:
        raise ValueError(f"expected a duration such as 30m, 12h, 7d, 2w or 1y, got {text!r}")
    seconds = int(number) * SPAN_UNITS[unit]
    if seconds > MAX_SPAN_S:
        raise ValueError(f"{text!r} is more than 10 years")
    return timedelta(seconds=seconds)


def span_words(text: str) -> str:
    """``7d`` → 'the last 7 days', ``24h`` → 'the last 24 hours', ``1y`` → 'the last year'."""
    raw = text.strip().lower()
    n, unit = int(raw[:-1]), raw[-1]
    word = {"m": "minute", "h": "hour", "d": "day", "w": "week", "y": "year"}[unit]
    return f"the last {word}" if n == 1 else f"the last {n} {word}s"


def suggest_span(first: datetime, until: datetime) -> str:
    """The shortest round ``--since`` that reaches back to ``first`` from ``until``."""
    days = max(1, math.ceil((until - first).total_seconds() / 86400))
    if days <= 14:
        return f"{days}d"
    if days <= 8 * 7:
        return f"{math.ceil(days / 7)}w"
    return f"{min(10, math.ceil(days / 365))}y"


@dataclass(frozen=True, slots=True)
class DataSpan:
    """When the store's first and last messages were written (UTC)."""

    first: datetime
    last: datetime

    def words(self) -> str:
        """'from 2026-01-05 to 2026-01-06', or 'on 2026-01-05' for one day."""
        a, b = self.first.astimezone(UTC).date(), self.last.astimezone(UTC).date()
        return f"on {a}" if a == b else f"from {a} to {b}"


def outside(span: DataSpan | None, since: datetime, until: datetime, *, window: str = "",
            suggest: bool = True) -> str | None:
    """What to say when the window holds nothing: where the data is, and (``suggest``)
    which ``--since`` reaches it.

    None when the store is empty (there is nothing to point at). ``window`` names the window
    ('the last 7 days')."""
    if span is None:
        return None
    head = f"nothing in {window}" if window else "nothing in this window"
    where = f"the store holds data {span.words()}"
    if span.last < since:
        try_ = f" — try --since {suggest_span(span.first, until)}" if suggest else ""
        return f"{head}; {where}{try_}"
    if span.first > until:
        end = until.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        return (f"{head}; {where}, after this window's end ({end} UTC): the data is dated "
                "ahead of this machine's clock")
    return f"{head}; {where}"


def bucket_of(at: datetime, hourly: bool) -> datetime:
    """The start of the hour or UTC day ``at`` falls in."""
    at = at.astimezone(UTC)
    if hourly:
        return at.replace(minute=0, second=0, microsecond=0)
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def buckets(since: datetime, until: datetime, hourly: bool) -> list[datetime]:
    """Every bucket from the one holding ``since`` to the one holding ``until``."""
    step = timedelta(hours=1) if hourly else timedelta(days=1)
    at, last = bucket_of(since, hourly), bucket_of(until, hourly)
    out = []
    while at <= last:
        out.append(at)
        at += step
    return out
