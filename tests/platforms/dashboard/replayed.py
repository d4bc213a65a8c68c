"""A day of talk for the dashboard: scenario transcripts (tests/scenarios) one after
another, an hour apart, spread over three channels and a DM, as one transcript that
`kuuki replay --store` writes into a store (dated 2026-01-05, as the transcripts are)."""

from __future__ import annotations

import json
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DAY = (
    "en01_mention", "en07_open_question_unanswered", "en03_name_call", "en13_burst",
    "en23_dm_always_addressed", "en09_question_to_someone_else", "en22_good_news_ack",
    "en31_answering_the_bots_question", "en02_reply_to_bot", "en20_debounce_burst_then_react",
)
CHANNELS = ("general", "dev", "random")


def day_transcript(names: tuple[str, ...] = DAY, *, hour_s: int = 3600) -> str:
    """The scenarios as one transcript: ids prefixed, times an hour apart, channels
    rotated (a DM stays a DM); the expect lines are left out."""
    out: list[str] = []
    for k, name in enumerate(names):
        lines = (SCENARIOS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        for raw in lines:
            line = json.loads(raw)
            if "setup" in line:
                if not out:
                    out.append(json.dumps(line, ensure_ascii=False))
                continue
            if "expect" in line:
                continue
            p = f"s{k}-"
            line["id"] = p + line["id"] if "id" in line else line.get("id")
            for key in ("reply_to", "thread", "target"):
                if key in line:
                    line[key] = p + line[key]
            line["t"] = k * hour_s + float(line["t"])
            if line.get("channel_visibility") != "dm":
                line["channel"] = CHANNELS[k % len(CHANNELS)]
            out.append(json.dumps({k2: v for k2, v in line.items() if v is not None},
                                  ensure_ascii=False))
    return "\n".join(out) + "\n"
