"""`kuuki bench judge`'s figures read against the IRC annotators' gold reply links.

The Ubuntu IRC corpus (Kummerfeld et al., 2019) links each annotated message to the message
it answers. That says, for every message the bot spoke to unasked, whether a person had
already answered it by the time the bot spoke, and, for every question to the room, whether
anybody ever answered it. Two figures come out:

- ``already_answered_share``: of the bot's unprompted replies and acks (stage not
  ``addressed``) to annotated messages, the share whose target had a gold answer from
  another person posted at or before the bot's decision time;
- ``unanswered_questions`` / ``picked_up``: questions to the room (a question, not opening
  with a nick) that no other person answered within ``UNANSWERED_AFTER`` by gold links, and
  how many of them the bot answered unasked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from kuuki.conversation import cues
from kuuki.conversation.ircdata import ANNOTATED_FROM, read_annotation
from kuuki.domain import ActionKind, Decision, Message, Stage

UNANSWERED_AFTER = timedelta(minutes=5)
SPOKE = (ActionKind.REPLY, ActionKind.ACK)


@dataclass(slots=True)
class GoldFigures:
    """Counts for one or more files; `merge` adds another file's."""

    unprompted: int = 0  # unprompted replies/acks to annotated messages
    already_answered: int = 0
    unanswered_questions: int = 0
    picked_up: int = 0
    examples: list[str] = field(default_factory=list)

    def merge(self, other: GoldFigures) -> None:
        self.unprompted += other.unprompted
        self.already_answered += other.already_answered
        self.unanswered_questions += other.unanswered_questions
        self.picked_up += other.picked_up
        self.examples.extend(other.examples[: max(0, 5 - len(self.examples))])

    def as_dict(self) -> dict[str, Any]:
        share = self.already_answered / self.unprompted if self.unprompted else 0.0
        return {
            "unprompted_replies": self.unprompted,
            "already_answered": self.already_answered,
            "already_answered_share": round(share, 4),
            "unanswered_questions": self.unanswered_questions,
            "unanswered_picked_up": self.picked_up,
        }


def annotation_for(path: Path) -> Path | None:
    """The gold links beside an ``X.ascii.txt`` log, if there are any."""
    if not path.name.endswith(".ascii.txt"):
        return None
    ann = path.with_name(path.name.replace(".ascii.txt", ".annotation.txt"))
    return ann if ann.exists() else None


def gold_figures(
    annotation: Path,
    line_of: dict[str, int],
    messages: Sequence[Message],
    decisions: Sequence[Decision],
) -> GoldFigures:
    """The figures for one replayed log; ``line_of`` maps message ids to log line numbers."""
    by_line = {line_of[m.id]: m for m in messages if m.id in line_of}
    # parent line -> the messages (of other people) that answer it
    answers: dict[int, list[Message]] = {}
    for child, parents in read_annotation(annotation).items():
        c = by_line.get(child)
        if c is None:
            continue
        for p in parents:
            parent = by_line.get(p)
            if p != child and parent is not None and parent.user.id != c.user.id:
                answers.setdefault(p, []).append(c)
    out = GoldFigures()
    bot_spoke_to: set[str] = set()
    for d in decisions:
        line = line_of.get(d.message_id)
        if d.stage is Stage.ADDRESSED or d.action.kind not in SPOKE:
            continue
        if line is None or line < ANNOTATED_FROM:
            continue
        bot_spoke_to.add(d.message_id)
        out.unprompted += 1
        first = min((a.ts for a in answers.get(line, [])), default=None)
        if first is not None and first <= d.decided_at:
            out.already_answered += 1
            if len(out.examples) < 5:
                out.examples.append(d.message_id)
    for line, m in sorted(by_line.items()):
        if line < ANNOTATED_FROM or m.user.is_bot or not _to_the_room(m.text):
            continue
        soon = [a for a in answers.get(line, []) if a.ts - m.ts <= UNANSWERED_AFTER]
        if soon:
            continue
        out.unanswered_questions += 1
        if m.id in bot_spoke_to:
            out.picked_up += 1
    return out


def _to_the_room(text: str) -> bool:
    """A question that opens with no nick (IRC's way of speaking to one person)."""
    return cues.is_question(text) and cues.leading_addressee(text) is None
