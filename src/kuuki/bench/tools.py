"""`kuuki bench tools`: can the configured model choose a tool sensibly?

24 chat messages (English), each with the tool a sensible member would use — `now`,
`recall`, a community API (`maintenance`, declared like an HTTP JSON tool) — or none. The
model gets one tool round with the persona's prompt, the hint the reply loop gives, and the
three tools; nothing is run. Reported: how many choices match, how many called a tool where
none was needed, how many missed one, and the latency. The figure decides ``llm.tools =
auto`` for a model (kuuki.app.tools_off; docs/benchmarks.md, "Tools").
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, TextIO

from kuuki.llm.base import LLM, ChatMessage, ToolCalling, ToolSpec
from kuuki.respond.tools.loop import HINT
from kuuki.settings import Settings

CASES: tuple[tuple[str, str], ...] = (
    ("what time is it?", "now"),
    ("what's the date today?", "now"),
    ("is it already friday where you are?", "now"),
    ("how late is it in Tokyo right now?", "now"),
    ("what day of the week is it?", "now"),
    ("what did we decide about the venue?", "recall"),
    ("who said they'd bring the projector last week?", "recall"),
    ("remind me what Bob's favourite game was?", "recall"),
    ("what was the name of that ramen place Alice mentioned?", "recall"),
    ("did we ever agree on a budget for the party?", "recall"),
    ("when is the next server maintenance?", "maintenance"),
    ("are the servers going down for maintenance this week?", "maintenance"),
    ("how long will the maintenance take?", "maintenance"),
    ("is there a patch maintenance scheduled for tomorrow?", "maintenance"),
    ("what's the ticket for the upcoming maintenance?", "maintenance"),
    ("hi, how are you?", "none"),
    ("thanks for the help!", "none"),
    ("lol that cat video was great", "none"),
    ("good night everyone", "none"),
    ("what's your favourite colour?", "none"),
    ("can you say something nice to Bob?", "none"),
    ("do you like pizza?", "none"),
    ("congrats on the new job, Alice!", "none"),
    ("tell me a short joke", "none"),
)

TOOLS = (
    ToolSpec("now", "The current date and time where the person asking is.",
             {"type": "object", "properties": {"timezone": {"type": "string"}},
              "additionalProperties": False}),
    ToolSpec("recall", "Search what you remember from this chat: facts, decisions, people.",
             {"type": "object", "properties": {"query": {"type": "string"}},
              "required": ["query"], "additionalProperties": False}),
    ToolSpec("maintenance", "When the game's next server maintenance is, and its ticket.",
             {"type": "object", "properties": {}, "additionalProperties": False}),
)


async def bench_tools(settings: Settings, llm: LLM) -> dict[str, Any]:
    if not isinstance(llm, ToolCalling) or llm.tool_support() is not None:
        raise ValueError(f"{llm.name} cannot be offered tools")
    listed = "\n".join(f"- {t.name}: {t.description}" for t in TOOLS)
    system = settings.persona.prompt_for("en") + "\n\n" + HINT.format(tools=listed)
    rows: list[dict[str, Any]] = []
    for text, want in CASES:
        start = time.perf_counter()
        try:
            done = await llm.complete_tools(
                [ChatMessage("system", system), ChatMessage("user", f"alice: {text}")],
                TOOLS, max_tokens=60, temperature=0.2,
            )
            got = ",".join(c.name for c in done.tool_calls) or "none"
        except Exception as exc:  # an empty answer is "none" for this purpose
            got = "none" if "empty" in str(exc) else f"error: {type(exc).__name__}"
        rows.append({"text": text, "want": want, "got": got,
                     "ms": round((time.perf_counter() - start) * 1000)})
    right = sum(r["want"] == r["got"] for r in rows)
    needless = sum(r["want"] == "none" and r["got"] != "none" for r in rows)
    missed = sum(r["want"] != "none" and r["got"] == "none" for r in rows)
    wrong_tool = sum(r["want"] not in ("none", r["got"]) and r["got"] != "none" for r in rows)
    ms = sorted(int(r["ms"]) for r in rows)
    return {
        "model": llm.name, "cases": len(rows), "right": right,
        "right_share": round(right / len(rows), 3), "needless_calls": needless,
        "missed_calls": missed, "wrong_tool": wrong_tool,
        "chosen": dict(Counter(r["got"] for r in rows)),
        "median_ms": ms[len(ms) // 2], "rows": rows,
    }


def print_report(report: dict[str, Any], out: TextIO, *, details: bool = False) -> None:
    r = report
    out.write(f"model {r['model']}: {r['right']}/{r['cases']} choices right "
              f"({r['right_share']:.0%}); {r['needless_calls']} needless calls, "
              f"{r['missed_calls']} missed, {r['wrong_tool']} wrong tool; "
              f"median {r['median_ms']} ms a choice\n")
    out.write(f"chosen: {r['chosen']}\n")
    if details:
        for row in r["rows"]:
            mark = "ok " if row["want"] == row["got"] else "BAD"
            out.write(f"  {mark} want {row['want']:<11} got {row['got']:<11} {row['text']}\n")
