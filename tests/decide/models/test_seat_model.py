"""The learned seat model (issue 25): does a member in this seat speak now, and how."""

from __future__ import annotations

from collections.abc import Sequence

from kuuki.decide.models.addressee import AddresseeModel
from kuuki.decide.models.seat import SeatModel, SeatResult
from kuuki.decide.models.turns import Turn

NAMES = {"sora": ["そら"], "negi": ["ねぎとろ"], "mikan": ["みかん"], "kuu": ["くう"]}


def seat(turns: Sequence[Turn], who: str, always: Sequence[str] = ("kuu",)) -> SeatResult:
    i = len(turns) - 1
    r = AddresseeModel.shipped().predict(turns, i, NAMES, always)
    return SeatModel.shipped().predict(turns, i, who, NAMES, r)


def chat(*lines: tuple[str, str]) -> list[Turn]:
    return [Turn(s, t, k * 15.0) for k, (s, t) in enumerate(lines)]


def test_the_seat_a_question_is_put_to_is_likelier_to_answer_than_the_third() -> None:
    turns = chat(("sora", "週末どこか行きました？"), ("negi", "山に登りました"),
                 ("mikan", "いいなあ"), ("sora", "ねぎとろさん、どの山ですか？"))
    to_negi, to_mikan = seat(turns, "negi"), seat(turns, "mikan")
    assert to_negi.p > to_mikan.p
    assert 0.0 <= to_negi.short <= 1.0
    assert to_negi.top and all(v > 0 for _, v in to_negi.top)


def test_a_member_who_never_spoke_and_is_not_called_stays_quiet() -> None:
    turns = chat(("sora", "週末どこか行きました？"), ("negi", "山に登りました"),
                 ("sora", "どの山ですか？"))
    quiet = seat(turns, "kuu")
    assert quiet.p < 0.1
    assert quiet.p < seat(turns, "negi").p
    called = chat(("sora", "週末どこか行きました？"), ("negi", "山に登りました"),
                  ("sora", "くうさんはどう思う？"))
    assert seat(called, "kuu").p > quiet.p * 3


def test_an_answer_to_the_seats_own_question_is_likely_answered_by_it() -> None:
    turns = chat(("sora", "犬飼ってるんです"), ("negi", "犬と猫どっちが好き？"),
                 ("mikan", "猫です！"))
    assert seat(turns, "negi").p > seat(turns, "sora").p


def test_a_lone_persons_room_question_is_left_to_wait_and_the_result_says_why() -> None:
    # alone with a member who never spoke, the person's questions to the room make that
    # member the likeliest addressee only by elimination: the seat lets them wait
    alone = [Turn("erin", "is anyone around to help me with git?", 0.0),
             Turn("erin", "does anyone know how to undo a rebase?", 60.0)]
    r = seat(alone, "kuu")
    assert r.p < 0.05
    assert r.against and r.against[0][1] < 0 and r.against[0][0] in ("pat_aa-", "pat_a--")
    # with a second person talking, the same question is a room's ordinary one
    two = [Turn("erin", "is anyone around to help me with git?", 0.0),
           Turn("sam", "maybe, what is it?", 30.0),
           Turn("erin", "does anyone know how to undo a rebase?", 60.0)]
    assert not any(n in ("pat_aa-", "pat_a--") for n, _ in seat(two, "kuu").against)
