"""Which later lines answer an open question (kuuki.decide.not_an_answer), and what the
bot does on the re-check of a question in its area when none did."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from kuuki.decide.not_an_answer import names_the_asker, reason_not_an_answer
from kuuki.domain import ActionKind, Message, User

from .test_wrong_cases import m, run

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def msg(i: str, user: str, text: str, **kw: object) -> Message:
    return Message(i, "general", User(user, user), text, T0 + timedelta(seconds=int(i[1:])),
                   **kw)  # type: ignore[arg-type]


QUESTION = msg("q1", "alice", "anyone know how to make docker compose rebuild one service?")
RECENT = [msg("q0", "erin", "alice: yes"), QUESTION, msg("q2", "dave", "erin: sure"),
          msg("q3", "Steve^", "hi")]


def why(line: Message) -> str:
    return reason_not_an_answer(QUESTION, [*RECENT, line], {QUESTION.id})(line)


def test_a_line_that_opens_or_ends_with_another_persons_name_is_said_to_them() -> None:
    assert why(msg("q5", "erin", "dave: can you look at my pull request")) == "said to dave"
    assert why(msg("q5", "erin", "try the nightly build Dave :-)")) == "said to Dave"
    assert why(msg("q5", "erin", "ダイさん、手が空いたら見てください")) == ""  # nobody goes by ダイ here
    assert why(msg("q5", "erin", "steve: it works")) == "said to steve"  # Steve^ types as steve


def test_answers_stay_answers() -> None:
    # a word that is nobody's name, the asker's own name, or no name at all
    assert why(msg("q5", "erin", "no, it rebuilds all of them")) == ""
    assert why(msg("q5", "erin", "alice: docker compose up -d --build web")) == ""
    assert why(msg("q5", "erin", "docker compose up -d --build web")) == ""
    assert why(msg("q5", "erin", "yes")) == ""


def test_backchannels_and_questions_of_their_own_are_not_answers() -> None:
    assert why(msg("q5", "erin", "ok")) == "a backchannel"
    assert why(msg("q5", "erin", "?")) == "a backchannel"
    assert why(msg("q5", "erin", "了解")) == "a backchannel"
    assert why(msg("q5", "bo", "anyone know why my wifi drops?")) == (
        "a question of its own to the room")


def test_platform_replies_and_mentions_to_someone_else() -> None:
    assert why(msg("q5", "erin", "sure", reply_to="q2")) == "a reply to dave"
    assert why(msg("q5", "erin", "sure", mentions=("dave",))) == "said to dave"
    assert why(msg("q5", "erin", "sure", reply_to="q1")) == ""
    assert why(msg("q5", "erin", "sure", mentions=("alice",))) == ""


def test_a_line_that_names_the_asker_anywhere_is_said_to_them() -> None:
    names = names_the_asker(msg("q1", "Tex-Twil", "anyone know a network monitor?"))
    assert names(msg("q5", "ann", "sorry Tex-Twil nettop"))
    assert names(msg("q5", "ann", "nettop", mentions=("Tex-Twil",)))
    assert not names(msg("q5", "ann", "internat1, nettop?"))
    ja = names_the_asker(msg("q1", "ゴウ", "誰か知ってますか？"))
    assert ja(msg("q5", "ダイ", "いいよ。あとゴウさん、ダイジェストで固定すれば大丈夫"))


CHATTER = [
    m("m1", 0, "alice", "erin: did the release go out?"),
    m("m2", 20, "erin", "alice: yes, an hour ago"),
    m("m4", 60, "erin", "dave: can you look at my pull request when you have a minute"),
    m("m5", 80, "dave", "erin: sure, after lunch"),
    m("m6", 100, "erin", "ok"),
]


async def test_a_question_in_its_area_left_for_minutes_is_taken_up(tmp_path: Path) -> None:
    question = m("m3", 40, "alice", "anyone know how to make docker compose rebuild one service?")
    decisions = await run([*CHATTER[:2], question, *CHATTER[2:]], tmp_path)
    last = [d for d in decisions if d.message_id == "m3"][-1]
    assert last.action.kind is ActionKind.REPLY
    assert last.trace.features["pass"] == "recheck"
    rules = {c.rule: c.points for c in last.trace.contributions}
    assert rules["unanswered, in its area"] == 10
    assert any("not an answer: erin's 'dave: can you" in s and "said to dave" in s
               for s in last.trace.steps)


async def test_the_same_question_outside_its_area_is_left_to_the_members(tmp_path: Path) -> None:
    question = m("m3", 40, "alice", "anyone know a good place for dinner near the office?")
    decisions = await run([*CHATTER[:2], question, *CHATTER[2:]], tmp_path)
    about = [d for d in decisions if d.message_id == "m3"]
    assert all(d.action.kind is ActionKind.NONE for d in about)
    assert about[-1].trace.features.get("answered_by") == "m4"


async def test_an_answer_that_names_the_asker_mid_line_is_an_answer(tmp_path: Path) -> None:
    question = m("m3", 40, "alice", "anyone know how to make docker compose rebuild one service?")
    answer = m("m5", 80, "dave", "sure, alice: up -d --build web does it")
    decisions = await run([*CHATTER[:2], question, CHATTER[2], answer], tmp_path)
    about = [d for d in decisions if d.message_id == "m3"]
    assert all(d.action.kind is ActionKind.NONE for d in about)
    assert about[-1].trace.features.get("answered_by") == "m5"
