"""Whether the bot counts as addressed *by context*: the learned models' `Reading` of a case,
run once per decision (`reading_of`; the addressee and local stages read the same one),
and whether the bot's own last line asked something this message may answer.
"""

from __future__ import annotations

import time
from dataclasses import replace

from kuuki.decide.addressing.reading import ANSWER_SPAN, Reading, RoomReader, last_before
from kuuki.decide.phrases import asks
from kuuki.decide.types import Case


def answers_the_bot(case: Case) -> bool:
    """The bot's last line, among the few before this message, asked a question."""
    s = case.situation
    bot_ids = s.bot.user_ids if s.bot else frozenset()
    mine = [m for m in last_before(s, ANSWER_SPAN) if m.user.id in bot_ids]
    return bool(mine) and asks(mine[-1].text)


def reading_of(case: Case, reader: RoomReader) -> Reading:
    if case.reading is None:
        start = (time.perf_counter(), time.thread_time())
        reading = reader.read(case.situation)
        case.reading = replace(
            reading, ms=(time.perf_counter() - start[0]) * 1000,
            cpu_ms=(time.thread_time() - start[1]) * 1000,
        )
    return case.reading
