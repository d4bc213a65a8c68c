"""What the summarizer asks the model for and how it reads the answers.

The JSON schemas of the channel update and of the workspace memories, and the reading of
an answer through the memory guard (`MemoryCheck`): every text is checked for content and
clipped to `MAX_TEXT`, topics are kept only when they have words.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from kuuki.guard.memory import MemoryCheck

# No maxLength: llama.cpp's grammar compiler cannot expand long bounded repetitions, so
# lengths are clipped after parsing (MAX_TEXT) instead of constrained while generating.
_TEXT = {"type": "string"}
MAX_TEXT = 800
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "mood": {"type": "string"},
        "topics": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "recent_events": _TEXT,
        "history": {"type": "string"},
        "threads": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {"thread": {"type": "string"}, "summary": _TEXT},
                "required": ["thread", "summary"],
            },
        },
    },
    "required": ["summary", "mood", "topics", "recent_events", "history", "threads"],
}
WORKSPACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"history": {"type": "string"}, "recent_events": _TEXT},
    "required": ["history", "recent_events"],
}


def has_words(text: str) -> bool:
    """A summary must say something: passive or garbage answers ("-", "...") are rejected."""
    return any(ch.isalpha() for ch in text)


@dataclass(frozen=True, slots=True)
class SummaryAnswer:
    """A channel update as read from the model's answer (``check`` says if it may stay)."""

    summary: str
    mood: str
    topics: list[str]
    notes: dict[str, str]  # "history" and "recent_events"
    threads: dict[str, str]  # thread id -> summary, for threads that got new messages


def read_channel_summary(
    check: MemoryCheck, data: dict[str, Any], threads: Container[str]
) -> SummaryAnswer:
    summary = check.text("summary", str(data["summary"]))[:MAX_TEXT]
    mood = check.text("mood", str(data["mood"]), required=False)
    topics = [t[:40] for t in check.items("topics", data["topics"], keywords=True)
              if has_words(t)]
    notes = read_notes(check, data)
    thread_notes = {str(item["thread"]): check.text(f"thread {item['thread']}",
                                                    str(item["summary"]))[:MAX_TEXT]
                    for item in data["threads"] if str(item["thread"]) in threads}
    return SummaryAnswer(summary, mood, topics, notes, thread_notes)


def read_notes(check: MemoryCheck, data: dict[str, Any]) -> dict[str, str]:
    """The "history" and "recent_events" texts of an answer, checked and clipped."""
    return {key: check.text(key, str(data[key]), required=False)[:MAX_TEXT]
            for key in ("history", "recent_events")}
