"""The `addressee` stage: who a message is for, by the learned models (kuuki.decide.reading),
and whether the bot counts as addressed *by context*; `reading_of` runs the models once per
decision (the local stage reads the same `Reading`)."""

from __future__ import annotations

import time
from dataclasses import replace

from kuuki.decide.addressing import Addressing
from kuuki.decide.phrases import asks
from kuuki.decide.reading import ADDRESSED_P, ANSWER_P, ANSWER_SPAN, SEAT, Reading, RoomReader
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult
from kuuki.decide.words import words


def answers_the_bot(case: Case) -> bool:
    """The bot's last line, among the few before this message, asked a question."""
    s = case.situation
    bot_ids = s.bot.user_ids if s.bot else frozenset()
    before = [m for m in s.recent if m.ts <= s.message.ts and m.id != s.message.id]
    mine = [m for m in before[-ANSWER_SPAN:] if m.user.id in bot_ids]
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


class AddresseeStage:
    """Who the message is for, by the addressee model; the bot by context at ADDRESSED_P."""

    name = "addressee"
    passes = MESSAGE_PASSES

    def __init__(self, reader: RoomReader, threshold: float = ADDRESSED_P) -> None:
        self.reader = reader
        self.threshold = threshold

    async def run(self, case: Case) -> StageResult:
        if case.passing is Pass.PROACTIVE:
            return StageResult.passing()
        reading = reading_of(case, self.reader)
        if not reading.read:
            case.trace.step("the learned models were not run: the bot is not part of this talk")
            return StageResult.passing(read=False)
        a = reading.addressee
        threshold = ANSWER_P if answers_the_bot(case) else self.threshold
        if reading.named and a.to == SEAT:
            # named, and the bot is the model's likeliest addressee ("we could ask Kuu
            # too, what do you think…?"): as when it asked, a majority is enough
            threshold = min(threshold, ANSWER_P)
        case.trace.features["addressee"] = {
            "to": reading.name(a.to),
            "p": round(a.p, 3),
            "bot": round(reading.bot_p, 3),
            "candidates": {reading.name(k): round(p, 3) for k, p in a.candidates.items()},
            "top": [[words(n), round(v, 2)] for n, v in a.top[:4]],
            "content": [[words(n), v] for n, v in a.moved(SEAT)],
            "threshold": threshold,
        }
        msg = case.message
        if case.addressing or msg.user.is_bot or reading.bot_p < threshold:
            return StageResult.passing(to=reading.name(a.to), p=round(a.p, 3))
        if not (reading.live or reading.named):
            # Nobody speaks to a member by context who has not been part of the talk: only
            # by name or a mention (a monologue next to a silent bot is not to the bot).
            case.trace.step("the addressee model leans to the bot, but it has not spoken here")
            return StageResult.passing(to=reading.name(a.to), p=round(a.p, 3), live=False)
        case.situation.addressing = Addressing("context", f"p={reading.bot_p:.2f}")
        case.trace.features["addressed"] = "context"
        case.trace.step(
            f"addressed by context: the addressee model gives the bot {reading.bot_p:.0%} "
            f"(≥ {threshold:.0%})"
        )
        return StageResult.passing(to=reading.name(a.to), p=round(a.p, 3), addressed="context")
