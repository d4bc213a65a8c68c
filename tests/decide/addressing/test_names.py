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
