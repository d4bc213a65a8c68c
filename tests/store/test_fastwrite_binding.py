"""The SQLite batch binds values as SQLAlchemy's own processors do (kuuki.store.fastwrite),
so a row written in a batch reads back like one written through the Core path."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy.dialects import sqlite

from kuuki.store import fastwrite
from kuuki.store.engine import insert_ignore
from kuuki.store.records import MESSAGE_COLUMNS
from kuuki.store.schema import MessageRow
from kuuki.store.types import UTCDateTime, dump_json


def test_datetimes_are_bound_as_sqlalchemy_binds_them() -> None:
    dialect = sqlite.dialect()
    reference = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert reference is not None
    rng = random.Random(5)
    zones = [UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-5, minutes=-30)), None]
    for _ in range(2000):
        when = datetime(2000, 1, 1) + timedelta(seconds=rng.random() * 1e9)
        when = when.replace(microsecond=rng.choice([0, rng.randrange(1_000_000)]))
        zone = rng.choice(zones)
        value = when if zone is None else when.replace(tzinfo=zone)
        assert fastwrite.sqlite_datetime(value) == reference(value), value
    assert fastwrite.sqlite_datetime(None) is None


def test_the_message_plan_uses_the_checked_binding() -> None:
    plan = fastwrite.prepare(
        insert_ignore("sqlite", MessageRow, ["id"]), MESSAGE_COLUMNS, sqlite.dialect()
    )
    bound = dict(zip(plan.keys, plan.processors, strict=True))
    assert bound["ts"] is fastwrite.sqlite_datetime
    assert bound["mentions"] is dump_json
    assert dump_json([]) == "[]" and dump_json(["ann"]) == '["ann"]'
