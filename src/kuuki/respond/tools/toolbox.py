"""The tools one app offers its model, and the limits every call runs under.

`Toolbox.run` is the only way a tool is called, so the limits hold for built-ins and
plugins alike:

- the model's arguments are untrusted: parsed as JSON and validated against the tool's
  schema (`kuuki.llm.schema`, the validator structured output already uses) before `run`;
- one timeout per call, on the clock (so replays and tests run it on virtual time);
- what a result may add to the prompt is capped (``result_chars``), and mass pings in it
  are defused, since the model may copy it into the reply; so are the secrets kuuki knows
  (a service that echoes the header it was sent), and errors are redacted
  (kuuki.text.secrets);
- a bad call, an unknown tool, an error, a timeout: the model gets a short note instead of
  a result, the trace gets a line, and the reply goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kuuki.clock import Clock
from kuuki.domain import ToolCallRecord
from kuuki.llm.base import ToolCall, ToolSpec
from kuuki.llm.schema import schema_errors
from kuuki.respond.tools.base import Tool, ToolContext, ToolError
from kuuki.text.safety import defuse_mentions
from kuuki.text.secrets import redact

ARGUMENT_CHARS = 2000  # longer arguments are refused unread


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A call's result as the model reads it (a result or a note), and its trace record."""

    text: str
    record: ToolCallRecord

    @property
    def ok(self) -> bool:
        return self.record.outcome == "ok"


class Toolbox:
    """The enabled tools by name, run under the limits above."""

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        clock: Clock,
        timeout_s: float = 5.0,
        result_chars: int = 1200,
        max_rounds: int = 3,
    ) -> None:
        self.tools = {t.name: t for t in tools}
        self.clock = clock
        self.timeout_s = timeout_s
        self.result_chars = result_chars
        self.max_rounds = max_rounds

    def __bool__(self) -> bool:
        return bool(self.tools) and self.max_rounds > 0

    @property
    def names(self) -> list[str]:
        return sorted(self.tools)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.parameters) for t in self.tools.values()]

    async def run(self, call: ToolCall, ctx: ToolContext, *, round: int = 1) -> ToolOutcome:
        start = time.perf_counter()
        args_shown = _short(call.arguments, 200)

        def note(outcome: str, detail: str, text: str) -> ToolOutcome:
            ms = (time.perf_counter() - start) * 1000
            record = ToolCallRecord(call.name, args_shown, ms, 0, outcome, detail, round)
            return ToolOutcome(text, record)

        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.names) or "none"
            return note("invalid", f"no tool named {call.name!r}",
                        f"error: there is no tool {call.name!r} (tools: {known})")
        args, problem = _arguments(call.arguments, tool.parameters)
        if problem is not None:
            return note("invalid", problem, f"error: bad arguments for {call.name}: {problem}")
        try:
            result = await self._bounded(tool, args, ctx)
        except TimeoutError:
            return note("timeout", f"no answer within {self.timeout_s:g} s",
                        f"error: {call.name} did not answer in time")
        except ToolError as exc:
            problem = redact(str(exc))
            return note("error", problem, f"error: {_short(problem, 200)}")
        except Exception as exc:  # a plugin's bug must not cost the reply
            return note("error", f"{type(exc).__name__}: {_short(redact(str(exc)), 200)}",
                        f"error: {call.name} failed")
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False,
                                                                 default=str)
        # A service that echoes the credentials it was sent must not hand them to the
        # model, the prompt shown, or the reply: the secrets kuuki knows are masked (an
        # answer's own token-shaped data is the answer, and stays).
        text = redact(text, shapes=False)
        full = len(text)
        text = defuse_mentions(text)
        if full > self.result_chars:
            text = text[: self.result_chars] + f" … [cut: {full} characters in all]"
        ms = (time.perf_counter() - start) * 1000
        detail = f"cut from {full} characters" if full > self.result_chars else ""
        record = ToolCallRecord(call.name, args_shown, ms, len(text), "ok", detail, round)
        return ToolOutcome(text, record)

    async def _bounded(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        """``tool.run`` within the per-call timeout, measured on the clock."""
        task = asyncio.ensure_future(tool.run(args, ctx))
        expired = False

        async def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        handle = self.clock.call_later(self.timeout_s, expire)
        try:
            return await task
        except asyncio.CancelledError:
            if expired:
                raise TimeoutError from None
            raise
        finally:
            handle.cancel()
            if not task.done():
                task.cancel()


def _arguments(raw: str, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    if len(raw) > ARGUMENT_CHARS:
        return {}, f"arguments longer than {ARGUMENT_CHARS} characters"
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return {}, f"not JSON: {_short(raw, 60)!r}"
    if not isinstance(value, dict):
        return {}, "arguments must be a JSON object"
    problems = schema_errors(value, schema)
    if problems:
        return {}, "; ".join(problems[:3])
    return value, None


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
