"""A question re-sent in other words before the bot answered gets one answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.decide.stages.test_sent_twice import CAROL, _harness

from kuuki.decide.stages.rephrased import rephrased
from kuuki.domain import ActionKind
from kuuki.embed import default_embedder

SAME = [
    ("how can I fix the broken wifi driver?", "how can I repair the broken wifi driver?"),
    ("what's the quickest way to learn vim?", "what's the fastest way to learn vim?"),
    ("on ubuntu how do I add a user to sudoers?", "how do I add a user to sudoers on ubuntu?"),
    ("how do i instal nvidia drivers?", "how do i install nvidia drivers?"),
    ("whats the diffrence between apt and apt-get?", "what's the difference between apt and apt-get?"),
    ("新しいノートパソコンを買うならどれがいい？", "新しいノートPCを買うならどれがいい？"),
    ("パソコンが急に重くなったんだけど原因わかる？", "急にパソコンが重くなったんだけど原因わかる？"),
    ("来週の予定ってもう決まった？", "来週の予定はもう決まりましたか？"),
    ("引っ越しの手続きって何が必要？", "引越しの手続きって何が必要？"),
]
DIFFERENT = [
    ("what's the best editor for python?", "what's the best editor for rust?"),
    ("how do I install docker on ubuntu?", "how do I uninstall docker on ubuntu?"),
    ("how do I upgrade from 20.04 to 22.04?", "how do I upgrade from 22.04 to 24.04?"),
    ("how do I convert png to jpg?", "how do I convert jpg to png?"),
    ("is the library open today?", "is the library not open today?"),
    ("東京でおすすめのラーメン屋は？", "大阪でおすすめのラーメン屋は？"),
    ("駅から会場までどうやって行けばいい？", "会場から駅までどうやって行けばいい？"),
    ("この薬は食後に飲むんですか？", "この薬は食前に飲むんですか？"),
    ("来週の予定ってもう決まった？", "再来週の予定ってもう決まった？"),
    ("会議は何時から？", "会議は何時まで？"),
    ("東京でおすすめのラーメン屋は？", "東京でおすすめのラーメン屋はありません？"),
]


@pytest.mark.parametrize(("first", "again"), SAME)
def test_the_same_asked_in_other_words(first: str, again: str) -> None:
    assert rephrased(first, again, default_embedder().embed) is not None


@pytest.mark.parametrize(("first", "again"), DIFFERENT)
def test_a_different_question_is_not_folded(first: str, again: str) -> None:
    assert rephrased(first, again, default_embedder().embed) is None


def test_without_vectors_a_synonym_is_not_vouched_for() -> None:
    a, b = SAME[0]
    assert rephrased(a, b, None) is None
    assert rephrased(*SAME[2]) is not None  # an order or a typo needs no vectors


async def test_an_open_question_reworded_before_its_answer_is_answered_once(
    tmp_path: Path,
) -> None:
    h = await _harness(tmp_path)
    try:
        first = await h.say(CAROL, "does anyone know how to instal docker on a raspberry pi?")
        await h.clock.advance(4)
        again = await h.say(CAROL, "does anyone know how to install docker on a raspberry pi?")
        double = h.last()
        assert double.message_id == again and double.action.kind is ActionKind.NONE
        assert double.reason == f"sent twice in other words: {first}"
        stage = double.trace.stage("sent twice")
        assert stage is not None and stage.facts["rephrased"] == "a typo fixed"
        assert any("in other words, the same as" in s for s in double.trace.steps)
        await h.clock.advance(300)
        await h.app.engine.idle()
        assert sum(d.action.kind is ActionKind.REPLY for d in h.decisions) == 1
        assert [d.action.kind for d in h.decisions if d.message_id == again] == [ActionKind.NONE]
    finally:
        await h.app.close()


async def test_two_different_questions_in_a_row_are_each_judged(tmp_path: Path) -> None:
    h = await _harness(tmp_path)
    try:
        await h.say(CAROL, "which docker base image is best for python?")
        await h.clock.advance(4)
        await h.say(CAROL, "which docker base image is best for rust?")
        assert h.last().trace.stage("sent twice").outcome == "pass"  # type: ignore[union-attr]
    finally:
        await h.app.close()
