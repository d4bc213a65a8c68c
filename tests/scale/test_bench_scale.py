"""`kuuki bench scale` times the product's worker on the ingest bench's synthetic chat: the
worker must do the whole path, answers included, not fail the events it should answer."""

from __future__ import annotations

import io
import os

import pytest

from kuuki.bench.scale import bench_scale
from kuuki.testing.services import service_missing

pytestmark = pytest.mark.postgres


async def test_the_bench_worker_answers_the_synthetic_chat_without_a_failed_event(
    amqp_url: str, postgres_url: str, capfd: pytest.CaptureFixture[str],
) -> None:
    base = os.environ.get("KUUKI_TEST_AMQP_URL", "")
    if not base:
        service_missing("RabbitMQ", "KUUKI_TEST_AMQP_URL is not set")
    out = io.StringIO()
    (run,) = await bench_scale(base, postgres_url, messages=600, channels=10, workers=(1,),
                               out=out)
    assert run.messages == 600 and "1 worker:" in out.getvalue()
    _, err = capfd.readouterr()
    # the workers are child processes writing to this process's stderr
    assert "no outbox" not in err
    assert " failed" not in err, err[-2000:]
