"""JSON-schema checking for structured LLM output.

Only the subset kuuki's prompts use is understood: ``type`` (object, string, boolean,
number, integer, array, null, or a list of those), ``properties``, ``required``,
``additionalProperties: false``, ``enum``, ``const``, ``items``, ``minItems``/``maxItems``,
``minLength``/``maxLength`` and ``minimum``/``maximum``. Anything else is ignored, which
errs on the side of accepting an answer rather than discarding a usable one. Hand-written
so that back-ends need no extra dependency for a few dozen lines of checks.
"""

from __future__ import annotations

import json
from typing import Any

from kuuki.errors import LLMBadOutput

_TYPE_CHECKS: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "number": (int, float),
    "integer": int,
}


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``, as readable ``path: problem`` strings."""
    problems = _type_errors(value, schema, path)
    if problems:
        # Further checks on a value of the wrong type would only add noise.
        return problems
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if isinstance(value, dict):
        problems += _object_errors(value, schema, path)
    elif isinstance(value, list):
        problems += _array_errors(value, schema, path)
    elif isinstance(value, str):
        problems += _string_errors(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        problems += _number_errors(value, schema, path)
    return problems


def validate(value: Any, schema: dict[str, Any]) -> None:
    """Raise LLMBadOutput unless ``value`` matches ``schema``."""
    problems = schema_errors(value, schema)
    if problems:
        raise LLMBadOutput("output does not match the schema: " + "; ".join(problems[:5]))


def parse_json(text: str, schema: dict[str, Any]) -> Any:
    """Parse a model's JSON answer and validate it; LLMBadOutput if either step fails.

    Models sometimes wrap the object in a Markdown fence or chat around it, so the
    outermost ``{...}`` is tried when the whole text is not JSON.
    """
    stripped = text.strip()
    if not stripped:
        raise LLMBadOutput("empty answer where a JSON object was required")
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise LLMBadOutput(f"answer is not JSON: {_preview(stripped)}") from exc
        try:
            value = json.loads(stripped[start : end + 1])
        except json.JSONDecodeError as inner:
            raise LLMBadOutput(f"answer is not JSON: {_preview(stripped)}") from inner
    validate(value, schema)
    return value


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _type_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    wanted = schema.get("type")
    if wanted is None:
        return []
    names = wanted if isinstance(wanted, list) else [wanted]
    if any(_is_type(value, name) for name in names):
        return []
    return [f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    # bool is an int subclass in Python, but not a number in JSON.
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    check = _TYPE_CHECKS.get(name)
    return check is None or isinstance(value, check)


def _object_errors(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    problems = [
        f"{path}: missing {key!r}" for key in schema.get("required", []) if key not in value
    ]
    properties: dict[str, Any] = schema.get("properties", {})
    for key, item in value.items():
        if key in properties:
            problems += schema_errors(item, properties[key], f"{path}.{key}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{path}: unexpected key {key!r}")
    return problems


def _array_errors(value: list[Any], schema: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if len(value) < schema.get("minItems", 0):
        problems.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: more than {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            problems += schema_errors(item, items, f"{path}[{i}]")
    return problems


def _string_errors(value: str, schema: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if len(value) < schema.get("minLength", 0):
        problems.append(f"{path}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: longer than {schema['maxLength']} characters")
    return problems


def _number_errors(value: float, schema: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    return problems
