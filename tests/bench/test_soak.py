"""`kuuki bench soak` on a small stream: what it reports, and that idle channels go (figures
are for docs/benchmarks.md, never asserted)."""

from __future__ import annotations

import json

import pytest

from kuuki.cli import main


def test_soak_reports_rss_over_time_and_drops_every_channel_once_idle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "soak", "--messages", "600", "--channels", "40",
                 "--sample-every", "200"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["benchmark"] == "soak" and report["messages"] == 600
    assert [s["messages"] for s in report["samples"]] == [200, 400, 600]
    assert all(s["rss_mb"] > 0 for s in report["samples"])
    assert report["live_channels_end_of_traffic"] == 40
    assert report["live_channels_after_idle"] == 0  # every channel evicted once idle
    assert report["channels_evicted"] >= 40
    for key in ("rss_start_mb", "rss_end_of_traffic_mb", "rss_after_idle_mb", "rss_peak_mb"):
        assert report[key] > 0
