"""`kuuki bench judge DIR`: how often the judge asks a model, and how fast its local stage is.

Replays every transcript in DIR (``*.jsonl``, DESIGN §5) — and Ubuntu IRC logs
(``*.ascii.txt`` of the irc-disentanglement corpus), converted on the fly — through the
engine in hybrid mode with the counting `stub` LLM, on a virtual clock, and prints one JSON
line: LLM calls per 100 ambient (non-addressed human) messages, the p50/p99 latency of
the judge's local stage, and for annotated IRC logs the gold figures (kuuki.decide.
bench_gold): how often an unprompted reply went to a message a person had already
answered, and how many unanswered questions the bot picked up. The per-channel LLM call
budget is off unless ``--budget`` sets it. Figures, not assertions: tests never time anything.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kuuki.bench.judge_gold import GoldFigures, annotation_for, gold_figures
from kuuki.conversation.ircdata import parse_line
from kuuki.domain import Decision, Stage, User

if TYPE_CHECKING:
    from kuuki.decide.pipeline import Pipeline
    from kuuki.replay.transcript import Transcript
    from kuuki.settings import Settings

IRC_CHANNEL = "ubuntu"
IRC_SETUP: dict[str, Any] = {
    "bot": "Kuu",
    "aliases": ["kuubot"],
    "language": "en",
    "keywords": [
        "ubuntu",
        "install",
        "apt",
        "apt-get",
        "grub",
        "driver",
        "drivers",
        "kernel",
        "nvidia",
        "xorg",
        "partition",
        "boot",
        "dpkg",
        "synaptic",
        "wifi",
        "sudo",
        "repository",
        "upgrade",
    ],
}
# The judge's own calls; the stub also counts generation and memory jobs, reported apart.
JUDGE_PURPOSES = frozenset({"judge", "state", "same_conversation", "situation_changed"})
_EPOCH = datetime(2026, 1, 5, tzinfo=UTC)
_JOIN_RE = re.compile(r"has (joined|left|quit)|is now known as", re.IGNORECASE)


def irc_to_transcript(
    lines: Iterable[str], *, name: str = "irc", line_of: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """Ubuntu IRC log lines (``[03:41] <nick> text``) as transcript objects (DESIGN §5).

    System lines (``=== x has joined``) carry no message and are dropped; action lines
    (``* nick waves``) become messages. Timestamps are minutes, so messages within one
    minute are spread evenly across it; a clock that goes backwards means midnight passed.
    ``line_of`` (if given) receives each message id's line number in the log, the number
    the corpus's gold annotations use.
    """
    parsed = [parse_line(i, raw) for i, raw in enumerate(lines) if raw.strip()]
    out: list[dict[str, Any]] = [{"setup": dict(IRC_SETUP)}]
    rows = [p for p in parsed if not p.system and p.speaker and p.minute is not None]
    day = 0
    last_minute = -1
    by_minute: dict[int, int] = {}
    absolute: list[int] = []
    for p in rows:
        minute = int(p.minute or 0) + day  # whole minutes; seconds are spread below
        if minute < last_minute - 12 * 60:
            day += 24 * 60
            minute += 24 * 60
        last_minute = minute
        absolute.append(minute)
        by_minute[minute] = by_minute.get(minute, 0) + 1
    seen: dict[int, int] = {}
    for k, (p, minute) in enumerate(zip(rows, absolute, strict=True)):
        n = by_minute[minute]
        seen[minute] = seen.get(minute, 0) + 1
        ts = _EPOCH + timedelta(minutes=minute, seconds=60 * (seen[minute] - 1) / n)
        if line_of is not None:
            line_of[f"{name}-{k}"] = p.index
        out.append(
            {
                "id": f"{name}-{k}",
                "t": ts.isoformat(),
                "channel": IRC_CHANNEL,
                "user": p.speaker,
                "text": p.text,
            }
        )
    return out


def _load(path: Path, line_of: dict[str, int] | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name.endswith(".ascii.txt"):
        objs = irc_to_transcript(
            text.splitlines(), name=path.name.split(".")[0], line_of=line_of
        )
        return [json.dumps(o, ensure_ascii=False) for o in objs]
    return text.splitlines()


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def bench_file(
    path: Path, tmp: Path, *, budget: int = 0, local_only: bool = False, settled: bool = False
) -> dict[str, Any]:
    """Replay one file; its ambient message count, LLM calls and local-stage latencies,
    and (for an annotated IRC log) the gold figures of kuuki.bench.judge_gold. ``budget``
    is the per-channel LLM call budget (0: off, the default here). ``local_only`` replays
    with no model at all, so the local stage answers the unclear band itself: the passive
    stub never lets the bot speak unasked, which would leave the gold figures empty.
    ``settled``: settle the collector once the app is built, as `kuuki run` does
    (kuuki.app.heap; the command line's run, never a test's process)."""
    from kuuki.app import build_app
    from kuuki.app.heap import settle
    from kuuki.clock import VirtualClock
    from kuuki.decide.judge.build import build_judge
    from kuuki.llm.registry import create
    from kuuki.replay.runner import RecordingOutbox, replay
    from kuuki.replay.transcript import parse_lines

    line_of: dict[str, int] = {}
    transcript = parse_lines(_load(path, line_of), str(path), strict=False)
    if not transcript.events:
        return {"ambient": 0, "llm_calls": 0, "local_ms": [], "local_cpu_ms": [], "messages": 0}
    settings = _settings(transcript.setup, budget)
    clock = VirtualClock(transcript.events[0].at)
    stub = None if local_only else create("stub")
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    from kuuki.embed import default_embedder

    embedder = default_embedder()
    judge: Pipeline = build_judge(settings, stub, clock, embedder=embedder)
    judge.keep_latencies()
    app = await build_app(
        replace(settings, judge_llm=None),
        clock=clock,
        outbox=RecordingOutbox(clock, bot),
        llm=stub,
        judge_llm=stub,
        store=f"sqlite:///{tmp}/bench.sqlite3",
        embedder=embedder,
        judge=judge,
    )
    if settled:
        settle()
    decisions: list[Decision] = []
    try:
        decisions = await replay(app.engine, clock, transcript)
    finally:
        await app.close()
    return _figures(path, line_of, settings, transcript, decisions, stub, judge)


def _settings(setup: Mapping[str, Any], budget: int) -> Settings:
    """The settings a file's setup line asks for, judging in hybrid mode with memory off."""
    from kuuki.settings import Persona, Settings, validate

    base = Persona()
    return validate(
        Settings(
            persona=Persona(
                name=str(setup.get("bot", base.name)),
                aliases=tuple(setup.get("aliases", base.aliases)),
                language=str(setup.get("language", base.language)),
                keywords=tuple(setup.get("keywords", ())),
            ),
            judge_mode="hybrid",
            judge_call_budget=budget,
            # The judge is measured, not memory: its background jobs would only add noise.
            CHANNEL_CONTEXT_ENABLED=False,
            REFLECTION_ENABLED=False,
            USER_PROFILE_ENABLED=False,
            PROACTIVE_CONVERSATION_ENABLED=False,
        )
    )


