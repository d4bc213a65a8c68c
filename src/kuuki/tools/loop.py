"""The reply's tool loop: the model may ask for tools, kuuki runs them, the model answers.

    round 1..max_rounds   offer the tools; calls asked for run (at most MAX_CALLS_PER_ROUND
                          each round), their results go back as ``tool`` turns
    then                  one last call with no tools offered: the model must answer

A round whose calls all fail still goes on: the model reads the notes ("error: the service
answered HTTP 500") and answers without what it wanted. The text that comes out of the
loop is checked by the output guard like any reply (kuuki.respond); the loop never posts.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain import DecisionTrace, ToolCallRecord
from ..llm.base import LLM, ChatMessage, Completion, ToolCall
from ..llm.record import PromptDump, call_llm
from .base import ToolContext
from .toolbox import Toolbox

MAX_CALLS_PER_ROUND = 3


async def answer_with_tools(
    llm: LLM,
    toolbox: Toolbox,
    messages: Sequence[ChatMessage],
    ctx: ToolContext,
    trace: DecisionTrace,
    *,
    purpose: str,
    max_tokens: int,
    temperature: float = 0.7,
    dump: PromptDump | None = None,
    found: list[str] | None = None,
) -> Completion | None:
    """The model's final answer after at most ``toolbox.max_rounds`` tool rounds, or None
    when a model call failed (the caller's fallback applies, as for any reply).

    ``found`` collects "tool: result" for each successful call, so a retry after the guard
    rejected the answer can still use what was looked up.
    """
    turns = list(messages)
    rounds = toolbox.max_rounds
    for n in range(1, rounds + 2):
        offer = toolbox.specs() if n <= rounds else []
        name = purpose if n == 1 else f"{purpose}-round{n}"
        completion = await call_llm(
            llm, trace, name, turns, max_tokens=max_tokens, temperature=temperature,
            dump=dump, tools=offer,
        )
        if completion is None or not completion.tool_calls:
            return completion
        if not offer:
            # Asked for tools when none were offered (the rounds are spent): its text, if
            # any, is the answer; the calls are not run.
            trace.step(f"tools: {rounds} rounds spent; the model asked for more, not run")
            return completion if completion.text.strip() else None
        calls = [_with_id(c, n, i) for i, c in enumerate(completion.tool_calls)]
        turns.append(ChatMessage("assistant", completion.text, tool_calls=tuple(calls)))
        for i, call in enumerate(calls):
            if i >= MAX_CALLS_PER_ROUND:
                note = f"error: at most {MAX_CALLS_PER_ROUND} tool calls a round; not run"
                trace.tool_calls.append(ToolCallRecord(
                    call.name, call.arguments[:200], 0.0, 0, "refused",
                    f"over {MAX_CALLS_PER_ROUND} calls in one round", n))
                turns.append(ChatMessage("tool", note, tool_call_id=call.id))
                continue
            outcome = await toolbox.run(call, ctx, round=n)
            trace.tool_calls.append(outcome.record)
            turns.append(ChatMessage("tool", outcome.text, tool_call_id=call.id))
            if outcome.ok and found is not None:
                found.append(f"{call.name}: {outcome.text}")
        trace.step(f"tools round {n}: " + ", ".join(
            f"{r.name} {r.outcome}" for r in trace.tool_calls if r.round == n))
    return None  # not reached: the last round offers no tools


def _with_id(call: ToolCall, round_: int, index: int) -> ToolCall:
    """Calls need ids to pair them with their results; small back-ends give none."""
    if call.id:
        return call
    return ToolCall(f"call_{round_}_{index}", call.name, call.arguments)
