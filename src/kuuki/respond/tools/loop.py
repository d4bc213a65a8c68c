"""The reply's tool loop: the model may ask for tools, kuuki runs them, the model answers.

    round 1..max_rounds   offer the tools; calls asked for run (at most MAX_CALLS_PER_ROUND
                          each round), their results go back as ``tool`` turns; a text
                          answer ends the loop
    then                  one plain call, no tools, the results written into the system
                          message: the model must answer

The last call carries the results as plain text rather than as ``tool`` turns because not
every server renders those: llama-cpp-python's function-calling chat format drops their
content, and answers a tools request with an empty message when the model chose to talk
(measured, docs/decisions.md "Tools"). An empty answer to a tools round is an answer like
any other: the guard rejects it and its retry, which offers no tools, asks again.

A round whose calls all fail still goes on: the model reads the notes ("error: the service
answered HTTP 500") and answers without what it wanted. The text that comes out of the
loop is checked by the output guard like any reply (kuuki.respond.responder); the loop never posts.
"""

from __future__ import annotations

from collections.abc import Sequence

from kuuki.domain import DecisionTrace, ToolCallRecord
from kuuki.llm.base import LLM, ChatMessage, Completion, ToolCall
from kuuki.llm.record import PromptDump, call_llm
from kuuki.respond.tools.base import ToolContext
from kuuki.respond.tools.toolbox import Toolbox

MAX_CALLS_PER_ROUND = 3
# Said in the system message of a tools round: small models pick a tool far more often
# when the prompt itself says tools exist and when to use them.
HINT = (
    "You can look things up before answering, with these functions:\n{tools}\n"
    "Call one when the question needs facts you do not have; then answer briefly and "
    "say where the answer came from."
)


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
    turns = _hinted(list(messages), toolbox)
    rounds = toolbox.max_rounds
    n = 0
    while n < rounds:
        n += 1
        completion = await call_llm(
            llm, trace, _name(purpose, n), turns, max_tokens=max_tokens,
            temperature=temperature, dump=dump, tools=toolbox.specs(),
        )
        if completion is None or not completion.tool_calls:
            return completion  # an answer (the guard judges it) or the caller's fallback
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
        if n == rounds:
            trace.step(f"tools: {rounds} rounds spent; the model answers with what it has")
    return await call_llm(
        llm, trace, _name(purpose, n + 1), _folded(turns), max_tokens=max_tokens,
        temperature=temperature, dump=dump,
    )


def _hinted(turns: list[ChatMessage], toolbox: Toolbox) -> list[ChatMessage]:
    listed = "\n".join(f"- {t.name}: {t.description}" for t in toolbox.specs())
    hint = HINT.format(tools=listed)
    if turns and turns[0].role == "system":
        return [ChatMessage("system", f"{turns[0].content}\n\n{hint}"), *turns[1:]]
    return [ChatMessage("system", hint), *turns]


def _name(purpose: str, n: int) -> str:
    return purpose if n == 1 else f"{purpose}-round{n}"


def _folded(turns: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation with tool calls and results as plain turns after the question:
    the bot says what it looked up, the results follow as the last turn. (The shipped
    model used a result written there 3 times in 6, one in the system message as often,
    but mostly by copying the block; docs/decisions.md "Tools".)"""
    asked = {c.id: c for m in turns for c in m.tool_calls}
    results = [
        f"{asked[m.tool_call_id].name}({asked[m.tool_call_id].arguments}) → {m.content}"
        for m in turns if m.role == "tool" and m.tool_call_id in asked
    ]
    plain = [m for m in turns if m.role != "tool" and not m.tool_calls]
    if not results:
        return plain
    names = ", ".join(dict.fromkeys(c.name for c in asked.values()))
    return [
        *plain,
        ChatMessage("assistant", f"Let me look that up ({names})."),
        ChatMessage("user", "What you found:\n" + "\n".join(results)
                    + "\nNow answer the question above in one or two sentences."),
    ]


def _with_id(call: ToolCall, round_: int, index: int) -> ToolCall:
    """Calls need ids to pair them with their results; small back-ends give none."""
    if call.id:
        return call
    return ToolCall(f"call_{round_}_{index}", call.name, call.arguments)
