from __future__ import annotations

from typing import Any

import pytest

from kuuki.errors import LLMBadOutput
from kuuki.llm.schema import parse_json, schema_errors

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "respond": {"type": "boolean"},
        "action": {"type": "string", "enum": ["none", "react", "reply"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["respond", "action"],
}


def test_a_matching_object_has_no_errors() -> None:
    value = {"respond": True, "action": "reply", "confidence": 0.5, "count": 2, "tags": ["a"]}
    assert schema_errors(value, SCHEMA) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"action": "none"}, "missing 'respond'"),
        ({"respond": 1, "action": "none"}, "expected boolean"),
        ({"respond": True, "action": "shout"}, "not one of"),
        ({"respond": True, "action": "none", "confidence": 2}, "above the maximum"),
        ({"respond": True, "action": "none", "confidence": -1}, "below the minimum"),
        ({"respond": True, "action": "none", "count": 1.5}, "expected integer"),
        ({"respond": True, "action": "none", "count": True}, "expected integer"),
        ({"respond": True, "action": "none", "tags": [1]}, "expected string"),
        ({"respond": True, "action": "none", "tags": ["a", "b", "c"]}, "more than 2"),
        (["not", "an", "object"], "expected object"),
    ],
)
def test_violations_are_named(value: Any, problem: str) -> None:
    assert any(problem in p for p in schema_errors(value, SCHEMA))


def test_parse_json_accepts_an_object_wrapped_in_chatter() -> None:
    text = 'Sure! ```json\n{"respond": false, "action": "none"}\n``` hope that helps'
    assert parse_json(text, SCHEMA) == {"respond": False, "action": "none"}


@pytest.mark.parametrize("text", ["", "   ", "no json here", '{"respond": "yes"}'])
def test_parse_json_rejects_garbage(text: str) -> None:
    with pytest.raises(LLMBadOutput):
        parse_json(text, SCHEMA)
