"""The grammar-constrained call format: tools for a model with no function calling of its own.

A local GGUF model is offered tools through its ordinary chat template. The system message
lists them and asks for one JSON object; a JSON schema — turned into a llama.cpp grammar by
the back-end — makes the model write exactly one of

    {"tool": "none"}                                   answer in words (asked next)
    {"tool": "<name>", "arguments": {...}}             the arguments held to that tool's schema

Earlier rounds go back into the chat as plain turns: the call as the assistant's JSON, its
result as a user turn. Nothing here runs a tool; kuuki.respond.tools does, after validating again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kuuki.llm.base import ChatMessage, ToolCall, ToolSpec

INSTRUCTION = (
    "You may look something up before you answer. Functions:\n{tools}\n"
    'Reply with one JSON object: {{"tool": "<function>", "arguments": {{...}}}} to call a '
    'function when the message asks for something a function knows, or {{"tool": "none"}} '
    "to answer it yourself."
)


def choice_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """One schema for "no tool" or a call of any tool with arguments fit for it."""
    # Tools first, "none" last: offered "none" first, the shipped model took it every time.
    options: list[dict[str, Any]] = []
    for t in tools:
        options.append({
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": t.parameters},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    options.append({
        "type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"],
        "additionalProperties": False,
    })
    return {"anyOf": options}


def with_instruction(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
                     ) -> list[ChatMessage]:
    """The chat as plain turns, the call format explained in the system message."""
    listed = "\n".join(f"- {t.name}: {t.description} Arguments: {json.dumps(t.parameters)}"
                       for t in tools)
    note = INSTRUCTION.format(tools=listed)
    turns = plain_turns(messages)
    if turns and turns[0].role == "system":
        return [ChatMessage("system", f"{turns[0].content}\n\n{note}"), *turns[1:]]
    return [ChatMessage("system", note), *turns]


def plain_turns(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Tool calls as the assistant's JSON, results as user turns: any chat template
    reads them."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[ChatMessage] = []
    for m in messages:
        if m.tool_calls:
            calls = [{"tool": c.name, "arguments": _loads(c.arguments)} for c in m.tool_calls]
            text = "\n".join(json.dumps(c, ensure_ascii=False) for c in calls)
            out.append(ChatMessage("assistant", text))
        elif m.role == "tool":
            out.append(ChatMessage("user", f"Result of {names.get(m.tool_call_id, 'the call')}: "
                                           f"{m.content}"))
        else:
            out.append(m)
    return out


def read_choice(data: Any, tools: Sequence[ToolSpec]) -> ToolCall | None:
    """The call the model chose, or None for "none" (or anything not a known tool)."""
    if not isinstance(data, dict):
        return None
    name = data.get("tool")
    if name not in {t.name for t in tools}:
        return None
    return ToolCall("", str(name), json.dumps(data.get("arguments", {}), ensure_ascii=False))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
