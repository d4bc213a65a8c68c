"""The store's side of `kuuki stats`: four read-only queries (channels, messages, decisions,
traces) on SQLite or PostgreSQL, folded into `kuuki.explain.stats.Stats`.

Nearly every message leaves a silent decision that counts for nothing here, so only the
decisions that acted, called a model or whose reason may say budget, quiet or a fallback
are read, and a trace (~1.5 kB of JSON) only for those that acted or called a model.
Messages are counted per channel and UTC day (or hour) in SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, func, or_, select

from kuuki.explain.stats import DecisionFacts, Folder, Stats
from kuuki.explain.window import DataSpan
from kuuki.store import Store
from kuuki.store.schema import ChannelRow, DecisionRow, MessageRow


async def channel_names(store: Store) -> dict[str, tuple[str, str]]:
    """Every stored channel: id → (name, visibility)."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            select(ChannelRow.id, ChannelRow.name, ChannelRow.visibility)
        )
        return {r.id: (r.name, r.visibility) for r in rows}


def find_channel(channels: Mapping[str, tuple[str, str]], wanted: str) -> str | None:
    """The id of the channel named or with the id ``wanted`` ("#general" too); None when
    there is none. A DM is found by its id only: its name may be a person's."""
    if wanted in channels:
        return wanted
    name = wanted.removeprefix("#")
    for cid, (cname, visibility) in sorted(channels.items()):
        if cname == name and visibility != "dm":
            return cid
    return None


async def read_stats(
    store: Store,
    since: datetime,
    until: datetime,
    *,
    channel_id: str | None = None,
    prices: Mapping[str, float] | None = None,
    channels: Mapping[str, tuple[str, str]] | None = None,
    hourly: bool = False,
) -> Stats:
    """What the store holds from ``since`` to ``until`` (one channel, or all); the
    series per UTC day, or per hour with ``hourly``."""
    names = channels if channels is not None else await channel_names(store)
    folder = Folder(names, prices or {}, hourly=hourly)
    in_window = and_(MessageRow.ts >= since, MessageRow.ts <= until)
    decided = and_(DecisionRow.decided_at >= since, DecisionRow.decided_at <= until)
    if channel_id is not None:
        in_window = and_(in_window, MessageRow.channel_id == channel_id)
        decided = and_(decided, DecisionRow.channel_id == channel_id)
    async with store.engine.connect() as conn:
        day = _utc_bucket(store.dialect, hourly)
        rows = await conn.execute(
            select(MessageRow.channel_id, day, func.count())
            .where(in_window)
            .group_by(MessageRow.channel_id, day)
        )
        folder.message_days((r[0], _as_time(r[1]), r[2]) for r in rows)
        traces = await _traces(conn, decided)
        times = await _message_times(conn, decided)
        result = await conn.execute(
            select(DecisionRow.id, DecisionRow.channel_id, DecisionRow.action,
                   DecisionRow.stage, DecisionRow.reason, DecisionRow.decided_at)
            .where(decided, _counted())
            .order_by(DecisionRow.id)
        )
        folder.decisions(
            DecisionFacts(r.channel_id, r.action, r.stage, r.reason, r.decided_at,
                          traces.get(r.id), times.get(r.id))
            for r in result
        )
        data = await _data_span(conn, channel_id)
    return folder.result(since, until, data)


async def data_span(store: Store, channel_id: str | None = None) -> DataSpan | None:
    """When the store's first and last messages (of one channel, or all) were written."""
    async with store.engine.connect() as conn:
        return await _data_span(conn, channel_id)


async def _data_span(conn: Any, channel_id: str | None) -> DataSpan | None:
    query = select(func.min(MessageRow.ts), func.max(MessageRow.ts))
    if channel_id is not None:
        query = query.where(MessageRow.channel_id == channel_id)
    first, last = (await conn.execute(query)).one()
    return None if first is None or last is None else DataSpan(first, last)


def _utc_bucket(dialect: str, hourly: bool) -> Any:
    """A message's UTC day (or hour) in SQL: SQLite keeps UTC ISO text, PostgreSQL a
    timestamptz."""
    if dialect == "postgresql":
        utc = func.timezone("UTC", MessageRow.ts)
        return func.date_trunc("hour", utc) if hourly else func.date(utc)
    return func.strftime("%Y-%m-%d %H:00:00", MessageRow.ts) if hourly \
        else func.date(MessageRow.ts)


def _as_time(value: Any) -> datetime:
    """A bucket as SQL gave it (ISO text, a date or a naive UTC timestamp), as UTC."""
    at: datetime
    if isinstance(value, str):
        at = datetime.fromisoformat(value)
    elif isinstance(value, datetime):
        at = value
    else:
        at = datetime(value.year, value.month, value.day)
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _counted() -> Any:
    """The decisions that count for something: a silent one only when its reason may
    name a budget, quiet or a fallback (the fold checks the words; LIKE is
    case-insensitive on SQLite). The rest, nearly every message's, are not read."""
    return or_(
        DecisionRow.action != "none",
        DecisionRow.llm_calls > 0,
        DecisionRow.reason.like("%budget%"),
        DecisionRow.reason.like("%quiet%"),
        DecisionRow.reason.like("%→%"),
    )


async def _traces(conn: Any, decided: Any) -> dict[int, dict[str, Any]]:
    """The traces worth reading: of decisions that acted or called a model (the others
    record no guard verdict, no call and no send)."""
    worth = or_(DecisionRow.action != "none", DecisionRow.llm_calls > 0)
    rows = await conn.execute(select(DecisionRow.id, DecisionRow.trace).where(decided, worth))
    return {r.id: r.trace or {} for r in rows}


async def _message_times(conn: Any, decided: Any) -> dict[int, datetime]:
    """A reply's or ack's message time, by decision id (for the latency)."""
    rows = await conn.execute(
        select(DecisionRow.id, MessageRow.ts)
        .join(MessageRow, MessageRow.id == DecisionRow.message_id)
        .where(decided, DecisionRow.action.in_(("reply", "ack")))
    )
    return {r.id: r.ts for r in rows}
