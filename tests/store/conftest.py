"""Store fixtures: a `Store` on each database `store_url` (tests/conftest.py) names."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kuuki.store import Store


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    s = await Store.open(store_url)
    try:
        yield s
    finally:
        await s.close()
