"""The judge's view of the channel's structure, whether or not a tracker is there.

The live ConversationTracker (``kuuki.conversation.tracker``) says which conversation a
message belongs to, who talks to whom and which questions went unanswered. The judge must
work without it too (structure off, or a tracker that raises), so every question asked here
has a cheap fallback computed from the short-term buffer, and every tracker call is
guarded: a tracker failure degrades one answer, never the decision.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from kuuki.decide.not_an_answer import names_the_asker, reason_not_an_answer
from kuuki.decide.situation import Situation
from kuuki.domain import Message
from kuuki.ports import Tracker

log = logging.getLogger("kuuki.judge")

# Without a tracker, "the conversation" is the channel's recent talk within this window.
FALLBACK_WINDOW = timedelta(minutes=10)
# Lines by one author this close together are read as one message.
BURST_GAP = timedelta(seconds=45)
# Two people taking turns: the other one's next line answers what was just said.
EXCHANGE_GAP = timedelta(minutes=2)
# An unaddressed line this soon after a question that opens like an answer answers it.
ANSWER_WINDOW = timedelta(seconds=90)
_ANSWER_START = re.compile(
    r"(no|nope|yes|yeah|yep|yup|sure|nah|because|you (can|can't|cannot|need|should|have to)"
    r"|try|it's|it is|that's|use)\b[ ,.!]"
    r"|(はい|いいえ|いや|うん|ううん|そうです|違います|できます|できません)[、。,! ！]",
    re.IGNORECASE,
)


T = TypeVar("T")


def _ask(tracker: Tracker | None, question: Callable[[Tracker], T]) -> T | None:
    """Ask the tracker (the full `kuuki.ports.Tracker` protocol); None when there is none
    or it fails: the tracker is another team's moving part, and a failure degrades one
    answer, never the decision."""
    if tracker is None:
        return None
    try:
        return question(tracker)
    except Exception as exc:
        log.debug("tracker failed: %s", exc)
        return None


class ChannelView:
    """Conversation structure around one message: tracker answers, buffer fallbacks."""

    def __init__(self, situation: Situation) -> None:
        self.s = situation
        self.tracker = situation.tracker
        self.recent: Sequence[Message] = situation.recent
        self.conversation_id = situation.conversation_id
        if self.conversation_id is None and self.tracker is not None:
            mid = situation.message.id
            cid = _ask(self.tracker, lambda t: t.conversation_of(mid))
            self.conversation_id = cid if isinstance(cid, str) else None
        self._conv_cache: list[Message] | None = None

    @property
    def has_tracker(self) -> bool:
        return self.tracker is not None and self.conversation_id is not None

    def conversation_of(self, message_id: str) -> str | None:
        if self.tracker is None:
            return None
        cid = _ask(self.tracker, lambda t: t.conversation_of(message_id))
        return cid if isinstance(cid, str) else None

    def conversation(self) -> list[Message]:
        """Messages of the target conversation in the buffer, oldest first."""
        if self._conv_cache is not None:
            return self._conv_cache
        msg = self.s.message
        if self.has_tracker:
            out = self._same_conversation_fast()
            if out is None:
                out = [
                    m for m in self.recent if self.conversation_of(m.id) == self.conversation_id
                ]
        else:
            cutoff = msg.ts - FALLBACK_WINDOW
            out = [m for m in self.recent if m.ts >= cutoff]
        if not any(m.id == msg.id for m in out):
            out.append(msg)
        self._conv_cache = out
        return out

    def _same_conversation_fast(self) -> list[Message] | None:
        """conversation()'s filter with one method look-up for the whole buffer.

        None when the tracker has no such method or fails on some message: the caller then
        asks message by message, so one failure still only drops that message.
        """
        if self.tracker is None:
            return None
        fn = self.tracker.conversation_of
        target = self.conversation_id
        try:
            return [m for m in self.recent if fn(m.id) == target]
        except Exception:
            return None

    def burst(self) -> list[Message]:
        """The author's own run of messages ending with this one (one thought, split up).

        People often type one thought over several lines; the judge reads the run as one
        so a question or good news in the first line is not lost to the debounce.
        """
        msg = self.s.message
        run = [msg]
        for m in reversed([m for m in self.recent if m.id != msg.id and m.ts <= msg.ts]):
            if m.user.id != msg.user.id or run[0].ts - m.ts > BURST_GAP:
                break
            run.insert(0, m)
        return run[-5:]

    def split(self) -> tuple[list[Message], list[Message]]:
        """The target conversation in full and the channel's other recent messages."""
        mine = self.conversation()
        ids = {m.id for m in mine}
        other = [m for m in self.recent if m.id not in ids]
        return mine[-20:], other[-10:]

    def same_conversation(self, cid: str | None, message_id: str) -> tuple[bool, float] | None:
        """Is ``message_id`` in conversation ``cid``? None when nobody can tell."""
        if self.tracker is None or cid is None:
            return None
        answer = _ask(self.tracker, lambda t: t.same_conversation(cid, message_id))
        if (
            isinstance(answer, tuple)
            and len(answer) == 2
            and isinstance(answer[0], bool)
            and isinstance(answer[1], int | float)
        ):
            return answer[0], float(answer[1])
        mine = self.conversation_of(message_id)
        if mine is None:
            return None
        return mine == cid, 0.7

    def unanswered(self, now: datetime, min_age_s: float, bot_ids: frozenset[str]) -> bool | None:
        """Has the message gone unanswered? True/False, or None when unknown."""
        ids = {m.id for m in self.burst()}
        if self.tracker is not None:
            found = _ask(self.tracker, lambda t: t.unanswered_questions(now, min_age_s))
            if isinstance(found, list):
                return any(m.id in ids for m in found)
        return self._unanswered_fallback(bot_ids)

    def answered_by(
        self, bot_ids: frozenset[str], passed: list[str] | None = None
    ) -> Message | None:
        """The first later message by another person that answers this one (its burst):
        a reply to it, or — with a tracker — a message placed in its conversation; without
        one, any later message by someone else (errs towards "answered": the bot must not
        talk over people). None when nobody has.

        With ``passed`` (a list to fill: the re-check of a question in the persona's
        area), the closer reading of kuuki.decide.not_an_answer: a line naming the asker
        answers, lines said to someone else, backchannels and questions of their own do
        not, and each line passed over is appended to ``passed`` with why."""
        ids = {m.id for m in self.burst()}
        msg = self.s.message
        after = False
        partner: str | None = None  # the person the author was just talking with
        # the closer reading's two tests, built only when asked for (they read the buffer)
        closer = passed is not None
        not_an_answer = reason_not_an_answer(msg, self.recent, ids) if closer else None
        to_asker = names_the_asker(msg) if closer else None
        for m in self.recent:
            if m.id == msg.id:
                after = True
                continue
            if m.user.is_bot or m.user.id in bot_ids:
                continue
            if not after:
                if m.user.id != msg.user.id and msg.ts - m.ts <= EXCHANGE_GAP:
                    partner = m.user.id
                continue
            if m.id in ids or m.user.id == msg.user.id:
                continue
            if to_asker is not None and to_asker(m):
                return m
            why = not_an_answer(m) if not_an_answer is not None else ""
            if why and passed is not None:
                passed.append(f"{m.user.name}'s {m.text[:40]!r}: {why}")
                continue
            if m.reply_to in ids or self.tracker is None or m.user.id == partner:
                return m
            cid = self.conversation_id
            if cid is not None and self.conversation_of(m.id) == cid:
                return m
            if m.ts - msg.ts <= ANSWER_WINDOW and _answer_shaped(m):
                # "no, nobody's going to…", "yes, run…", said to nobody in particular just
                # after the question: an answer the tracker could not place. Erring this
                # way keeps the bot from answering what a person just did.
                return m
        return None

    def _unanswered_fallback(self, bot_ids: frozenset[str]) -> bool:
        # Without structure, any later message by someone else counts as an answer: in a
        # busy channel that errs towards "answered", which keeps the bot from talking over
        # people.
        msg = self.s.message
        return not any(
            m.ts >= msg.ts and m.id != msg.id and m.user.id != msg.user.id for m in self.recent
        )

def _answer_shaped(m: Message) -> bool:
    # Not cues.leading_addressee: "no, …" reads like "nick, …" to it.
    return not m.mentions and m.reply_to is None and _ANSWER_START.match(m.text.strip()) is not None


def format_log(messages: Sequence[Message]) -> str:
    """A conversation as plain lines, for the same-conversation and situation prompts."""
    return "\n".join(f"[{m.ts:%H:%M}] {m.user.name}: {m.text}" for m in messages)
