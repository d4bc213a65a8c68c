"""A start-up that fails after the store opened closes it again.

Before, `kuuki replay` with a bad model file printed the error and then never exited: the
store's aiosqlite threads were still running.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kuuki.app import build_app
from kuuki.clock import VirtualClock
from kuuki.domain import User
from kuuki.errors import ConfigError
from kuuki.replay.runner import RecordingOutbox
from kuuki.settings import Settings
from kuuki.store import Store


async def test_a_failed_build_closes_the_store_it_was_given(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite:///{tmp_path}/k.sqlite3")
    clock = VirtualClock()
    settings = Settings()
    settings = replace(settings, tools=replace(settings.tools, enabled=("no_such_tool",)))
    with pytest.raises(ConfigError, match="unknown tool 'no_such_tool'"):
        await build_app(settings, clock=clock, outbox=RecordingOutbox(clock, User("b", "b")),
                        llm=None, judge_llm=None, store=store)
    assert store.closed
