from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from llm_fakes import FakeServer, Responder, fake_servers

from kuuki.testing.llm_server import llama_server


@pytest.fixture
def fake_server() -> Iterator[Callable[[Responder], FakeServer]]:
    """``start(respond)`` for fake OpenAI servers, all stopped after the test."""
    with fake_servers() as start:
        yield start


@pytest.fixture(scope="session")
def llama_server_url() -> Iterator[tuple[str, str]]:
    """(base_url, model) of a real llama-cpp-python OpenAI server running SmolLM2."""
    with llama_server() as server:
        yield server.base_url, server.model
