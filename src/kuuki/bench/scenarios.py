"""`kuuki bench scenarios DIR… --llm NAME`: how many expectations hold, with a given model.

Every transcript of the directories is replayed on a virtual clock exactly as
`kuuki replay FILE --check --llm NAME` would, and its expect lines are checked; the
figure is held / total, per directory and overall, with the failures listed. Run it with
`--llm none` (the local stage alone) and with a model to see whether the model makes the
decisions better or worse: with the shipped SmolLM2-135M it must not make them worse
(docs/benchmarks.md, docs/decisions.md).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from kuuki.clock import VirtualClock
from kuuki.domain import User
from kuuki.errors import KuukiError
from kuuki.replay.expect import Played, check
from kuuki.replay.runner import RecordingOutbox, replay
from kuuki.replay.transcript import apply_setup, read_transcript
from kuuki.settings import Settings


async def check_file(
    settings: Settings, path: Path, llm: str, *, judge_llm: str | None = None,
    judge_mode: str | None = None,
) -> dict[str, Any]:
    """Replay one transcript with back-end ``llm`` (and ``judge_llm`` for the judge, if
    given: e.g. the judge alone on a model, generation off); the expectations held."""
    from kuuki.app import build_app

    transcript = read_transcript(path, bot_name=None)
    settings = apply_setup(settings, transcript)
    if judge_mode is not None:
        settings = replace(settings, judge_mode=judge_mode)
    judge = None if judge_llm is None else replace(settings.llm, backend=judge_llm)
    clock = VirtualClock(transcript.events[0].at if transcript.events else None)
    bot = User(settings.persona.name, settings.persona.name, is_bot=True)
    timeline = Played()
    with tempfile.TemporaryDirectory(prefix="kuuki-scenarios-") as tmp:
        app = await build_app(
            replace(settings, llm=replace(settings.llm, backend=llm), judge_llm=judge),
            clock=clock, outbox=RecordingOutbox(clock, bot),
            store=f"sqlite:///{tmp}/s.sqlite3",
        )
        try:
            await replay(app.engine, clock, transcript, None, timeline)
        finally:
            await app.close()
    failures = check(transcript.expectations, timeline)
    judged = check(transcript.expectations, timeline, judged=True)
    total = len(transcript.expectations)
    return {
        "file": str(path),
        "expectations": total,
        "held": total - len({f.line for f in failures}),
        "judged_held": total - len({f.line for f in judged}),
        "failures": [f.describe(path.name) for f in failures],
        "judged_failures": [f.describe(path.name) for f in judged],
    }


async def bench_scenarios(
    settings: Settings, dirs: list[Path], llm: str, *, judge_llm: str | None = None,
    judge_mode: str | None = None,
) -> dict[str, Any]:
    files = [p for d in dirs for p in sorted(d.glob("*.jsonl"))]
    if not files:
        raise KuukiError(f"no transcripts (*.jsonl) in {', '.join(map(str, dirs))}")
    started = time.perf_counter()
    results = [
        await check_file(settings, p, llm, judge_llm=judge_llm, judge_mode=judge_mode)
        for p in files
    ]
    per_dir: dict[str, list[int]] = {}
    for r in results:
        held, judged, total = per_dir.setdefault(str(Path(r["file"]).parent), [0, 0, 0])
        per_dir[str(Path(r["file"]).parent)] = [
            held + r["held"], judged + r["judged_held"], total + r["expectations"]
        ]
    held = sum(r["held"] for r in results)
    total = sum(r["expectations"] for r in results)
    return {
        "benchmark": "scenarios",
        "llm": llm,
        "judge_llm": judge_llm or llm,
        "judge_mode": judge_mode or settings.judge_mode,
        "files": len(files),
        # On what the bot did, and on what it decided: they differ where the output guard
        # turned a rejected reply into a reaction (a generation failure, not a judgment).
        "held": held,
        "judged_held": sum(r["judged_held"] for r in results),
        "expectations": total,
        "by_directory": {d: f"{h}/{t} (decided {j}/{t})" for d, (h, j, t) in per_dir.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "results": results,
    }


def print_report(result: dict[str, Any], out: TextIO) -> None:
    for r in result["results"]:
        for failure in r["failures"]:
            out.write(failure + "\n")
        for failure in r["judged_failures"]:
            if failure not in r["failures"]:
                out.write("(decided) " + failure + "\n")
    shown = {k: v for k, v in result.items() if k != "results"}
    out.write(json.dumps(shown, ensure_ascii=False) + "\n")
