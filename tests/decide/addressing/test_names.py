from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kuuki.decide.addressing.names import AddressDetector
from kuuki.domain import Message, User

DET = AddressDetector(["Kuu", "くう", "クウ", "空"])
T = datetime(2026, 1, 5, tzinfo=UTC)


def msg(text: str, **kw: object) -> Message:
    return Message("m1", "c", User("alice", "alice"), text, T, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Kuu, what do you think?",
        "kuu what do you think",
        "hey Kuu!",
        "thanks, Kuu",
        "Kuu-san, are you there?",
        "KUU: ping",
        "@Kuu look at this",
        "くうさん、これ見て",
        "クウちゃん、おはよう",
        "くう、どう思う？",
        "ねえクウさん",
        "ありがとう、くうさん！",
        "Ｋｕｕ、テスト",
        "くうも来る？",
        "クウは何が好き？",
    ],
)
def test_name_calls(text: str) -> None:
    found = DET.detect(msg(text), bot_user_ids=set())
    assert found.kind == "name", text


@pytest.mark.parametrize(
    "text",
    [
        "I asked Kuu yesterday about it",
        "kuuki is a nice word",
        "the kuu thing we discussed is done",
        "くうが言ってたやつ",
        "昨日くうさんに聞いたんだけど",
        "くうは昨日いなかったね",
        "",
    ],
)
def test_references_are_not_calls(text: str) -> None:
    assert not DET.detect(msg(text), bot_user_ids=set()), text


def test_mention_and_reply() -> None:
    assert DET.detect(msg("hi", mentions=("U1",)), bot_user_ids={"U1"}).kind == "mention"
    assert DET.detect(msg("hi", mentions=("Kuu",)), bot_user_ids=set()).kind == "mention"
    assert (
        DET.detect(msg("ok", reply_to="b1"), bot_user_ids=set(), bot_message_ids={"b1"}).kind
        == "reply"
    )
    assert not DET.detect(msg("ok", reply_to="x"), bot_user_ids=set(), bot_message_ids={"b1"})


SORA = AddressDetector(["そら", "Sora"])


@pytest.mark.parametrize(
    ("detector", "text", "name"),
    [
        # issue 25: the name after a clause of its own, glued to the thanks or after a space
        (SORA, "なるほど、ありがとうそら！", "そら"),
        (SORA, "ありがとうそら", "そら"),
        (DET, "おつかれさまです、くうさん", "くうさん"),
        (DET, "ありがとね くう", "くう"),
        (DET, "ほんとに助かった。ありがとう クウちゃん！", "クウちゃん"),
        (DET, "thanks for the help, kuu", "kuu"),
        (DET, "great, thanks kuu!", "kuu"),
    ],
)
def test_trailing_and_glued_name_calls(detector: AddressDetector, text: str, name: str) -> None:
    found = detector.detect(msg(text), bot_user_ids=set())
    assert (found.kind, found.detail) == ("name", name), text


@pytest.mark.parametrize(
    ("detector", "text"),
    [
        (SORA, "そらの話"),
        (SORA, "そらが晴れてるね、ありがとう"),
        (DET, "くうが言ってた"),
        (DET, "I asked Kuu yesterday"),
        (DET, "also kuu is down again"),
        (DET, "ありがとう、くうが言ってたやつ助かった"),
    ],
)
def test_trailing_references_stay_references(detector: AddressDetector, text: str) -> None:
    assert not detector.detect(msg(text), bot_user_ids=set()), text


@pytest.mark.parametrize(
    ("detector", "text"),
    [
        # a call after openers and discourse markers, in lists of people, in brackets
        (DET, "by the way Kuu, what is a good day trip from Tokyo besides Kamakura?"),
        (DET, "btw Kuu what do you think"),
        (DET, "BTW, Kuu, any idea?"),
        (DET, "oh and Kuu, one more thing"),
        (DET, "ok so Kuu, how about rust?"),
        (DET, "also Kuu: can you check"),
        (DET, "um, Kuu, are you there?"),
        (DET, "bob and I were wondering Kuu, is it open on Sundays?"),
        (DET, "Bob, Kuu, what do you think?"),
        (DET, "Alice, Bob and Kuu, who's coming?"),
        (DET, "<Kuu> I am running 8.10"),
        (DET, "we could ask Kuu too, what do you think about the migration?"),
        (DET, "let's ask Kuu: do you know a good cafe?"),
        (SORA, "ソラにも聞いてみよう、どう思う？"),
        (SORA, "ちなみにソラ、おすすめある？"),
        (SORA, "それでソラ、どうしたらいい？"),
        (SORA, "ところでソラ、これ知ってる？"),
        (SORA, "そういえばソラ、昨日の件どうなった？"),
        (SORA, "で、ソラはどう思う？"),
        (SORA, "てかソラ、起きてる？"),
        (SORA, "ミナとソラ、どう思う？"),
        (SORA, "ソラとミナ、どっちがいい？"),
        (SORA, "ミナと話してたんだけど、ソラ、どう思う？"),
    ],
)
def test_calls_after_openers_and_in_lists(detector: AddressDetector, text: str) -> None:
    assert detector.detect(msg(text), bot_user_ids=set()).kind == "name", text


@pytest.mark.parametrize(
    ("detector", "text"),
    [
        # the same openers before a remark about the bot, and lists that are no call
        (DET, "by the way I asked Kuu yesterday"),
        (DET, "btw kuu said it was fine"),
        (DET, "also kuu is down again"),
        (DET, "anyway kuu doesn't answer"),
        (DET, "I asked Kuu, is that ok?"),
        (DET, "Did you ask Kuu, or should I?"),
        (DET, "we could ask Kuu too, is that ok with everyone?"),
        (SORA, "ソラにも聞いてみようかな、ミナは来る？"),
        (DET, "I think Bob and Kuu, as usual, agree"),
        (DET, "Thanks Bob, Kuu, and Carol!"),
        (SORA, "ちなみにソラが言ってたやつ"),
        (SORA, "それでソラに聞いたんだけど"),
        (SORA, "ところでソラの話だけど"),
        (SORA, "ソラとミナが来たよ、なんで？"),
        (SORA, "昨日ミナとソラ、二人で来た"),
        (SORA, "まあソラはいいや"),
    ],
)
def test_openers_before_a_reference_are_no_call(detector: AddressDetector, text: str) -> None:
    assert not detector.detect(msg(text), bot_user_ids=set()), text
