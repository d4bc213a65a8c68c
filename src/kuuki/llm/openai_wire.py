"""The chat-completions wire shapes of the OpenAI-compatible back-end: messages and tool
calls to and from the server, the requests that ask for JSON in each mode, and what an
error response says (status, ``Retry-After``, the cause of a connection failure), with any
secret a server echoed masked (kuuki.text.secrets)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import openai

from kuuki.llm.base import ChatMessage, ToolCall
from kuuki.text.secrets import redact, split_userinfo


def wire_message(m: ChatMessage) -> dict[str, Any]:
    """One message in the chat-completions shape, tool calls and results included."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        # "" rather than null: llama-cpp-python's server refuses a null content.
        out["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    return out


def tool_calls_of(message: Any) -> tuple[ToolCall, ...]:
    """The calls in an answer; anything malformed becomes a call the toolbox will refuse
    (an unknown name, arguments that are not JSON), never an exception here."""
    out = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or ()):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
        out.append(ToolCall(
            str(getattr(call, "id", None) or f"call_{i}"),
            name if isinstance(name, str) else "",
            arguments if isinstance(arguments, str) else "",
        ))
    return tuple(out)


class FormatRejected(Exception):
    """The server answered 400/422 to a request that carried a response_format."""


def json_request(
    messages: Sequence[ChatMessage], json_schema: dict[str, Any], mode: str
) -> tuple[list[ChatMessage], dict[str, Any]]:
    if mode == "json_schema":
        return list(messages), {
            "type": "json_schema",
            "json_schema": {
                "name": _schema_name(json_schema),
                "schema": json_schema,
                "strict": True,
            },
        }
    # JSON mode alone does not tell the model which object to write: spell it out, in the
    # system message (some chat templates reject a system message anywhere but first).
    hint = (
        "Answer with one JSON object that matches this JSON schema, and nothing else:\n"
        + json.dumps(json_schema)
    )
    rest = list(messages)
    if rest and rest[0].role == "system":
        first = ChatMessage("system", f"{rest.pop(0).content}\n\n{hint}")
    else:
        first = ChatMessage("system", hint)
    response_format: dict[str, Any] = {"type": "json_object"}
    if mode == "json_object+schema":
        response_format["schema"] = json_schema
    return [first, *rest], response_format


def _schema_name(json_schema: dict[str, Any]) -> str:
    # OpenAI accepts [a-zA-Z0-9_-]{1,64} here.
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(json_schema.get("title", "answer")))
    return name[:64] or "answer"


def retry_after_of(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after")
    try:
        return float(str(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date; rare enough to fall back to our own backoff


def status_message(exc: openai.APIStatusError) -> str:
    """"HTTP 400: <the server's message>", with any secret it echoed masked."""
    return f"HTTP {exc.status_code}: {redact(exc.message)}"


def cause_of(exc: BaseException) -> str:
    # The SDK says only "Connection error."; the httpx cause says refused/unreachable.
    cause = exc.__cause__
    return redact(f"{type(cause).__name__}: {cause}" if cause is not None else str(exc))


def without_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without ``user:password@``, and those (for HTTP Basic authentication); the
    password ends at the last ``@`` (kuuki.text.secrets.split_userinfo)."""
    parts = split_userinfo(url)
    if parts is None:
        return url, None
    scheme, user, password, rest = parts
    return f"{scheme}{rest}", (unquote(user), unquote(password or ""))
