from __future__ import annotations

import pytest

from kuuki.errors import LLMBadOutput, LLMTimeout
from kuuki.llm.base import ChatMessage, Warmable
from kuuki.llm.record import call_llm
from kuuki.llm.registry import create
from kuuki.testing.llm import REPLIES, ScriptedLLM, ScriptedLocalLLM

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


async def ask(llm: ScriptedLLM, purpose: str, schema: dict[str, object] | None = None) -> str:
    completion = await call_llm(llm, None, purpose, ASK, max_tokens=10, temperature=0,
                                json_schema=schema)
    assert completion is not None
    return completion.text


async def test_answers_are_routed_by_purpose_and_history_says_what_each_call_was_for() -> None:
    llm = ScriptedLLM("anything")
    llm.enqueue("the summary", purpose="memory_summary").enqueue("a reply", purpose="reply")
    assert await ask(llm, "reply") == "a reply"
    assert await ask(llm, "memory_summary") == "the summary"
    assert await ask(llm, "reply-retry") == "anything"  # an exact purpose, else the shared queue
    assert await ask(llm, "reply") == ""  # both queues spent: the default
    assert llm.purposes == ["reply", "memory_summary", "reply-retry", "reply"]
    assert llm.prompts("memory_summary") == ["persona\nhello"]
    assert llm.pending == 0


async def test_the_shared_queue_can_be_kept_for_replies() -> None:
    llm = ScriptedLLM("Hi!", queue_for=REPLIES)
    assert (await ask(llm, "memory_summary", SCHEMA)) == '{"respond": false}'
    assert await ask(llm, "judge") == ""
    assert await ask(llm, "reply-retry") == "Hi!"  # a family: reply covers its retries


async def test_a_default_per_purpose_and_a_default_worked_out_from_the_call() -> None:
    llm = ScriptedLLM(defaults={"judge": {"respond": True}},
                      default=lambda call: f"{call.purpose}: {call.messages[-1].content}")
    assert await ask(llm, "judge", SCHEMA) == '{"respond": true}'
    assert await ask(llm, "reply") == "reply: hello"


async def test_a_local_model_writes_nothing_before_its_load() -> None:
    llm = ScriptedLocalLLM("Hello!")
    with pytest.raises(AssertionError, match="before its load"):
        await llm.complete(ASK)
    await llm.warm()
    assert (await llm.complete(ASK)).text == "Hello!"
    assert llm.warms == 1 and isinstance(llm, Warmable)
    assert not isinstance(ScriptedLLM(), Warmable)  # only the local one is loaded at start-up
