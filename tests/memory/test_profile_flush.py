"""A profile flush writes every changed profile, and one that fails loses none of them:
they are written by the next flush (the one on close at the latest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import ALICE, BOB, make


class OutageOnce:
    """The store's memories, refusing the first profile write as a database outage would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not name.startswith("set_memor"):
            return attr

        async def write(*a: Any, **k: Any) -> Any:
            if not self.failed:
                self.failed = True
                raise ConnectionError("database unavailable")
            return await attr(*a, **k)

        return write


async def test_profiles_a_failed_flush_could_not_write_are_written_by_the_next(
        tmp_path: Path) -> None:
    h = await make(tmp_path)
    profiles = h.memory.profiles
    profiles.store = OutageOnce(profiles.store)
    try:
        await h.say(ALICE, "the ramen place near the station is great")
        await h.say(BOB, "my cats love the new glasses")
        with pytest.raises(ConnectionError):
            await profiles.flush(h.clock.now())
        assert profiles.store.failed
        assert await h.app.store.memories.memories("user", kind="profile") == []
    finally:
        await h.app.close()  # the flush on close writes what the failed one could not
    again = await make(tmp_path)
    try:
        stored = {r.scope_id: r.content
                  for r in await again.app.store.memories.memories("user", kind="profile")}
        assert set(stored) == {"alice", "bob"}
        assert stored["alice"]["interactionCount"] == 1
        assert {"ramen", "station"} <= set(stored["alice"]["lastTopic"]["general"]["keywords"])
        assert "cat" in stored["bob"]["lastTopic"]["general"]["keywords"]
    finally:
        await again.app.close()
