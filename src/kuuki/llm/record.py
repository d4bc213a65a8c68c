"""One door for pipeline code to call a model: timed, traced, never raising.

`call_llm` returns None on any LLMError so each caller applies its own documented safe
default, and appends an `LLMCallRecord` to the decision trace either way, which is how
``kuuki explain`` can say what the model was asked and what went wrong. A back-end that
breaks the port's contract and raises something else is treated the same way (recorded
as an "error"), so no model failure can leave a caller without its safe default.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kuuki.domain import DecisionTrace, LLMCallRecord
from kuuki.errors import LLMBadOutput, LLMError, LLMInterrupted, LLMTimeout, LLMUnavailable
from kuuki.llm.base import (
    LLM,
    ChatMessage,
    Completion,
    ToolCalling,
    ToolSpec,
    current_purpose,
    render_messages,
)
from kuuki.llm.breaker import CircuitOpen
from kuuki.text.secrets import redact

PromptDump = Callable[[str, list[ChatMessage]], None]


async def call_llm(
    llm: LLM,
    trace: DecisionTrace | None,
    purpose: str,
    messages: Sequence[ChatMessage],
    *,
    json_schema: dict[str, Any] | None = None,
    max_tokens: int,
    temperature: float,
    keep_prompt: bool = False,
    dump: PromptDump | None = None,
    tools: Sequence[ToolSpec] | None = None,
) -> Completion | None:
    """Ask ``llm``; record the call in ``trace``; None instead of any LLMError.

    ``purpose`` names the call in the trace ("judge", "reply", …). ``keep_prompt`` stores
    the rendered prompt in the record; ``dump`` sees every prompt before it is sent (the
    CLI's ``--dump-prompts``). With ``tools`` (a `ToolCalling` back-end only) the model may
    answer with tool calls; ``()`` offers none but lets the messages hold earlier ones.
    """
    if dump is not None:
        dump(purpose, list(messages))
    token = current_purpose.set(purpose)
    start = time.perf_counter()
    try:
        if tools is not None and isinstance(llm, ToolCalling):
            completion = await llm.complete_tools(
                messages, tools, max_tokens=max_tokens, temperature=temperature
            )
        else:
            completion = await llm.complete(
                messages, json_schema=json_schema, max_tokens=max_tokens,
                temperature=temperature,
            )
    except Exception as exc:
        outcome = _outcome(exc) if isinstance(exc, LLMError) else "error"
        # A skipped call never reached the model: it took no time worth reporting.
        latency_ms = 0.0 if outcome == "skipped" else (time.perf_counter() - start) * 1000
        # What a back-end (a plug-in's too) said goes into the trace cleaned of secrets.
        detail = redact(str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}")
        record = LLMCallRecord(
            purpose, llm.name, 0, 0, latency_ms, outcome, detail or type(exc).__name__
        )
        _append(trace, record, messages, keep_prompt)
        return None
    finally:
        current_purpose.reset(token)
    latency_ms = (time.perf_counter() - start) * 1000
    usage = completion.usage
    record = LLMCallRecord(
        purpose, completion.model, usage.prompt_tokens, usage.completion_tokens, latency_ms, "ok"
    )
    _append(trace, record, messages, keep_prompt)
    return completion


def _outcome(exc: LLMError) -> str:
    if isinstance(exc, CircuitOpen):
        return "skipped"
    if isinstance(exc, LLMTimeout):
        return "timeout"
    if isinstance(exc, LLMBadOutput):
        return "invalid"
    if isinstance(exc, LLMInterrupted):
        return "interrupted"
    if isinstance(exc, LLMUnavailable):
        return "unavailable"
    return "error"


def _append(
    trace: DecisionTrace | None,
    record: LLMCallRecord,
    messages: Sequence[ChatMessage],
    keep_prompt: bool,
) -> None:
    if trace is None:
        return
    if keep_prompt:
        record.prompt = render_messages(messages)
    trace.llm_calls.append(record)
