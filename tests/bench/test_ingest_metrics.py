"""`kuuki bench ingest --metrics` (issue 27) measures the path with the metrics really on:
every decision of the run is counted by /metrics' registry."""

from __future__ import annotations

from kuuki.bench.ingest import ingest


async def test_the_metrics_run_counts_every_decision() -> None:
    on = await ingest(300, 5, metrics=True)
    assert on["metrics"] is True and on["decisions"] > 250
    assert on["metrics_decisions"] == on["decisions"]
    off = await ingest(300, 5)
    assert off["metrics_decisions"] is None and off["decisions"] == on["decisions"]
