"""OpenAICompatLLM against a real llama-cpp-python server running SmolLM2."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kuuki.llm.base import ChatMessage
from kuuki.llm.openai_compat import OpenAICompatLLM
from kuuki.llm.schema import schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "respond": {"type": "boolean"},
        "action": {"type": "string", "enum": ["none", "react", "reply"]},
    },
    "required": ["respond", "action"],
}


@pytest.fixture
async def llm(llama_server_url: tuple[str, str]) -> AsyncIterator[OpenAICompatLLM]:
    base_url, model = llama_server_url
    async with OpenAICompatLLM(model=model, base_url=base_url, timeout_s=120) as client:
        yield client


async def test_plain_completion(llm: OpenAICompatLLM) -> None:
    result = await llm.complete(
        [ChatMessage("user", "Say hello to Alice in one short sentence.")], max_tokens=24
    )
    assert result.text.strip()
    assert result.usage.prompt_tokens > 0 and 0 < result.usage.completion_tokens <= 24


async def test_json_schema_completion(llm: OpenAICompatLLM) -> None:
    result = await llm.complete(
        [
            ChatMessage("system", "Decide whether the assistant should answer the message."),
            ChatMessage("user", "Bob: has anyone seen my keys?"),
        ],
        json_schema=SCHEMA,
        max_tokens=48,
        temperature=0.2,
    )
    assert isinstance(result.data, dict)
    assert schema_errors(result.data, SCHEMA) == []
