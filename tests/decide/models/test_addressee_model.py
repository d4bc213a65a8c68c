"""The learned addressee model (issue 25) on small hand-written chats: whom it picks, and
that it reads only what a member has seen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import pytest

from kuuki.decide.models.addressee import ROOM, AddresseeModel, AddresseeResult
from kuuki.decide.models.turns import Turn

NAMES_JA = {"sora": ["そら"], "negi": ["ねぎとろ"], "mikan": ["みかん"]}
NAMES_EN = {"kuu": ["kuu", "Kuu"], "bob": ["bob"], "amy": ["amy"]}


def predict(turns: Sequence[Turn], names: dict[str, list[str]],
            always: Sequence[str] = ()) -> AddresseeResult:
    return AddresseeModel.shipped().predict(turns, len(turns) - 1, names, always)


def chat(*lines: tuple[str, str], step: float | None = None) -> list[Turn]:
    """Turns from (speaker, text); ``step`` seconds apart when given, else without times."""
    return [Turn(s, t, None if step is None else k * step) for k, (s, t) in enumerate(lines)]


def test_probabilities_cover_every_candidate_and_the_room() -> None:
    r = predict(chat(("sora", "今日は寒いね"), ("negi", "ほんとに"), ("mikan", "雪降るかな？")),
                NAMES_JA, always=("kuu",))
    assert set(r.candidates) == {"sora", "negi", "kuu", ROOM}  # never the author
    assert sum(r.candidates.values()) == pytest.approx(1.0)
    assert r.p == r.of(r.to) == max(r.candidates.values())
    assert r.of("mikan") == 0.0


def test_a_mid_sentence_call_with_honorific_picks_that_person() -> None:
    turns = chat(("negi", "最近料理にハマってて"), ("sora", "いいですね"),
                 ("mikan", "私も料理好きです"), ("sora", "料理教室とか楽しそう"),
                 ("mikan", "あと、ねぎとろさんも教えたりとかしたらどうでしょ？"))
    r = predict(turns, NAMES_JA)
    assert r.to == "negi", r
    assert any(name.startswith("name") for name, _ in r.top)


def test_a_trailing_name_after_thanks_picks_that_person() -> None:
    turns = chat(("sora", "駅前のパン屋おいしいよ"), ("mikan", "そうなんだ"),
                 ("negi", "私も行ったことある"), ("mikan", "なるほど、ありがとうそら！"))
    assert predict(turns, NAMES_JA).to == "sora"


def test_a_trailing_name_in_english_picks_that_person() -> None:
    turns = chat(("kuu", "try sudo apt install -f"), ("bob", "did that work?"),
                 ("amy", "yes it worked, thanks for the help, kuu"), step=20)
    assert predict(turns, NAMES_EN).to == "kuu"


def test_an_answer_goes_to_the_person_who_asked() -> None:
    # negi asks mikan, and mikan's answer is to negi, not to sora, whose news started it
    # (asked of nobody by name, "身長止まってます" could as well be a reply to sora's news:
    # the models split it 58/42 and 38/62)
    turns = chat(("sora", "最近背が伸びた気がする"), ("mikan", "え、すごい"),
                 ("negi", "みかんさんはまだ成長期なのでしょうか？"), ("mikan", "身長止まってます、、、"))
    r = predict(turns, NAMES_JA)
    assert r.to == "negi" and r.of("negi") > r.of("sora")


def test_a_three_way_greeting_is_to_the_room() -> None:
    turns = chat(("sora", "こんばんは"), ("negi", "こんばんは"), ("mikan", "こんばんは"), step=5)
    r = predict(turns, NAMES_JA)
    assert r.to == ROOM, r
    assert r.of(ROOM) > r.of("negi")


def test_an_open_question_with_no_name_and_no_recent_exchange_is_to_the_room() -> None:
    turns = [Turn("bob", "ok, rebooting now", 0.0), Turn("amy", "brb", 30.0),
             Turn("kuu", "does anyone know how to mount a usb stick read-only?", 3600.0)]
    assert predict(turns, NAMES_EN).to == ROOM


def test_a_member_who_never_spoke_is_unlikely_unless_named() -> None:
    turns = chat(("bob", "my wifi keeps dropping"), ("amy", "which driver do you use?"),
                 ("bob", "iwlwifi i think"), step=10)
    quiet = predict(turns, NAMES_EN, always=("kuu",))
    assert "kuu" in quiet.candidates and quiet.of("kuu") < 0.1
    assert quiet.to == "amy"
    named = [*turns[:2], Turn("bob", "kuu: iwlwifi i think, any idea?", 20.0)]
    assert predict(named, NAMES_EN, always=("kuu",)).to == "kuu"


class Seen(Sequence[Turn]):
    """A chat that fails the test if anything after message ``seen`` is read."""

    def __init__(self, turns: list[Turn], seen: int) -> None:
        self.turns, self.seen = turns, seen

    def __len__(self) -> int:
        return len(self.turns)

    @overload
    def __getitem__(self, k: int) -> Turn: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[Turn]: ...
    def __getitem__(self, k: int | slice) -> Turn | Sequence[Turn]:
        if isinstance(k, slice):
            raise AssertionError("predict sliced the chat")
        if k < 0 or k > self.seen:
            raise AssertionError(f"predict read turn {k} after message {self.seen}")
        return self.turns[k]


def test_predict_never_reads_turns_after_the_message() -> None:
    turns = chat(("sora", "映画見た？"), ("negi", "見た！"), ("mikan", "どうだった？"),
                 ("negi", "そらさん最高でした"), ("sora", "よかった"))
    model = AddresseeModel.shipped()
    for i in range(len(turns)):
        fresh = AddresseeModel(model.first, model.second, model.window)
        guarded = fresh.predict(Seen(turns, i), i, NAMES_JA, always=("kuu",))
        alone = AddresseeModel(model.first, model.second, model.window).predict(
            turns[: i + 1], i, NAMES_JA, always=("kuu",))
        assert guarded == alone


def test_a_message_outside_the_chat_is_refused() -> None:
    with pytest.raises(IndexError, match="message 3"):
        AddresseeModel.shipped().predict(chat(("a", "x")), 3, {})
