"""Whether the bot counts as addressed *by context*: the learned models' `Reading` of a case,
run once per decision (`reading_of`; the addressee and local stages read the same one),
and whether the bot's own last line asked something this message may answer.
"""

from __future__ import annotations

import time
from dataclasses import replace

from kuuki.decide.addressing.reading import ANSWER_SPAN, Reading, RoomReader, last_before
from kuuki.decide.phrases import ASKS_FOR, REQUEST, asks
from kuuki.decide.types import Case
from kuuki.domain import Message


def answers_the_bot(case: Case) -> bool:
    """The bot's last line, among the few before this message, asked a question."""
    question = _bot_question(case)
    return question is not None and asks(question.text)


def clarifying(case: Case) -> str:
    """The bot's question asked for what it needed in order to help this message's author:
    they asked or requested something ("any cafe you'd recommend?", 「おすすめある？」), and
    the bot asked back where, which, when, how much… («どのあたりで探してますか？»). The
    answer carries what it asked for, and a member who asked that follows up with the help,
    however few words it takes («渋谷の近くで、3000円くらいです»). A question asked to chat
    ("are you still growing?", or the bot's own opener) is not one: a short answer closes
    it. What the bot asked for, in words, or "" when it is not such a question."""
    s = case.situation
    question = _bot_question(case)
    if question is None or not asks(question.text):
        return ""
    if not ASKS_FOR.found_in(question.text):
        return ""
    before = [m for m in s.recent if m.ts <= question.ts and m.id != question.id]
    asked = next((m for m in reversed(before[-ANSWER_SPAN:])
                  if m.user.id == s.message.user.id), None)
    if asked is None or not (asks(asked.text) or REQUEST.found_in(asked.text)):
        return ""
    said = question.text if len(question.text) <= 40 else question.text[:39] + "…"
    return f"it asked «{said}» after {s.message.user.name}'s request"


def _bot_question(case: Case) -> Message | None:
    """The bot's last line among the few before this message, if it spoke there."""
    s = case.situation
    bot_ids = s.bot.user_ids if s.bot else frozenset()
    mine = [m for m in last_before(s, ANSWER_SPAN) if m.user.id in bot_ids]
    return mine[-1] if mine else None


def reading_of(case: Case, reader: RoomReader) -> Reading:
    if case.reading is None:
        start = (time.perf_counter(), time.thread_time())
        reading = reader.read(case.situation)
        case.reading = replace(
            reading, ms=(time.perf_counter() - start[0]) * 1000,
            cpu_ms=(time.thread_time() - start[1]) * 1000,
        )
    return case.reading
