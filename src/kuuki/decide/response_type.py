"""How to speak once the judge decided to: an emoji, a short aizuchi, or a full reply.

Seed 002 (with RESPONSE_DIVERSITY_ENABLED): a reaction below 60, a short acknowledgement
from 60 to 79 outside an engagement, a full reply at 80 and above or whenever there is a
clear trigger (a question put to the room or to the bot, a name call). One rule overrides
all: the bot never answers a conflict with an emoji or a short ack — that reads as
flippant — so in a conflict it either says something real or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kuuki.decide.rules import LocalResult
from kuuki.domain import ActionKind
from kuuki.settings import Persona

IMPLICIT = frozenset({"dm", "thread"})
REPLY_AT = 80
ACK_AT = 60
SHORT_AT = 0.5  # the seat model's "short" at which an answer to the bot is a short ack
_BY_NAME = {"react": ActionKind.REACT, "ack": ActionKind.ACK, "reply": ActionKind.REPLY}


_REACT_CUES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("thank", "thx", "ありがと", "感謝", "助かった"), "😊"),
    (("?", "？", "why", "how", "なぜ", "どう"), "🤔"),
    (("idea", "think", "思いつ", "アイデア", "ひらめ"), "💡"),
    (("great", "awesome", "nice", "cool", "done", "すごい", "やった", "できた", "最高"), "✨"),
    (("ok", "sure", "agree", "了解", "いいね", "賛成", "おけ"), "👍"),
)


def pick_emoji(text: str, emoji: Sequence[str]) -> str:
    """A reaction that fits the message, from the persona's set (also the responder's
    fallback reaction)."""
    lowered = text.lower()
    for cues, candidate in _REACT_CUES:
        if candidate in emoji and any(c in lowered for c in cues):
            return candidate
    return emoji[0] if emoji else "👀"


@dataclass(frozen=True, slots=True)
class ResponseForm:
    action: ActionKind
    emoji: str | None
    why: str


def choose_form(
    r: LocalResult,
    score: float,
    text: str,
    persona: Persona,
    *,
    diversity: bool,
    suggested: str | None = None,
) -> ResponseForm:
    """The form of a response the judge has already decided to give."""
    form = _base_form(r, score, diversity=diversity, suggested=suggested)
    if r.conflict and form.action in (ActionKind.REACT, ActionKind.ACK):
        if r.addressed:
            return ResponseForm(ActionKind.REPLY, None,
                                "conflict: a real answer, never an emoji or ack")
        return ResponseForm(ActionKind.NONE, None,
                            "conflict: an emoji or short ack would be flippant")
    if form.action is ActionKind.REACT:
        return ResponseForm(form.action, pick_emoji(text, persona.emoji), form.why)
    return form


def _base_form(
    r: LocalResult, score: float, *, diversity: bool, suggested: str | None
) -> ResponseForm:
    if not diversity:
        return ResponseForm(ActionKind.REPLY, None, "response diversity off")
    if suggested in _BY_NAME:
        return ResponseForm(_BY_NAME[suggested], None, f"the LLM judge chose {suggested}")
    if r.addressed in IMPLICIT and not r.question and r.short:
        # Said where the bot is the listener (a DM, its own thread) but not a call for an
        # answer: "bringing Codenames", "完璧、助かった〜" get the nod a person would give.
        return ResponseForm(ActionKind.ACK, None, f"addressed ({r.addressed}): a short remark")
    if r.addressed:
        return ResponseForm(ActionKind.REPLY, None, f"addressed ({r.addressed})")
    if score >= REPLY_AT:
        return ResponseForm(ActionKind.REPLY, None, f"score {score:.0f} ≥ {REPLY_AT}")
    if r.open_question or (r.question and r.engaged):
        return ResponseForm(ActionKind.REPLY, None, "a clear question")
    if score >= ACK_AT:
        if r.engaged:
            return ResponseForm(ActionKind.REPLY, None, f"score {score:.0f} in an engagement")
        return ResponseForm(ActionKind.ACK, None,
                            f"score {ACK_AT}–{REPLY_AT - 1} outside an engagement")
    return ResponseForm(ActionKind.REACT, None, f"score {score:.0f} < {ACK_AT}")
