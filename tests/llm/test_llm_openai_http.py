"""OpenAICompatLLM against a tiny local HTTP server: retries, errors, JSON handling."""

from __future__ import annotations

import json
import logging
import random
import traceback
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from llm_fakes import FakeServer, Responder, chat_body

from kuuki.errors import LLMBadOutput, LLMError, LLMTimeout, LLMUnavailable
from kuuki.llm.base import ChatMessage
from kuuki.llm.openai_compat import OpenAICompatLLM
from kuuki.testing.llm_server import free_port

ASK = [ChatMessage("system", "be brief"), ChatMessage("user", "hi")]
SCHEMA = {
    "type": "object",
    "properties": {"respond": {"type": "boolean"}},
    "required": ["respond"],
}
SECRET = "sk-test-DO-NOT-LEAK-4242"

StartServer = Callable[[Responder], FakeServer]


class Sleeps:
    """Stands in for asyncio.sleep: remembers the delays, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make_llm(sleeps: Sleeps) -> AsyncIterator[Callable[..., OpenAICompatLLM]]:
    made: list[OpenAICompatLLM] = []

    def make(base_url: str, **settings: Any) -> OpenAICompatLLM:
        settings = {"sleep": sleeps, "rng": random.Random(0), "timeout_s": 5.0, **settings}
        llm = OpenAICompatLLM(model="fake-model", base_url=base_url, **settings)
        made.append(llm)
        return llm

    yield make
    for llm in made:
        await llm.aclose()


def answers(*script: tuple[int, dict[str, Any]]) -> Responder:
    """Reply with the script's entries in order, repeating the last one forever."""
    queue = list(script)

    def respond(_: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


RATE_LIMITED = (429, {"error": {"message": "slow down", "type": "rate_limit"}})
BROKEN = (500, {"error": {"message": "boom", "type": "server_error"}})


async def test_plain_completion(fake_server: StartServer, make_llm: Any) -> None:
    server = fake_server(answers((200, chat_body("  hello there  "))))
    result = await make_llm(server.base_url).complete(ASK, max_tokens=12, temperature=0.3)
    assert result.text == "hello there"
    assert result.model == "fake-model"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 3)
    sent = server.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert sent["max_tokens"] == 12 and sent["temperature"] == 0.3
    assert "response_format" not in sent


async def test_429_twice_then_success_retries_with_growing_delays(
    fake_server: StartServer, make_llm: Any, sleeps: Sleeps
) -> None:
    server = fake_server(answers(RATE_LIMITED, RATE_LIMITED, (200, chat_body("ok"))))
    result = await make_llm(server.base_url, max_retries=3).complete(ASK)
    assert result.text == "ok"
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2
    assert 0 < sleeps.delays[0] < sleeps.delays[1]


async def test_500_forever_gives_up_after_max_retries(
    fake_server: StartServer, make_llm: Any, sleeps: Sleeps
) -> None:
    server = fake_server(answers(BROKEN))
    with pytest.raises(LLMUnavailable, match="HTTP 500"):
        await make_llm(server.base_url, max_retries=3).complete(ASK)
    assert len(server.requests) == 4
    assert len(sleeps.delays) == 3
    assert sleeps.delays == sorted(sleeps.delays)
    assert max(sleeps.delays) <= 8.0


async def test_a_server_that_never_answers_times_out(
    fake_server: StartServer, make_llm: Any, sleeps: Sleeps
) -> None:
    server = fake_server(answers((0, {})))
    with pytest.raises(LLMTimeout):
        await make_llm(server.base_url, timeout_s=0.5).complete(ASK)
    assert len(server.requests) == 1  # timeouts are not retried
    assert sleeps.delays == []


async def test_nothing_listening_is_unavailable(make_llm: Any, sleeps: Sleeps) -> None:
    llm = make_llm(f"http://127.0.0.1:{free_port()}/v1", max_retries=2)
    with pytest.raises(LLMUnavailable, match="cannot connect"):
        await llm.complete(ASK)
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize("content", ["this is not json", '{"respond": "perhaps"}', "   "])
async def test_bad_structured_answers_are_bad_output(
    fake_server: StartServer, make_llm: Any, content: str
) -> None:
    server = fake_server(answers((200, chat_body(content))))
    with pytest.raises(LLMBadOutput):
        await make_llm(server.base_url).complete(ASK, json_schema=SCHEMA)


async def test_an_empty_text_answer_is_bad_output(fake_server: StartServer, make_llm: Any) -> None:
    server = fake_server(answers((200, chat_body(""))))
    with pytest.raises(LLMBadOutput, match="empty"):
        await make_llm(server.base_url).complete(ASK)


