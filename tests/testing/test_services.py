"""A missing service skips a test on a developer's machine and fails it under CI=true."""

from __future__ import annotations

import pytest

from kuuki.testing.services import service_missing


@pytest.mark.parametrize("value", ["true", "1", "TRUE", "yes"])
def test_under_ci_a_missing_service_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception) as failed:
        service_missing("RabbitMQ", "KUUKI_TEST_AMQP_URL is not set")
    assert "RabbitMQ not available: KUUKI_TEST_AMQP_URL is not set" in str(failed.value)
    assert "CI=true" in str(failed.value)


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_elsewhere_a_missing_service_skips_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception) as skipped:
        service_missing("chromium", "no browser at /usr/bin/chromium")
    assert str(skipped.value) == "chromium not available: no browser at /usr/bin/chromium"
