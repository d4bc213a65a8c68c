"""The addressee stage's threshold: the bot's probability at which a message counts as
addressed to it by context, by what the model says and the talk around it."""

from __future__ import annotations

import pytest

from kuuki.decide.addressing.reading import ADDRESSED_P, ANSWER_P, CROWDED_P, SEAT, RoomReader
from kuuki.decide.models.addressee import ROOM, AddresseeResult
from kuuki.decide.stages.addressee import AddresseeStage


def result(bot: float, **others: float) -> AddresseeResult:
    candidates = {SEAT: bot, **others}
    to = max(candidates, key=lambda k: candidates[k])
    return AddresseeResult(to, candidates[to], candidates, ())


STAGE = AddresseeStage(RoomReader(["Kuu"]))


@pytest.mark.parametrize(
    ("a", "named", "answering", "threshold", "why"),
    [
        # three people: the plain threshold
        (result(0.5, bob=0.3, **{ROOM: 0.2}), False, False, ADDRESSED_P, ""),
        # five people and the bot the likeliest: its lead is enough
        (result(0.4, bob=0.2, carol=0.15, dave=0.1, erin=0.1, **{ROOM: 0.05}), False, False,
         CROWDED_P, ": its likeliest addressee among 5 people"),
        # five people, but another the likeliest: the plain threshold
        (result(0.3, bob=0.4, carol=0.1, dave=0.1, erin=0.05, **{ROOM: 0.05}), False, False,
         ADDRESSED_P, ""),
        # named and the likeliest
        (result(0.55, bob=0.3, **{ROOM: 0.15}), True, False, ANSWER_P,
         ": named, and its likeliest addressee"),
        # it just asked something, whoever is likeliest
        (result(0.3, bob=0.5, **{ROOM: 0.2}), False, True, ANSWER_P,
         ": it just asked something"),
        # it asked, in a crowded talk where it is the likeliest: the lowest that applies
        # (the two are equal: the first reason, that it asked)
        (result(0.4, bob=0.2, carol=0.15, dave=0.1, erin=0.1, **{ROOM: 0.05}), False, True,
         min(ANSWER_P, CROWDED_P),
         ": it just asked something" if ANSWER_P <= CROWDED_P
         else ": its likeliest addressee among 5 people"),
    ],
)
def test_the_threshold_that_applies(a: AddresseeResult, named: bool, answering: bool,
                                    threshold: float, why: str) -> None:
    assert STAGE.threshold_for(a, named=named, answering=answering) == (threshold, why)
