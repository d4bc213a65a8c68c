"""A chat as the learned addressee and seat models read it: a sequence of turns, and the
converters from the two corpora they are trained on.

A :class:`Turn` holds only what a member of the chat sees: who wrote it, the text, the time
when there is one, the message it answers when the platform (or the live disentangler) says
so, and the people the platform says it @-mentions. ``names`` maps each participant key to
the names people call them by.

The corpora (docs/decisions.md, "Issue 25"):

- MRMP (Japanese three-person chats, CC BY-SA 4.0): the label of a message is its one
  ``mention_to`` addressee; the ``@name`` marks are already removed from the text.
- Ubuntu IRC disentanglement (CC-BY-4.0): the label of an annotated message is the speaker
  of its gold parent when exactly one other speaker is among its parents, or :data:`ROOM`
  when its only link is to itself (it starts a conversation). System lines (joins, quits)
  are no one's turn and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kuuki.conversation.disentangler import irc_minutes
from kuuki.conversation.ircdata import IrcLine
from kuuki.conversation.mrmp import Dialogue

ROOM = "room"


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str  # participant key (user id; the bot's own messages have the bot's key)
    text: str
    ts: float | None = None  # seconds (epoch or relative); None when the corpus has no times
    # index in the same sequence of the message this one answers, when known (a platform
    # reply, or the live disentangler's parent); None otherwise
    parent: int | None = None
    mentions: tuple[str, ...] = ()  # participant keys the platform says it @-mentions


@dataclass(frozen=True, slots=True)
class Labelled:
    """One chat of a corpus: its turns, the participants' names, and the gold addressee
    (a key or :data:`ROOM`) of every message that has exactly one."""

    name: str
    turns: tuple[Turn, ...]
    names: Mapping[str, Sequence[str]]
    labels: Mapping[int, str]
    # who answers each message, when the corpus says: message index -> (speaker, index of
    # the answer) for every later message linked to it (IRC), empty for MRMP
    answers: Mapping[int, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    # the gold parents of each labelled message, when the corpus has links (IRC)
    parents: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def mrmp_chat(dialogue: Dialogue) -> Labelled:
    """An MRMP dialogue: no times, no platform links; labels from ``mention_to``."""
    turns = tuple(Turn(u.speaker, u.text) for u in dialogue.utterances)
    labels = {
        u.index: u.mention_to[0]
        for u in dialogue.utterances
        if len(u.mention_to) == 1 and u.mention_to[0] != u.speaker
    }
    names = {s: (s,) for s in dialogue.speakers}
    return Labelled(dialogue.id, turns, names, labels)


def irc_chat(
    name: str,
    lines: Sequence[IrcLine],
    gold: Mapping[int, Sequence[int]],
    parents: Sequence[int] | None = None,
) -> Labelled:
    """An IRC log: system lines left out, times in seconds, labels from the gold links.

    ``parents`` (one per line, e.g. the live disentangler's) become the turns' ``parent``
    where they point to an earlier non-system line; the gold links never do.
    """
    minutes = irc_minutes(lines)
    keep = [k for k, ln in enumerate(lines) if not ln.system and ln.speaker]
    index = {k: n for n, k in enumerate(keep)}
    turns = []
    for k in keep:
        parent = None
        if parents is not None and parents[k] != k and parents[k] in index:
            parent = index[parents[k]]
        turns.append(Turn(lines[k].speaker, lines[k].text, minutes[k] * 60.0, parent))
    labels: dict[int, str] = {}
    answers: dict[int, list[tuple[str, int]]] = {}
    links: dict[int, tuple[int, ...]] = {}
    for child, ps in gold.items():
        if child not in index:
            continue
        me = lines[child].speaker
        if list(ps) == [child]:
            labels[index[child]] = ROOM
            continue
        others = {lines[p].speaker for p in ps if p in index and lines[p].speaker != me}
        if len(others) == 1:
            labels[index[child]] = others.pop()
        links[index[child]] = tuple(index[p] for p in ps if p != child and p in index)
        for p in ps:
            if p != child and p in index and lines[p].speaker != me:
                answers.setdefault(index[p], []).append((me, index[child]))
    speakers = sorted({t.speaker for t in turns})
    names = {s: (s,) for s in speakers}
    return Labelled(name, tuple(turns), names, labels,
                    {k: tuple(v) for k, v in answers.items()}, links)


def strip_leading_nick(text: str, nicks: Sequence[str]) -> str:
    """``text`` without a leading ``nick:`` or ``nick,`` of one of ``nicks`` (IRC's way of
    speaking to one person); the text as it was when nothing else is left."""
    alt = "|".join(re.escape(n) for n in sorted(nicks, key=len, reverse=True) if n)
    if not alt:
        return text
    stripped = re.sub(rf"^\s*(?:{alt})\s*[:,]\s*", "", text, count=1, flags=re.IGNORECASE)
    return stripped or text
