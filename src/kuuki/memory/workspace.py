"""The workspace memories: regenerated (debounced, by the summarizer) from the memories of
the workspace's public channels only.

Each channel document's own visibility is checked again when it is read: a channel that
was private when it was summarized keeps its memories private even if it is public now.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from kuuki.clock import Clock
from kuuki.domain import DecisionTrace, GuardRecord, Visibility
from kuuki.guard.memory import MemoryCheck, channel_language
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage, Completion
from kuuki.llm.record import PromptDump, call_llm
from kuuki.memory.book import MemoryBook
from kuuki.memory.jobs import JobRecord, Jobs, completion_text, failure_reason, trace_for
from kuuki.memory.summary_answers import WORKSPACE_SCHEMA, has_words, read_notes
from kuuki.prompts import Prompts
from kuuki.store.records import MemoryRecord

__all__ = ["summarize_workspace"]


class WorkspaceHost(Protocol):
    """What the workspace memories need of the summarizer that owns them
    (kuuki.memory.summarizer.Summarizer): its model, prompts, checks and books."""

    llm: LLM | None
    prompts: Prompts
    scaffold: Scaffold
    languages: frozenset[str]
    book: MemoryBook
    clock: Clock
    jobs: Jobs
    persona_name: str
    max_tokens: int

    @property
    def epoch(self) -> int: ...

    def dump_for(self, label: str) -> PromptDump | None: ...


async def summarize_workspace(s: WorkspaceHost, workspace: str) -> bool:
    """Regenerate the workspace memories from its public channels' memories."""
    assert s.llm is not None
    now = s.clock.now()
    epoch = s.epoch
    channels, sources = _public_memories(s.book, workspace)
    if not channels:
        return False
    trace = trace_for("workspace", f"workspace:{workspace}", now)
    lang = channel_language([c["history"] + c["recent"] for c in channels], s.prompts.language)
    if lang not in s.languages:
        return False
    system = s.prompts.render(
        "memory_workspace",
        language=lang,
        persona_name=s.persona_name,
        channels=channels,
        history=s.book.text("workspace", workspace, "long_term"),
        recent_events=s.book.text("workspace", workspace, "short_term"),
        now=now,
    )
    completion = await call_llm(
        s.llm, trace, "memory_workspace", [ChatMessage("system", system)],
        json_schema=WORKSPACE_SCHEMA, max_tokens=s.max_tokens, temperature=0.2,
        dump=s.dump_for(f"workspace-{workspace}"),
    )
    label = f"workspace:{workspace}"
    notes = _checked_notes(s, completion, lang, trace, label, now)
    if notes is None:
        return False
    if epoch != s.epoch:
        s.jobs.record(JobRecord("workspace", label, now, False,
                                "discarded: memory was reloaded while it was written", trace))
        return False
    await _store(s.book, workspace, notes, list(dict.fromkeys(sources)), now)
    s.jobs.record(JobRecord("workspace", label, now, True, f"{len(channels)} channels", trace))
    return True


def _public_memories(book: MemoryBook, workspace: str) -> tuple[list[dict[str, Any]], list[str]]:
    """What the prompt shows of each public channel (name, history, recent), and who those
    memories came from."""
    channels = []
    sources: list[str] = []
    for ch in book.registry.all():
        if ch.workspace != workspace or ch.visibility is not Visibility.PUBLIC:
            continue
        long_rec = book.get("channel", ch.id, "long_term")
        short_rec = book.get("channel", ch.id, "short_term")
        long_t = _public_text(long_rec, workspace)
        short_t = _public_text(short_rec, workspace)
        if long_t or short_t:
            channels.append({"name": ch.name, "history": long_t, "recent": short_t})
            for rec in (long_rec, short_rec):
                if rec is not None:
                    sources += rec.source_user_ids
    return channels, sources


def _public_text(rec: MemoryRecord | None, workspace: str) -> str:
    if rec is None or not MemoryBook.visible_everywhere(rec, workspace):
        return ""
    return str(rec.content)


def _checked_notes(
    s: WorkspaceHost, completion: Completion | None, lang: str, trace: DecisionTrace, label: str,
    now: datetime,
) -> dict[str, str] | None:
    """The answer's history and recent events, or None (recorded why) when it has no words
    or the memory check rejects it."""
    data = completion.data if completion is not None else None
    if not isinstance(data, dict) or not has_words(str(data["history"]) +
                                                   str(data["recent_events"])):
        reason = failure_reason(trace, "answer has no words")
        s.jobs.record(JobRecord("workspace", label, now, False, reason, trace))
        return None
    check = MemoryCheck(s.scaffold, lang)
    notes = read_notes(check, data)
    trace.guard.append(GuardRecord("workspace", check.ok, "" if check.ok else "memory",
                                   check.reason(), completion_text(completion)))
    if not check.ok:
        s.jobs.record(JobRecord("workspace", label, now, False,
                                f"rejected: {check.reason()}", trace))
        return None
    return notes


async def _store(
    book: MemoryBook, workspace: str, notes: dict[str, str], users: list[str], now: datetime
) -> None:
    for kind, key in (("long_term", "history"), ("short_term", "recent_events")):
        text = notes[key]
        if has_words(text):
            await book.put(
                "workspace", workspace, kind, text, visibility=Visibility.PUBLIC,
                workspace=workspace, source_channel_id=None, source_user_ids=users, at=now,
            )
