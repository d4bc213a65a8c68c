from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("KUUKI_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's kuuki.toml, env settings or real data dir."""
    for key in list(os.environ):
        if key.startswith(("KUUKI_", "JUDGE_", "EAVESDROP_", "DISCORD_", "SLACK_")) and key not in (
            "KUUKI_TEST_POSTGRES_URL",
            "KUUKI_SHARED_DATA",
        ):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("KUUKI_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
