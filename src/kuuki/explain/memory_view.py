"""What the bot remembers about a channel, written for people: the playground's memory
panel and `/memory` in `kuuki chat`.

Both read a `ChannelMemory` (kuuki.memory.snapshot) — from the App's memory service,
`MemoryService.snapshot`, which applies the privacy rule for the channel — and `render`
turns it into sections of sentences: the summary with its mood and topics, history,
recent events, threads, the people with their familiarity, the facts, and what the bot
brought up by itself. Each empty section says when it will fill. The structured snapshot
goes along as ``raw`` for developers; `text_lines` is the same for a terminal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kuuki.explain.lines import clock_time, plural, relative, times, when
from kuuki.memory.snapshot import ChannelMemory, JobOutcome, Note, Person, RememberedFact
from kuuki.text.secrets import redact

Section = dict[str, Any]


def _item(text: str, *meta: str) -> dict[str, Any]:
    return {"text": text, "meta": [m for m in meta if m]}


def _section(key: str, title: str, items: list[dict[str, Any]], empty: str,
             note: str = "") -> Section:
    return {"key": key, "title": title, "items": items, "empty": empty, "note": note}


def _updated(at: datetime | None, now: datetime) -> str:
    return f"updated {when(at, now)}" if at is not None else ""


SMALL_MODEL = ("The small built-in model rarely manages a summary; a larger model does "
               "(“use your own model”, at the top).")


def plainly(reason: str) -> str:
    """Why a memory job's answer was not kept, in plain words (the guard's own words are
    for the trace)."""
    if any(x in reason for x in ("example value", "repeats the prompt", "copies the prompt")):
        return "the model copied the prompt's example instead of summarizing"
    if "says nothing" in reason:
        return "the model wrote nothing usable"
    if "timeout" in reason or "took longer" in reason:
        return "the model took too long"
    if "not JSON" in reason:
        return "the model's answer was cut off or not in the form asked for"
    return reason


def _attempt(outcome: JobOutcome | None, now: datetime) -> str:
    if outcome is None or outcome.ok:
        return ""
    return (f"The last attempt, at {when(outcome.at, now)}, was not kept: "
            f"{plainly(outcome.reason)}.")


def _summary(mem: ChannelMemory, small_model: bool = False) -> Section:
    now, s, p = mem.now, mem.summary, mem.progress
    items = []
    if s is not None:
        mood = f"mood: {s.mood}" if s.mood else ""
        topics = f"topics: {', '.join(s.topics)}" if s.topics else ""
        items.append(_item(s.text, " · ".join(x for x in (mood, topics) if x),
                           _updated(s.updated_at, now)))
    if p is None or not p.enabled:
        empty = "No summary: channel summaries are off (or there is no model to write them)."
        return _section("summary", "Channel summary", items, empty)
    cadence = (f"Summaries are written every {plural(p.every_n, 'message')} or "
               f"{p.every_minutes:g} minutes after the first new one")
    waiting = f"{plural(p.waiting, 'message')} since the last one" if s else \
        f"{plural(p.waiting, 'message')} so far"
    now_writing = "A summary is being written right now. " if p.writing else ""
    failed = p.last_attempt is not None and not p.last_attempt.ok
    small = f" {SMALL_MODEL}" if failed and small_model else ""
    note = f"{now_writing}{cadence}; {waiting}. {_attempt(p.last_attempt, now)}{small}".strip()
    empty = "No summary yet: the model could not write one." if failed else "No summary yet."
    return _section("summary", "Channel summary", items, empty, note)


def _note(key: str, title: str, note: Note | None, now: datetime, empty: str) -> Section:
    items = [_item(note.text, _updated(note.updated_at, now))] if note is not None else []
    return _section(key, title, items, empty)


def _person(p: Person, bot_name: str) -> dict[str, Any]:
    talked = f"talked to {bot_name} {times(p.mentions_of_bot)}" if p.mentions_of_bot else ""
    counts = " · ".join(x for x in (plural(p.messages, "message") + " seen", talked) if x)
    return _item(
        f"{p.name} — {p.familiarity}",
        counts,
        f"topics: {', '.join(p.topics)}" if p.topics else "",
        f"about them: {', '.join(p.tags)}" if p.tags else "",
        f"last time: {p.summary}" if p.summary else "",
        f"active in {', '.join('#' + c for c in p.channels)}" if len(p.channels) > 1 else "",
    )


def _fact(f: RememberedFact, now: datetime) -> dict[str, Any]:
    about = f"about {', '.join(f.about)}" if f.about else ""
    sure = f"confidence {f.confidence:.0%}"
    if round(f.strength, 2) < round(f.confidence, 2):
        sure += f", faded to {f.strength:.0%}"
    used = f"last recalled {relative(f.last_used_at, now)}" if f.last_used_at else ""
    private = "" if f.shareable else "never brought up unasked"
    return _item(
        f.text,
        " · ".join(x for x in (about, f"from #{f.source_channel}",
                                f"learned {relative(f.learned_at, now)}") if x),
        " · ".join(x for x in (sure, used, private) if x),
    )


def _proactive(mem: ChannelMemory) -> Section:
    now = mem.now
    items = [_item(v.text or f"fact {v.fact_id} (forgotten since)", f"said {when(v.at, now)}")
             for v in mem.proactive]
    check = mem.last_proactive_check
    note = (f"Last check {when(check.at, now)}: {check.reason}."
            if check is not None and not check.ok else "")
    empty = ("Nothing yet. When the channel wakes up after a silence, the bot may bring up a "
             "remembered fact that fits.")
    return _section("proactive", "Brought up by itself", items, empty, note)


def render(mem: ChannelMemory, *, bot_name: str, small_model: bool = False) -> dict[str, Any]:
    """The panel's content: titled sections of sentences, plus the raw snapshot.
    ``small_model``: the tiny built-in model writes the summaries (a failed one says so)."""
    now = mem.now
    sections = [
        _summary(mem, small_model),
        _note("history", "History", mem.history, now,
              "Nothing yet: written with the summary, once there is something to keep."),
        _note("recent_events", "Recent events", mem.recent_events, now,
              "Nothing yet: written with the summary."),
    ]
    if mem.threads:
        sections.append(_section("threads", "Threads", [
            _item(f"thread {thread}: {n.text}", _updated(n.updated_at, now))
            for thread, n in mem.threads], ""))
    sections += [
        _section("people", f"People ({len(mem.people)})" if mem.people else "People",
                 [_person(p, bot_name) for p in mem.people],
                 "Nobody yet: people appear here once they say something."),
        _section("facts", f"Facts ({len(mem.facts)})" if mem.facts else "Facts",
                 [_fact(f, now) for f in mem.facts],
                 "No facts yet: the bot reflects on a conversation after a lull and keeps "
                 "what it learned."),
        _proactive(mem),
    ]
    return {
        "channel": mem.channel_id,
        "title": f"#{mem.channel_name}",
        "visibility": mem.visibility.value,
        "read_at": clock_time(now),
        "sections": sections,
        "raw": mem.to_dict(),
    }


def failed(channel_id: str, exc: BaseException) -> dict[str, Any]:
    return {"channel": channel_id, "title": f"#{channel_id}", "sections": [],
            "error": redact(f"{type(exc).__name__}: {exc}"), "raw": None}


def text_lines(view: dict[str, Any]) -> list[str]:
    """`render`'s sections as lines for a terminal: a title, then each item and its notes."""
    lines = [f"memory of {view['title']}" + (f", as of {view['read_at']}"
                                              if view.get("read_at") else "")]
    if view.get("error"):
        lines.append(f"  memory could not be read: {view['error']}")
    for sec in view["sections"]:
        lines.append(f"  {sec['title']}")
        for item in sec["items"]:
            lines.append(f"    - {item['text']}")
            lines.extend(f"      {meta}" for meta in item["meta"])
        if not sec["items"] and sec["empty"]:
            lines.append(f"    {sec['empty']}")
        if sec["note"]:
            lines.append(f"    ({sec['note']})")
    return lines
