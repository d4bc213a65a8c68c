"""Whether the bot's own last question asked for what it needed in order to help
(kuuki.decide.addressing.context.clarifying), read from the buffer as the stage reads it."""

from __future__ import annotations

from kuuki.decide.addressing.context import answers_the_bot, clarifying
from kuuki.decide.types import Case, Pass

from ..conftest import ASKED_TO_HELP, Room, msg, trace


def case(lines: list[tuple[str, str]], answer: str) -> Case:
    """The lines (author, text) 30 s apart, then `answer` by the first line's author."""
    room = Room()
    for i, (who, text) in enumerate(lines):
        room.add(msg(f"x{i}", i * 30, who, text))
    author = lines[0][0]
    m = msg("m1", len(lines) * 30, author, answer)
    return Case(room.situation(m), Pass.FIRST, trace(m))


def test_a_question_the_bot_asked_to_help_with_a_request() -> None:
    for request, question, answer in (
        *ASKED_TO_HELP,
        ("新しいキーボードを探してるんだけど",  # a request without a question mark
         "いつまでに欲しいですか？", "来週中"),
        ("how do I get the vpn working on my laptop?", "which OS is it on?", "ubuntu 24.04"),
    ):
        c = case([("sato", request), ("Kuu", question)], answer)
        assert answers_the_bot(c)
        said = clarifying(c)
        assert said.startswith("it asked «") and "sato's request" in said, request


def test_small_talk_and_the_bot_s_own_opener_are_not_clarifying() -> None:
    for lines in (
        # a remark, and the bot asks on (yes or no): small talk a short answer closes
        [("sato", "最近また服のサイズが合わなくなってきた"), ("Kuu", "まだまだ成長期なのでしょうか？")],
        # a remark, and the bot asks what: still small talk, nobody asked it for help
        [("sato", "had a long weekend"), ("Kuu", "what did you get up to?")],
        # the bot's own opener
        [("sato", "morning"), ("Kuu", "which houseplants are you growing this winter?")],
        # asked for help, but the bot asked a yes/no question, not for what it needs
        [("sato", "any cafe you'd recommend?"), ("Kuu", "are you going with friends?")],
        # いつも ("always") is no question word
        [("sato", "おすすめのカフェある？"), ("Kuu", "いつもの店でいいんですか？")],
    ):
        c = case(lines, "yes")
        assert answers_the_bot(c) and clarifying(c) == "", lines


def test_the_request_is_the_answerer_s_own() -> None:
    """Someone else's request: the bot asked them, not this person."""
    room = Room()
    room.add(msg("x0", 0, "ann", "Kuu, any cafe you'd recommend near the office?"))
    room.add(msg("x1", 30, "Kuu", "which area are you looking in?"))
    m = msg("m1", 60, "bob", "lol")
    assert clarifying(Case(room.situation(m), Pass.FIRST, trace(m))) == ""
