from __future__ import annotations

import pytest

from kuuki.errors import LLMBadOutput, LLMTimeout
from kuuki.llm.base import ChatMessage
from kuuki.llm.registry import create
from kuuki.testing.llm import ScriptedLLM

SCHEMA = {
    "type": "object",
    "properties": {"respond": {"type": "boolean"}},
    "required": ["respond"],
}
ASK = [ChatMessage("system", "persona"), ChatMessage("user", "hello")]


async def test_answers_come_in_order_and_calls_are_recorded() -> None:
    llm = ScriptedLLM().enqueue("first", {"respond": True})
    one = await llm.complete(ASK, max_tokens=10)
    two = await llm.complete(ASK, json_schema=SCHEMA, max_tokens=20, temperature=0.1)
    assert one.text == "first" and one.data is None
    assert two.data == {"respond": True}
    assert [c.max_tokens for c in llm.history] == [10, 20]
    assert llm.history[0].json_schema is None
    assert llm.history[1].json_schema == SCHEMA
    assert llm.history[1].messages == tuple(ASK)
    assert "hello" in llm.history[1].prompt


async def test_an_enqueued_exception_is_raised() -> None:
    llm = ScriptedLLM(LLMTimeout("slow"))
    with pytest.raises(LLMTimeout, match="slow"):
        await llm.complete(ASK)
    assert llm.calls == 1


async def test_garbage_or_mismatching_answers_are_bad_output() -> None:
    llm = ScriptedLLM("not json", {"respond": "maybe"})
    with pytest.raises(LLMBadOutput):
        await llm.complete(ASK, json_schema=SCHEMA)
    with pytest.raises(LLMBadOutput):
        await llm.complete(ASK, json_schema=SCHEMA)


async def test_empty_queue_uses_the_default() -> None:
    llm = ScriptedLLM()
    assert (await llm.complete(ASK)).text == ""
    assert (await llm.complete(ASK, json_schema=SCHEMA)).data == {"respond": False}
    fixed = ScriptedLLM(default="ok")
    assert (await fixed.complete(ASK)).text == "ok"


async def test_default_none_fails_an_unexpected_call() -> None:
    llm = ScriptedLLM(default=None)
    with pytest.raises(AssertionError, match="unexpected"):
        await llm.complete(ASK)


def test_registered_as_scripted() -> None:
    assert isinstance(create("scripted"), ScriptedLLM)
