"""`kuuki bench broker` against the real brokers, with small counts.

The RabbitMQ case runs against KUUKI_TEST_AMQP_URL (.ci/rabbitmq.sh starts it), the NATS
case against KUUKI_TEST_NATS_URL (.ci/nats.sh); unset, each is a missing service: a skip
that says so, a failure under CI=true (.ci/run starts both). Once a case runs, a bench
that measured nothing fails with the bench's own line. They assert what the bench counted (every message handled,
in each channel's order, none lost), never its timings.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket

import pytest

from kuuki.bench.broker import Handled, bench_broker, plan, tally
from kuuki.bench.broker_wire import DEFAULT_NATS, PARTITIONS, PREFETCH, event
from kuuki.testing.services import service_missing

# Read at import: the autouse fixture in tests/conftest.py clears KUUKI_* variables.
AMQP = os.environ.get("KUUKI_TEST_AMQP_URL", "")
# NATS is only the comparison the broker choice was made against: its case runs when
# KUUKI_TEST_NATS_URL is set (`eval "$(bash .ci/nats.sh)"`), not in CI, where one of its
# failover runs once waited on a stuck JetStream consumer.
NATS = os.environ.get("KUUKI_TEST_NATS_URL", "")
MESSAGES = 600


def test_plan_numbers_each_channel_from_zero_and_events_are_about_1kb() -> None:
    todo = plan(7, 3)
    assert todo == [("c000", 0), ("c001", 0), ("c002", 0), ("c000", 1), ("c001", 1),
                    ("c002", 1), ("c000", 2)]
    assert 900 <= len(event("r1", "c000", 12)) <= 1100


def test_tally_counts_lost_twice_and_out_of_order() -> None:
    expected = [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    handled = [Handled("a", 0, False, 1.0), Handled("a", 2, False, 2.0),
               Handled("a", 1, True, 3.0), Handled("a", 2, True, 4.0),
               Handled("a", 0, True, 5.0)]
    lost, twice, disorder = tally(expected, handled)
    # b0 lost; a2 and a0 twice; a1 first handled after a2 (the repeat of a0 is no disorder)
    assert (lost, twice, disorder) == (1, 2, 1)


async def test_an_unreachable_engine_is_one_skip_line_not_a_crash() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = io.StringIO()
    rows = await bench_broker(10, 2, f"amqp://guest:secret@127.0.0.1:{port}/",
                              f"nats://127.0.0.1:{port}", out)
    assert rows == []
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("rabbitmq: skipped: cannot connect to amqp://guest:***@")
    assert lines[1].startswith("nats: skipped: cannot connect to nats://")
    assert "secret" not in out.getvalue()


@pytest.mark.parametrize("engine", ["rabbitmq", "nats"])
async def test_bench_keeps_order_and_loses_nothing(engine: str) -> None:
    if engine == "nats" and not NATS:
        service_missing("NATS", "KUUKI_TEST_NATS_URL is not set (start it: eval \"$(bash "
                        ".ci/nats.sh)\")")
    if engine == "rabbitmq" and not AMQP:
        service_missing("RabbitMQ", "KUUKI_TEST_AMQP_URL is not set (start it: eval \"$(bash "
                        ".ci/rabbitmq.sh)\")")
    out = io.StringIO()
    rows = await asyncio.wait_for(bench_broker(MESSAGES, 20, AMQP, NATS or DEFAULT_NATS, out,
                                               (engine,)), 300)
    if not rows:
        pytest.fail(f"the {engine} bench measured nothing: {out.getvalue().strip()}")
    by_case = {row.case: row for row in rows}
    assert list(by_case) == ["publish, confirmed", "drain, 1 consumer", "drain, 2 consumers",
                             "failover, backlog", "failover, live"], out.getvalue()
    for case in ("drain, 1 consumer", "drain, 2 consumers"):
        row = by_case[case]
        assert (row.handled, row.lost, row.twice, row.disorder) == (MESSAGES, 0, 0, 0), case
    if engine != "rabbitmq":
        # NATS's failovers are reported, not asserted: its standby gets the dead owner's
        # messages only when their ack wait ends and its lease (written for the bench)
        # expires, which the bench does not always wait out — in CI runs it counted 50,
        # 111 and 200 of 600 undelivered, once with nothing yet at the standby. That is
        # one of the reasons RabbitMQ was chosen (docs/decisions.md).
        return
    for case in ("failover, backlog", "failover, live"):
        failover = by_case[case]
        assert failover.lost == 0, out.getvalue()
        assert failover.takeover_s is not None, f"{case}: the standby never received anything"
        # At least once: only what the dead consumer had in flight may be handled again.
        assert failover.twice <= PREFETCH * PARTITIONS
        # SAC hands the queue over with its unacked messages first
        assert failover.disorder == 0, out.getvalue()
