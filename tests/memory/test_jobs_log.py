"""A memory job stopped on purpose (for a reply, or at shutdown) is not a warning."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from kuuki.domain import DecisionTrace, LLMCallRecord
from kuuki.memory.jobs import JobRecord, Jobs

AT = datetime(2026, 1, 5, tzinfo=UTC)


def _trace(outcome: str) -> DecisionTrace:
    trace = DecisionTrace("m1", "general", AT)
    trace.llm_calls.append(LLMCallRecord("memory_summary", "m", 0, 0, 1.0, outcome, "x"))
    return trace


@pytest.mark.parametrize(("outcome", "warned"), [("interrupted", False), ("unavailable", True)])
def test_only_real_failures_are_warnings(
    outcome: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    jobs = Jobs()
    with caplog.at_level(logging.DEBUG, logger="kuuki.memory"):
        jobs.record(JobRecord("summary", "general", AT, False, "model: x", _trace(outcome)))
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert bool(warnings) is warned
    assert jobs.of("summary")[-1].ok is False  # still recorded as not written