def _figures(
    path: Path, line_of: dict[str, int], settings: Settings, transcript: Transcript,
    decisions: list[Decision], stub: Any, judge: Pipeline,
) -> dict[str, Any]:
    """What `bench_file` reports of one replayed file."""
    own = settings.persona.name
    humans = [
        e.message
        for e in transcript.events
        if e.message is not None and not e.message.user.is_bot and e.message.user.id != own
    ]
    addressed = {d.message_id for d in decisions if d.stage is Stage.ADDRESSED}
    ambient = sum(1 for m in humans if m.id not in addressed)
    judge_calls = sum(c for p, c in getattr(stub, "by_purpose", {}).items() if p in JUDGE_PURPOSES)
    gold = GoldFigures()
    annotation = annotation_for(path)
    if annotation is not None:
        gold = gold_figures(annotation, line_of, humans, decisions)
    return {
        "gold": gold,
        "messages": len(humans),
        "ambient": ambient,
        "llm_calls": judge_calls,
        "by_purpose": dict(getattr(stub, "by_purpose", {})),
        "local_ms": list(judge.local_ms),
        "local_cpu_ms": list(judge.local_cpu_ms),
    }


async def _run(directory: Path, budget: int = 0, settled: bool = False) -> dict[str, Any]:
    files = sorted([*directory.glob("*.jsonl"), *directory.glob("*.ascii.txt")])
    total = {"files": 0, "messages": 0, "ambient": 0, "llm_calls": 0}
    gold = GoldFigures()
    purposes: dict[str, int] = {}
    latencies: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kuuki-bench-judge-") as tmp:
        for i, path in enumerate(files):
            sub = Path(tmp) / str(i)
            sub.mkdir()
            r = await bench_file(path, sub, budget=budget, settled=settled)
            if annotation_for(path) is not None:
                local = Path(tmp) / f"{i}-local"
                local.mkdir()
                gold.merge((await bench_file(path, local, local_only=True,
                                             settled=settled))["gold"])
            total["files"] += 1
            for key in ("messages", "ambient", "llm_calls"):
                total[key] += r[key]
            for p, c in r.get("by_purpose", {}).items():
                purposes[p] = purposes.get(p, 0) + c
            latencies.extend(r["local_ms"])
            cpu.extend(r.get("local_cpu_ms", []))
    ambient = total["ambient"]
    return {
        "bench": "judge",
        "dir": str(directory),
        "call_budget": budget or "off",
        **total,
        "llm_calls_per_100_ambient": round(100 * total["llm_calls"] / ambient, 2) if ambient else 0,
        "llm_calls_by_purpose": purposes,
        "local_p50_ms": round(_percentile(latencies, 50), 3),
        "local_p99_ms": round(_percentile(latencies, 99), 3),
        "local_cpu_p50_ms": round(_percentile(cpu, 50), 3),
        "local_cpu_p99_ms": round(_percentile(cpu, 99), 3),
        "local_samples": len(latencies),
        # gold figures: from a second replay of the annotated logs with the local stage alone
        **gold.as_dict(),
    }


def run_bench_judge(directory: Path, out: TextIO, *, budget: int = 0, settled: bool = False
                    ) -> dict[str, Any]:
    """Run the benchmark over ``directory`` and print its one JSON line to ``out``;
    ``settled``: as `kuuki run`, the collector settled after start-up (`bench_file`)."""
    import asyncio

    result = asyncio.run(_run(directory, budget, settled))
    out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()
    return result
