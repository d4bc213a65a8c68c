"""Questions to the room that nobody answered yet: what a considerate member might pick up.

Read from the tracker's record of seen messages: a question counts as answered when someone
else replied to it, or when a later message of someone else was fairly likely (by the
disentangler's mass) to belong to its conversation and was not said to someone in
particular.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from kuuki.conversation import cues
from kuuki.conversation.live import BOT_KEY, Tracked
from kuuki.domain import Message

ANSWER_MASS = 0.3
ANSWER_LOOKAHEAD = 20


def unanswered(
    seen: Mapping[str, Tracked],
    *,
    now: datetime,
    since: datetime,
    min_age_s: float,
    bot_names: Sequence[str],
    bot_ids: set[str],
    addressed: Callable[[Message], bool],
) -> list[Message]:
    """Questions to the room (no addressee, or the bot) since ``since``, at least
    ``min_age_s`` old, nobody else answered yet; ``addressed`` tells a message said to
    someone in particular."""
    answered = _answered(seen, since, addressed)
    out = []
    for s in seen.values():
        m = s.msg
        if (
            m.deleted
            or s.speaker == BOT_KEY
            or m.user.is_bot
            or m.ts < since
            or (now - m.ts).total_seconds() < min_age_s
            or m.id in answered
            or not cues.is_question(m.text)
        ):
            continue
        called = [c for c in cues.called_in_question(m.text)
                  if not cues.calls_name(c, bot_names)]
        if (
            m.reply_to is None
            and not called
            and not [x for x in m.mentions if x not in bot_ids]
        ):
            out.append(m)
    return out


def _answered(
    seen: Mapping[str, Tracked], since: datetime, addressed: Callable[[Message], bool]
) -> set[str]:
    """Ids of the messages someone else replied to, or (questions) likely answered."""
    answered: set[str] = set()
    for s in seen.values():
        p = s.parent_id
        if p is not None and p in seen and seen[p].msg.user.id != s.msg.user.id:
            answered.add(p)
    # A later message from someone else that the model thought fairly likely to belong to
    # the question's conversation also counts: in a quiet channel "yep" may have been
    # placed in a new conversation by a narrow margin, and the bot must not jump in.
    recent = [x for x in seen.values() if x.msg.ts >= since]
    for pos, q in enumerate(recent):
        if q.msg.id in answered or not cues.is_question(q.msg.text):
            continue
        for s in recent[pos + 1 : pos + 1 + ANSWER_LOOKAHEAD]:
            if (
                s.msg.user.id != q.msg.user.id
                and s.speaker != BOT_KEY
                and s.msg.reply_to in (None, q.msg.id)
                and may_answer(s, q.conversation_id)
                and not addressed(s.msg)  # said to someone in particular
            ):
                answered.add(q.msg.id)
                break
    return answered


def may_answer(seen: Tracked, conversation_id: str) -> bool:
    """Could ``seen`` be an answer in ``conversation_id``? Fairly likely by the model's
    mass, or placed in a new conversation with the rest of its mass mostly there: a
    channel's first few lines give the model little context (it is trained with 1,000
    lines before each annotated one), so "yep" after "anyone around?" opens a
    conversation of its own; waiting is the safe error for a considerate bot."""
    mass = seen.mass.get(conversation_id, 0.0)
    if mass >= ANSWER_MASS:
        return True
    return (
        seen.parent_id is None and mass > 0 and max(seen.mass.values()) == mass
    )
