"""What the bot remembers, for the operator to read: views and plain-text renderings.

`channel_view` and `person_view` turn the memory layer's records (channel context,
profiles, facts) into frozen views with readable fields; `render_channel`,
`render_person` and `render_overview` turn views into text. The views are JSON-able
through `dataclasses.asdict`, so a page (the playground's memory panel) can show the same
fields. Nothing here filters by privacy: this is the operator's view of their own bot,
not something a chat member or a prompt sees (that is `MemoryBook.visible`'s job).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kuuki.domain import Channel
from kuuki.memory.channel_context import ChannelContext
from kuuki.memory.profiles import UserProfile, familiarity
from kuuki.store.records import FactRecord
from kuuki.text.wording import plural

ChannelName = Callable[[str], str]  # channel id → "#name"


@dataclass(frozen=True, slots=True)
class FactView:
    text: str
    channel: str  # "#name"
    people: tuple[str, ...]
    confidence: float


@dataclass(frozen=True, slots=True)
class PersonReport:
    user_id: str
    name: str
    level: str  # stranger / acquaintance / regular / close
    messages: int
    addressed_bot: int
    last_seen: datetime | None
    channels: tuple[str, ...]
    topics: tuple[tuple[str, tuple[str, ...]], ...]  # (channel, keywords)
    notes: tuple[tuple[str, tuple[str, ...]], ...]  # (channel, tags from reflection)
    summaries: tuple[tuple[str, str], ...]  # (channel, last conversation)
    facts: tuple[FactView, ...]


@dataclass(frozen=True, slots=True)
class ChannelReport:
    channel_id: str
    name: str  # "#name"
    visibility: str
    summary: str
    mood: str
    topics: tuple[str, ...]
    updated: datetime | None
    recently_active: tuple[str, ...]
    people: tuple[PersonReport, ...]  # who the bot knows from this channel, most active first
    facts: tuple[FactView, ...]


def fact_view(fact: FactRecord, channel_name: ChannelName, names: dict[str, str]) -> FactView:
    return FactView(
        text=fact.content,
        channel=channel_name(fact.source_channel_id or ""),
        people=tuple(names.get(u, u) for u in fact.source_user_ids),
        confidence=round(fact.confidence, 2),
    )


def person_view(
    p: UserProfile,
    facts: Iterable[FactRecord],
    thresholds: tuple[int, int, int],
    channel_name: ChannelName,
    names: dict[str, str] | None = None,
) -> PersonReport:
    names = names or {p.user_id: p.display_name}
    return PersonReport(
        user_id=p.user_id,
        name=p.display_name,
        level=familiarity(p.interaction_count, thresholds),
        messages=p.interaction_count,
        addressed_bot=p.mentioned_bot_count,
        last_seen=p.last_interaction,
        channels=tuple(channel_name(c) for c in p.channels_active),
        topics=tuple(
            (channel_name(c), tuple(str(w) for w in e.get("keywords", [])))
            for c, e in p.last_topics.items()
        ),
        notes=tuple((channel_name(c), tuple(tags)) for c, tags in p.tags.items() if tags),
        summaries=tuple(
            (channel_name(c), str(e.get("text", ""))) for c, e in p.summaries.items()
        ),
        facts=tuple(fact_view(f, channel_name, names) for f in facts),
    )


def channel_view(
    channel: Channel,
    context: ChannelContext | None,
    people: Sequence[PersonReport],
    facts: Iterable[FactRecord],
    channel_name: ChannelName,
    names: dict[str, str],
) -> ChannelReport:
    here = channel_name(channel.id)
    known = sorted((p for p in people if here in p.channels), key=lambda p: -p.messages)
    return ChannelReport(
        channel_id=channel.id,
        name=here,
        visibility=str(channel.visibility),
        summary=context.summary if context else "",
        mood=context.mood if context else "",
        topics=tuple(context.topic_keywords) if context else (),
        updated=context.last_updated if context else None,
        recently_active=tuple(context.active_users) if context else (),
        people=tuple(known),
        facts=tuple(
            fact_view(f, channel_name, names) for f in facts if f.source_channel_id == channel.id
        ),
    )


def _when(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else "never"


def person_line(p: PersonReport) -> str:
    return f"{p.name} ({p.level}, {plural(p.messages, 'message')})"


def render_person(p: PersonReport) -> str:
    """Everything remembered about one person, for the operator."""
    shown = p.name if p.name == p.user_id else f"{p.name} (id {p.user_id})"
    lines = [
        f"{shown}: {p.level} — {plural(p.messages, 'message')} seen, "
        f"addressed the bot {plural(p.addressed_bot, 'time')}, last seen {_when(p.last_seen)}"
    ]
    if p.channels:
        lines.append("  active in " + ", ".join(p.channels))
    lines += [f"  topics in {c}: {', '.join(words)}" for c, words in p.topics if words]
    lines += [f"  learned in {c}: {', '.join(tags)}" for c, tags in p.notes]
    lines += [f"  last conversation in {c}: {text}" for c, text in p.summaries if text]
    if p.facts:
        lines.append(f"  {plural(len(p.facts), 'fact')}:")
        lines += [f"    - {f.text}  ({f.channel}, confidence {f.confidence:.2f})" for f in p.facts]
    else:
        lines.append("  no facts")
    return "\n".join(lines)


def render_channel(c: ChannelReport) -> str:
    """What the bot understands of one channel and who it knows there."""
    lines = [f"{c.name} ({c.visibility})"]
    if c.summary:
        lines.append(f"  summary (updated {_when(c.updated)}): {c.summary}")
    else:
        lines.append("  no summary yet")
    if c.mood:
        lines.append(f"  mood: {c.mood}")
    if c.topics:
        lines.append("  topics: " + ", ".join(c.topics))
    if c.recently_active:
        lines.append("  recently active: " + ", ".join(c.recently_active))
    colon = ":" if c.people else ""
    lines.append(f"  {plural(len(c.people), 'person', 'people')} known here{colon}")
    lines += [f"    - {person_line(p)}" for p in c.people]
    lines.append(f"  {plural(len(c.facts), 'fact')}" + (":" if c.facts else ""))
    lines += [f"    - {f.text}" for f in c.facts]
    return "\n".join(lines)


def render_overview(channels: Sequence[ChannelReport], people: Sequence[PersonReport]) -> str:
    """`kuuki memory list`: per channel who and what is remembered, then everyone known."""
    if not channels and not people:
        return "Nothing remembered yet."
    lines: list[str] = []
    for c in channels:
        summary = "a summary" if c.summary else "no summary"
        who = ", ".join(person_line(p) for p in c.people) or "nobody yet"
        lines.append(
            f"{c.name} ({c.visibility}): {summary}, {plural(len(c.facts), 'fact')}; "
            f"{plural(len(c.people), 'person', 'people')}: {who}"
        )
    lines.append("")
    lines.append(f"{plural(len(people), 'person', 'people')} known:")
    for p in sorted(people, key=lambda p: -p.messages):
        ident = "" if p.user_id == p.name else f" [id {p.user_id}]"
        lines.append(
            f"  {person_line(p)}{ident}, {plural(len(p.facts), 'fact')}, "
            f"last seen {_when(p.last_seen)}"
        )
    lines.append("")
    lines.append("Details: kuuki memory show --channel NAME, or --user ID")
    return "\n".join(lines)
