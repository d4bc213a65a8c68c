"""OpenAICompatLLM's tools: the standard ``tools`` / ``tool_calls`` fields on the wire."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from llm_fakes import FakeServer, Responder, chat_body

from kuuki.llm.base import ChatMessage, ToolCall, ToolSpec
from kuuki.llm.openai_compat import OpenAICompatLLM

NOW = ToolSpec("now", "the time", {"type": "object", "properties": {}})
ASK = [ChatMessage("system", "be brief"), ChatMessage("user", "what time is it?")]


def calling(*calls: tuple[str, str, str]) -> dict[str, Any]:
    body = chat_body("")
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
        for i, n, a in calls
    ]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


@pytest.fixture
async def llm_for() -> AsyncIterator[Callable[[FakeServer], OpenAICompatLLM]]:
    made: list[OpenAICompatLLM] = []

    async def no_sleep(_: float) -> None:
        return None

    def make(server: FakeServer) -> OpenAICompatLLM:
        llm = OpenAICompatLLM("fake-model", server.base_url, timeout_s=5, sleep=no_sleep,
                              rng=random.Random(0))
        made.append(llm)
        return llm

    yield make
    for llm in made:
        await llm.aclose()


async def test_tools_are_offered_and_calls_read_back(
    fake_server: Callable[[Responder], FakeServer], llm_for: Any
) -> None:
    server = fake_server(lambda _: (200, calling(("c1", "now", "{}"))))
    llm = llm_for(server)
    got = await llm.complete_tools(ASK, [NOW])
    assert got.tool_calls == (ToolCall("c1", "now", "{}"),) and got.text == ""
    sent = server.requests[0]
    assert sent["tool_choice"] == "auto"
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "now", "description": "the time", "parameters": NOW.parameters}}]


async def test_tool_turns_are_sent_in_the_standard_shape(
    fake_server: Callable[[Responder], FakeServer], llm_for: Any
) -> None:
    server = fake_server(lambda _: (200, chat_body("It's ten.")))
    history = [*ASK, ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "now", "{}"),)),
               ChatMessage("tool", '{"time": "10:00"}', tool_call_id="c1")]
    got = await llm_for(server).complete_tools(history, [NOW])
    assert got.text == "It's ten."
    sent = server.requests[0]["messages"]
    assert sent[2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"time": "10:00"}'}


async def test_a_server_that_rejects_tools_is_answered_without_them(
    fake_server: Callable[[Responder], FakeServer], llm_for: Any
) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "tools" in body:
            return 400, {"error": {"message": "tools are not supported", "type": "invalid"}}
        return 200, chat_body("Ten o'clock.")

    server = fake_server(respond)
    llm = llm_for(server)
    assert llm.tool_support() is None
    got = await llm.complete_tools(ASK, [NOW])
    assert got.text == "Ten o'clock."
    assert "rejected tools" in (llm.tool_support() or "")
    await llm.complete_tools(ASK, [NOW])  # remembered: no second try with tools
    assert ["tools" in r for r in server.requests] == [True, False, False]


async def test_a_server_that_echoes_the_key_while_rejecting_tools_is_quoted_without_it(
    fake_server: Callable[[Responder], FakeServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = "sk-echoed-DO-NOT-LEAK-0123456789"

    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "tools" in body:
            auth = server.headers[-1].get("authorization", "")
            return 400, {"error": {"message": f"Incorrect API key provided: {key}; {auth}"}}
        return 200, chat_body("Ten o'clock.")

    server = fake_server(respond)
    llm = OpenAICompatLLM("fake-model", server.base_url, api_key=key, timeout_s=5)
    try:
        got = await llm.complete_tools(ASK, [NOW])
    finally:
        await llm.aclose()
    assert got.text == "Ten o'clock." and server.headers[0]["authorization"] == f"Bearer {key}"
    why = llm.tool_support() or ""
    assert "rejected tools (HTTP 400: " in why and "Incorrect API key provided: ***" in why
    assert "Bearer ***" in why
    assert key not in why and key not in caplog.text
    assert "rejected tools (HTTP 400" in caplog.text
