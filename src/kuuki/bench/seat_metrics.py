"""The figures of `kuuki bench seat`, from what one replay did (pure: no engine, no I/O).

A replay with the bot in a participant's seat yields, for each labelled message by
someone else (exactly one addressee: the seat or the other person), a `Judged`: whether
it was to the seat, the score of its *first* decision line (None: it had none, its
debounce superseded by the next message) and the strongest action the bot took between
it and the next message (as a transcript's `expect` line reads it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kuuki.conversation.mrmp import Dialogue
from kuuki.domain import ActionKind, Decision
from kuuki.replay.expect import Expectation, Played, strongest
from kuuki.replay.runner import decision_line

SPOKE = (ActionKind.REPLY, ActionKind.ACK)


def message_id(index: int) -> str:
    """The transcript id of utterance ``index`` of a dialogue."""
    return f"u{index}"


@dataclass(frozen=True, slots=True)
class Judged:
    """One labelled message by another member, as the seat's replay handled it."""

    to_seat: bool
    score: float | None  # the first decision line's score; None: no decision line
    action: ActionKind  # the strongest action until the next message
    after_own: bool = False  # the line before it was the seat's (the baseline's cue)
    mentioned: bool = False  # a platform @-mention of the seat
    named: bool = False  # its text names the seat
    room: bool = False  # said to everyone (IRC: a message that starts a conversation)

    @property
    def spoke(self) -> bool:
        return self.action in SPOKE


def labelled(dialogue: Dialogue, seat: str) -> list[tuple[int, bool]]:
    """(index, addressed to ``seat``) of every message by another member with exactly one
    addressee, who is not its author: the seat or the third member."""
    found: list[tuple[int, bool]] = []
    for u in dialogue.utterances:
        if u.speaker == seat or len(u.mention_to) != 1:
            continue
        (to,) = u.mention_to
        if to != u.speaker and to in dialogue.speakers:
            found.append((u.index, to == seat))
    return found


def judged(
    dialogue: Dialogue, seat: str, decisions: Sequence[Decision], timeline: Played,
    *, mentions: bool = False,
) -> list[Judged]:
    """What the seat's replay did about each of its labelled messages (``mentions``: the
    replay passed each ``@name`` as a platform mention)."""
    first = first_scores(decisions)
    out: list[Judged] = []
    speakers = [u.speaker for u in dialogue.utterances]
    for index, to_seat in labelled(dialogue, seat):
        mid = message_id(index)
        out.append(Judged(
            to_seat, first.get(mid), action_after(timeline, mid),
            after_own=index > 0 and speakers[index - 1] == seat,
            mentioned=mentions and to_seat,
        ))
    return out


def first_scores(decisions: Iterable[Decision]) -> dict[str, float]:
    """Each message's first decision line's score."""
    first: dict[str, float] = {}
    for d in decisions:
        first.setdefault(d.message_id, float(decision_line(d)["score"]))
    return first


def action_after(timeline: Played, mid: str) -> ActionKind:
    """The strongest action between message ``mid`` and the next message."""
    return strongest(timeline.window(Expectation(mid, {}, 0, to=mid)))


def auc(positives: Iterable[float], negatives: Iterable[float]) -> float | None:
    """The probability that a positive scores above a negative, a tie counting one half
    (the Mann-Whitney U over both counts); None when either list is empty."""
    pos = sorted(positives)
    neg = sorted(negatives)
    if not pos or not neg:
        return None
    wins = 0.0
    lo = hi = 0  # neg[:lo] < p, neg[:hi] <= p, for each p in increasing order
    for p in pos:
        while lo < len(neg) and neg[lo] < p:
            lo += 1
        while hi < len(neg) and neg[hi] <= p:
            hi += 1
        wins += lo + (hi - lo) / 2
    return wins / (len(pos) * len(neg))


def summary(items: Sequence[Judged]) -> dict[str, Any]:
    """Counts, the two AUCs and the shares spoken after, for one gap's labelled messages;
    beside them the baseline "speak iff the line before was mine", and the messages that
    @-mention or name the seat (when there are any)."""
    seat = [j for j in items if j.to_seat]
    other = [j for j in items if not j.to_seat and not j.room]

    def scores(group: list[Judged], missing: float | None) -> list[float]:
        found = (missing if j.score is None else j.score for j in group)
        return [s for s in found if s is not None]

    def share(group: list[Judged], baseline: bool = False) -> dict[str, Any]:
        spoke = sum((j.after_own if baseline else j.spoke) for j in group)
        return {"messages": len(group), "spoke": spoke,
                "share": _round(spoke / len(group)) if group else None}

    lowest = -math.inf
    extra: dict[str, Any] = {}
    for key, group in (("mentioned", [j for j in items if j.mentioned]),
                       ("named", [j for j in items if j.named]),
                       ("to_room", [j for j in items if j.room])):
        if group:
            extra[key] = share(group)
    return {
        "labelled": {"to_seat": len(seat), "to_other": len(other)},
        "no_decision": {"to_seat": sum(j.score is None for j in seat),
                        "to_other": sum(j.score is None for j in other)},
        "auc": {
            "first_decision": _round(auc(scores(seat, None), scores(other, None))),
            "no_decision_lowest": _round(auc(scores(seat, lowest), scores(other, lowest))),
        },
        "replied_or_acked": {"to_seat": share(seat), "to_other": share(other), **extra},
        "previous_line_mine": {"to_seat": share(seat, True), "to_other": share(other, True)},
    }


def silent_figures(decisions: Iterable[Decision], messages: int) -> dict[str, Any]:
    """The silent fourth member: its replies and acks, and both per 100 messages."""
    kinds = [d.action.kind for d in decisions]
    replies = kinds.count(ActionKind.REPLY)
    acks = kinds.count(ActionKind.ACK)
    per_100 = 100 * (replies + acks) / messages if messages else None
    return {"messages": messages, "replies": replies, "acks": acks,
            "per_100": _round(per_100)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
