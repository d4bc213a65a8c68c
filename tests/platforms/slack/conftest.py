from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kuuki.settings import Settings
from kuuki.testing.slack_driver import SlackDriver


@pytest.fixture
async def driver() -> AsyncIterator[SlackDriver]:
    d = SlackDriver()
    await d.start(Settings())
    try:
        yield d
    finally:
        await d.stop()
