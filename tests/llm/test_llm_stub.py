from __future__ import annotations

from typing import Any

import pytest

from kuuki.llm.base import ChatMessage
from kuuki.llm.registry import create
from kuuki.llm.schema import schema_errors
from kuuki.llm.stub import StubLLM, passive_value

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


def test_min_items_are_filled_with_passive_items() -> None:
    schema = {"type": "array", "items": {"type": "boolean"}, "minItems": 2}
    assert passive_value(schema) == [False, False]
