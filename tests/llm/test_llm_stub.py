from __future__ import annotations

from typing import Any

import pytest

from kuuki.app import judge_mode_for, reply_guard
from kuuki.guard.reply import Expect
from kuuki.llm.base import ChatMessage, current_purpose
from kuuki.llm.registry import create
from kuuki.llm.schema import schema_errors
from kuuki.llm.stub import StubLLM, passive_value
from kuuki.prompts import Prompts
from kuuki.settings import Settings
from kuuki.text.language import detect

ASK = [ChatMessage("user", "anything")]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {
                "type": "object",
                "properties": {
                    "respond": {"type": "boolean"},
                    "action": {"type": "string", "enum": ["reply", "react", "none"]},
                    "score": {"type": "number", "minimum": 0.2, "maximum": 1},
                    "n": {"type": "integer"},
                    "reason": {"type": "string"},
                    "topics": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["respond", "action", "score", "n", "reason", "topics"],
            },
            {"respond": False, "action": "none", "score": 0.2, "n": 0, "reason": "", "topics": []},
        ),
        (
            {
                "type": "object",
                "properties": {"mood": {"type": "string", "enum": ["UP", "DOWN", "SAME"]}},
                "required": ["mood"],
            },
            {"mood": "SAME"},
        ),
        (
            {"type": "object", "properties": {"kind": {"enum": ["question", "statement"]}}},
            {"kind": "question"},
        ),
        (
            {"type": "object", "properties": {"note": {"type": ["string", "null"]}}},
            {"note": None},
        ),
        (
            {
                "type": "object",
                "properties": {"offset": {"type": "integer", "minimum": -5, "maximum": -1}},
            },
            {"offset": -1},
        ),
    ],
)
async def test_structured_requests_get_a_valid_passive_object(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    llm = StubLLM()
    result = await llm.complete(ASK, json_schema=schema)
    assert result.data == expected
    assert schema_errors(result.data, schema) == []


async def test_free_text_is_empty_and_every_call_is_counted() -> None:
    llm = create("stub")
    assert isinstance(llm, StubLLM)
    for _ in range(3):
        assert (await llm.complete(ASK)).text == ""
    await llm.complete(ASK, json_schema={"title": "judge", "type": "object"})
    assert llm.calls == 4
    assert llm.by_purpose == {"text": 3, "judge": 1}


@pytest.mark.parametrize(("lang", "system", "said"), [
    ("en", "You are Kuu, a member of this chat.", "@Kuu what do you think of the new logo?"),
    ("ja", "あなたはこのチャットのメンバー、くうです。", "@くう ok?"),  # the prompt tells
])
async def test_what_the_bot_says_passes_the_guard_in_the_conversations_language(
    lang: str, system: str, said: str
) -> None:
    llm = StubLLM()
    guard = reply_guard(Settings(), Prompts(lang))
    texts = []
    for purpose in ("reply", "ack", "proactive", "reply-retry"):
        token = current_purpose.set(purpose)
        try:
            texts.append((await llm.complete(
                [ChatMessage("system", system), ChatMessage("user", f"{said} {purpose}")]
            )).text)
        finally:
            current_purpose.reset(token)
    for text in texts:
        assert detect(text) == lang
        verdict = guard.check(text, Expect(lang, [said], ["alice"]))
        assert verdict.ok, (text, verdict.reason)
    assert len(set(texts)) > 1  # not one sentence over and over
    token = current_purpose.set("summary")
    try:
        assert (await llm.complete([ChatMessage("user", said)])).text == ""
    finally:
        current_purpose.reset(token)


def test_auto_judge_mode_never_asks_the_stub() -> None:
    assert judge_mode_for("auto", StubLLM()) == "rules"
    assert judge_mode_for("hybrid", StubLLM()) == "hybrid"  # bench judge asks for it


def test_min_items_are_filled_with_passive_items() -> None:
    schema = {"type": "array", "items": {"type": "boolean"}, "minItems": 2}
    assert passive_value(schema) == [False, False]
