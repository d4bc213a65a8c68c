"""The embedded back-end's grammar-constrained call format, and tools off by default for
the shipped model (measured unable to choose: docs/benchmarks.md, "Tools")."""

from __future__ import annotations

import json

from llama_cpp.llama_grammar import LlamaGrammar

from kuuki.app import tools_off
from kuuki.llm.base import ChatMessage, ToolCall, ToolSpec
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.llm.schema import schema_errors
from kuuki.llm.tool_format import choice_schema, plain_turns, read_choice, with_instruction
from kuuki.settings import LLMSettings

NOW = ToolSpec("now", "the time", {"type": "object", "properties": {
    "timezone": {"type": "string"}}, "additionalProperties": False})
RECALL = ToolSpec("recall", "memory", {"type": "object", "properties": {
    "query": {"type": "string"}}, "required": ["query"], "additionalProperties": False})


def test_the_choice_schema_compiles_to_a_grammar_and_reads_back() -> None:
    schema = choice_schema([NOW, RECALL])
    LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)  # llama.cpp takes it
    call = read_choice({"tool": "recall", "arguments": {"query": "venue"}}, [NOW, RECALL])
    assert call == ToolCall("", "recall", '{"query": "venue"}')
    assert read_choice({"tool": "none"}, [NOW, RECALL]) is None
    assert read_choice({"tool": "rm -rf"}, [NOW, RECALL]) is None
    # Each option holds the arguments to that tool's own schema.
    recall_option = schema["anyOf"][1]
    assert schema_errors({"tool": "recall", "arguments": {}}, recall_option)


def test_earlier_rounds_become_plain_turns_and_the_format_is_explained() -> None:
    turns = [
        ChatMessage("system", "You are Kuu."),
        ChatMessage("user", "alice: what time is it?"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "now", "{}"),)),
        ChatMessage("tool", '{"time": "10:30"}', tool_call_id="c1"),
    ]
    plain = plain_turns(turns)
    assert [m.role for m in plain] == ["system", "user", "assistant", "user"]
    assert plain[2].content == '{"tool": "now", "arguments": {}}'
    assert plain[3].content == 'Result of now: {"time": "10:30"}'
    told = with_instruction(turns, [NOW])
    assert told[0].content.startswith("You are Kuu.\n\nYou may look something up")
    assert '{"tool": "none"}' in told[0].content


def test_tools_are_off_for_the_shipped_model_unless_switched_on() -> None:
    shipped = ScheduledLLM(EmbeddedLLM())
    why = tools_off(LLMSettings(), shipped)
    assert why is not None and "SmolLM2-135M" in why and "llm.tools = on" in why
    assert tools_off(LLMSettings(tools="on"), shipped) is None
    assert tools_off(LLMSettings(tools="off"), None) == "switched off (llm.tools = off)"
