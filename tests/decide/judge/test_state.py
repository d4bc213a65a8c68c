"""The local conversation-state classifier (ja + en), and the response form it constrains."""

from __future__ import annotations

import pytest

from kuuki.decide.judge.state import ConvState, StateClassifier, StateResult, parse_state
from kuuki.decide.response_type import choose_form
from kuuki.decide.rules import LocalResult
from kuuki.domain import ActionKind
from kuuki.settings import Persona

from ..conftest import msg

CLF = StateClassifier()


@pytest.mark.parametrize(
    ("lines", "state"),
    [
        (["the deploy went fine", "great, thanks all, good night!"], ConvState.ENDING),
        (["発表資料できた", "ありがとう、じゃあ今日はこのへんで。おやすみ〜"], ConvState.ENDING),
        (
            ["you said the api is slow", "no, that's not what I meant at all"],
            ConvState.MISUNDERSTANDING,
        ),
        (["来週の場所は？", "いや、そういう意味じゃなくて日程の話"], ConvState.MISUNDERSTANDING),
        (
            ["this is ridiculous, you never listen", "stop blaming me, are you serious?!"],
            ConvState.CONFLICT,
        ),
        (["いい加減にしてよ", "ふざけないで、あなたのせいでしょ！！"], ConvState.CONFLICT),
        (["which profiler do you use?", "py-spy, it's great"], ConvState.ACTIVE),
        (["お昼どうする？", "ラーメンにしよう"], ConvState.ACTIVE),
    ],
)
def test_states(lines: list[str], state: ConvState) -> None:
    conv = [msg(f"m{i}", i * 10, "alice" if i % 2 else "bob", t) for i, t in enumerate(lines)]
    result = CLF.classify(conv)
    assert result.state is state, result
    assert 0 < result.confidence <= 1


def test_a_topic_change_or_old_goodbye_is_not_ending() -> None:
    conv = [
        msg("m1", 0, "alice", "bye bob!"),
        msg("m2", 10, "carol", "anyway, lunch?"),
        msg("m3", 20, "dave", "sure, where?"),
    ]
    assert CLF.classify(conv).state is ConvState.ACTIVE


def test_weak_evidence_is_reported_as_unsure() -> None:
    conv = [
        msg("m1", 0, "alice", "that's not the point"),
        msg("m2", 10, "bob", "hmm"),
        msg("m3", 20, "alice", "anyway"),
    ]
    result = CLF.classify(conv)
    assert result.state is ConvState.ACTIVE and result.confidence < 0.6


def test_parse_state() -> None:
    assert parse_state("ENDING") is ConvState.ENDING
    assert parse_state(" conflict, clearly") is ConvState.CONFLICT
    assert parse_state("dunno") is None and parse_state(3) is None


def test_forms_follow_the_seed_table() -> None:
    p = Persona()
    plain = LocalResult()
    assert choose_form(plain, 45, "nice", p, diversity=True).action is ActionKind.REACT
    assert choose_form(plain, 65, "nice", p, diversity=True).action is ActionKind.ACK
    assert choose_form(plain, 85, "nice", p, diversity=True).action is ActionKind.REPLY
    engaged = LocalResult(engaged=True)
    assert choose_form(engaged, 65, "nice", p, diversity=True).action is ActionKind.REPLY
    asked = LocalResult(question=True, open_question=True)
    assert choose_form(asked, 45, "how?", p, diversity=True).action is ActionKind.REPLY
    react = choose_form(plain, 45, "thanks!", p, diversity=True)
    assert react.emoji in p.emoji


def test_conflict_never_gets_an_emoji_or_ack() -> None:
    p = Persona()
    fight = LocalResult(state=StateResult(ConvState.CONFLICT, 0.9, "cues"))
    for score in (45, 65):
        assert choose_form(fight, score, "ugh", p, diversity=True).action is ActionKind.NONE
    assert choose_form(fight, 45, "ugh", p, diversity=True, suggested="react").action is (
        ActionKind.NONE
    )
    called = LocalResult(addressed="name", state=fight.state)
    assert choose_form(called, 45, "ugh", p, diversity=True, suggested="ack").action is (
        ActionKind.REPLY
    )
