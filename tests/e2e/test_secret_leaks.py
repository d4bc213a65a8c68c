"""No configured secret in any text kuuki writes (issue 24): `kuuki bench secrets`
(kuuki.bench.secrets, whose doc says what the probe does) must find each configured
secret nowhere, while the echoing servers did get and echo every one and the errors still
say what happened (the HTTP status, ``***`` where the key was)."""

from __future__ import annotations

import json

import pytest

from kuuki.bench.secrets import SECRETS, probe
from kuuki.cli import main

PLACES = {"logs", "store rows", "kuuki why", "playground and /kuuki why"}


async def test_no_configured_secret_is_logged_stored_or_shown(store_url: str) -> None:
    found = await probe(store_url)

    # The servers really got the secrets and really echoed them (the test can fail).
    assert f"Bearer {SECRETS['llm api key']}" in found.auths
    assert f"Bearer {SECRETS['judge api key']}" in found.auths
    assert any(a.startswith("Basic ") for a in found.auths)  # the proxy's user:password
    assert {"tool", "tool403", "400t", "401", "404", "422", "429", "500", "sse"} <= found.faults
    assert found.asked >= 2
    # Every place was read, and no secret is in any of them.
    assert set(found.read) == PLACES and all(found.read.values()), found.read
    assert found.counts == {name: dict.fromkeys(PLACES, 0) for name in SECRETS}, found.counts

    # The errors still say what happened.
    for said in ("HTTP 422", "HTTP 400", "refused the API key (HTTP 401)",
                 "does not know model 'echo' (HTTP 404)", "rejected tools",
                 "the service answered HTTP 403", "send failed: _PlatformRefuses: 401"):
        assert said in found.everything, said
    assert "Incorrect API key provided: ***" in found.everything
    assert "http://proxy:***@127.0.0.1" in found.everything
    assert found.failures() == []


def test_bench_secrets_prints_one_json_object_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "secrets", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["benchmark"] == "secrets" and report["store"] == "sqlite"
    assert report["counts"] == {name: dict.fromkeys(PLACES, 0) for name in SECRETS}
    assert report["total"] == 0 and report["failures"] == []
    assert report["echoes"] and all(report["echoes"].values())
    assert report["understood"] and all(report["understood"].values())
    assert not any(secret in out for secret in SECRETS.values())
