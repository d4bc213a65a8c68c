"""The `addressee` stage: who a message is for, by the learned models
(kuuki.decide.addressing.reading); the bot is addressed by context at ADDRESSED_P (ANSWER_P
when its own last line asked something).
"""

from __future__ import annotations

from kuuki.decide.addressing.context import answers_the_bot, reading_of
from kuuki.decide.addressing.reading import (
    ADDRESSED_P,
    ANSWER_P,
    CROWDED,
    CROWDED_P,
    SEAT,
    RoomReader,
)
from kuuki.decide.models.addressee import ROOM, AddresseeResult
from kuuki.decide.models.words import words
from kuuki.decide.situation import Addressing
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult


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
        threshold, why = self.threshold_for(a, named=reading.named,
                                            answering=answers_the_bot(case))
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
            f"(≥ {threshold:.0%}{why})"
        )
        return StageResult.passing(to=reading.name(a.to), p=round(a.p, 3), addressed="context")

    def threshold_for(self, a: AddresseeResult, *, named: bool, answering: bool
                      ) -> tuple[float, str]:
        """The bot's probability at which a message is to it by context (the lowest that
        applies), and why when it is not the plain threshold."""
        options = [(self.threshold, "")]
        if answering:  # a member who asked listens for the answer
            options.append((ANSWER_P, ": it just asked something"))
        if a.to == SEAT:
            if named:
                # named, and the bot is the model's likeliest addressee ("we could ask
                # Kuu too, what do you think…?"): as when it asked, a majority is enough
                options.append((min(ANSWER_P, self.threshold),
                                ": named, and its likeliest addressee"))
            people = len(a.candidates) - (ROOM in a.candidates)
            if people >= CROWDED:
                options.append((min(CROWDED_P, self.threshold),
                                f": its likeliest addressee among {people} people"))
        return min(options, key=lambda o: o[0])