async def test_json_schema_is_requested_and_the_answer_parsed(
    fake_server: StartServer, make_llm: Any
) -> None:
    server = fake_server(answers((200, chat_body('{"respond": true}'))))
    result = await make_llm(server.base_url).complete(ASK, json_schema={**SCHEMA, "title": "judge"})
    assert result.data == {"respond": True}
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "judge"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["properties"] == SCHEMA["properties"]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "json_schema not supported"),
        (422, "unknown type"),
        # What llama-cpp-python's server really says.
        (500, "validation error: ('body', 'response_format', 'type') should be 'json_object'"),
    ],
)
async def test_a_rejected_json_schema_falls_back_to_json_mode(
    fake_server: StartServer, make_llm: Any, sleeps: Sleeps, status: int, message: str
) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("response_format", {}).get("type") == "json_schema":
            return status, {"error": {"message": message}}
        return 200, chat_body('{"respond": false}')

    server = fake_server(respond)
    llm = make_llm(server.base_url)
    result = await llm.complete(ASK, json_schema=SCHEMA)
    assert result.data == {"respond": False}
    fallback = server.requests[1]
    assert fallback["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert sleeps.delays == []
    system = fallback["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("be brief")
    assert json.dumps(SCHEMA) in system["content"]
    # The server's answer is remembered: the next call goes straight to JSON mode.
    await llm.complete(ASK, json_schema=SCHEMA)
    assert len(server.requests) == 3
    assert server.requests[2]["response_format"]["type"] == "json_object"


async def test_json_mode_without_schema_is_the_last_resort(
    fake_server: StartServer, make_llm: Any
) -> None:
    def respond(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["response_format"] != {"type": "json_object"}:
            return 400, {"error": {"message": "unsupported"}}
        return 200, chat_body('{"respond": true}')

    server = fake_server(respond)
    result = await make_llm(server.base_url).complete(ASK, json_schema=SCHEMA)
    assert result.data == {"respond": True}
    assert len(server.requests) == 3


async def test_a_server_rejecting_every_json_mode_is_an_error(
    fake_server: StartServer, make_llm: Any
) -> None:
    server = fake_server(answers((400, {"error": {"message": "no JSON here"}})))
    with pytest.raises(LLMError, match="rejected"):
        await make_llm(server.base_url).complete(ASK, json_schema=SCHEMA)
    assert len(server.requests) == 3


async def test_a_400_without_json_is_an_error_not_a_retry(
    fake_server: StartServer, make_llm: Any, sleeps: Sleeps
) -> None:
    server = fake_server(answers((400, {"error": {"message": "context too long"}})))
    with pytest.raises(LLMError, match="context too long"):
        await make_llm(server.base_url).complete(ASK)
    assert len(server.requests) == 1 and sleeps.delays == []


def _full_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


@pytest.mark.parametrize(
    ("status", "error"),
    [(401, LLMUnavailable), (403, LLMUnavailable), (400, LLMError), (500, LLMUnavailable)],
)
async def test_the_api_key_never_leaks(
    fake_server: StartServer,
    make_llm: Any,
    caplog: pytest.LogCaptureFixture,
    status: int,
    error: type[LLMError],
) -> None:
    caplog.set_level(logging.DEBUG)

    # A careless server that echoes the credentials it was sent in its error message.
    def respond(_: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        auth = server.headers[-1].get("authorization", "")
        return status, {"error": {"message": f"bad credentials {auth}"}}

    server = fake_server(respond)
    with pytest.raises(error) as caught:
        await make_llm(server.base_url, api_key=SECRET, max_retries=1).complete(ASK)
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"  # it was really sent
    assert SECRET not in _full_text(caught.value)
    assert SECRET not in caplog.text
    if status in (401, 403):
        assert "api_key" in str(caught.value)


async def test_a_password_in_the_base_url_is_sent_as_basic_auth_and_never_shown(
    fake_server: StartServer, make_llm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    password = "proxy-pw-DO-NOT-LEAK-77"

    def respond(_: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 422, {"error": {"message": f"bad request from {server.headers[-1]}"}}

    server = fake_server(respond)
    url = server.base_url.replace("http://", f"http://proxy:{password}@")
    llm = make_llm(url, api_key=SECRET)
    with pytest.raises(LLMError) as caught:
        await llm.complete(ASK)
    assert server.headers[0]["authorization"].startswith("Basic ")  # as httpx sends it
    said = _full_text(caught.value)
    assert "http://proxy:***@127.0.0.1" in said and "HTTP 422" in said
    assert llm.base_url.startswith("http://proxy:***@")
    for text in (said, caplog.text):
        assert password not in text and SECRET not in text
