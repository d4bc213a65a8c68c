"""The words the local stage's policy looks for: good news shared with the room, what
counts as a question worth answering, and seed 003's self-questions (a question the persona
takes up must be put to others). English and Japanese, matched on folded text where it says
so. (Who a message is for is learned: kuuki.decide.models.addressee.)
"""

from __future__ import annotations

import re

from kuuki.conversation import cues
from kuuki.conversation.cues import ROOM
from kuuki.text.folded import Folded

# Good news shared with the room: what a friend answers with at least an emoji.
GOOD_NEWS = Folded(re.compile(
    r"\b(finally (got|fixed|made|works?|did)|it works|works now|i passed|passed (the|my)"
    r"|got the (job|offer)|got accepted|we shipped|just shipped|we launched|released|nailed it"
    r"|i did it|we did it|it'?s done|all done|done!|good news|great news)\b"
    r"|やった[ー！!〜]*|できた[ー！!〜]|できました[！!]|合格|受かった|完成した|リリースした|直った|動いた"
    r"|うまくいった|上手くいった|内定",
    re.IGNORECASE,
))
# Seed 003's "obvious monologue": self-questions and musing.
SELF_TALK = re.compile(
    r"なんでだ(?!ろう)|なんでや|せいか|かな[ぁあー〜…]*$|だろうな|っけ"
    r"|\bi wonder\b|\bhm+\b|\bduh\b|\bugh\b|^(ok|okay|wait|oh)\b[ ,.]",
    re.IGNORECASE,
)


# Honorific "names" that address the room, not a person (みなさん, 皆様…).
GROUP_WORDS = frozenset(
    {"みな", "皆", "みんな", "皆んな", "お客", "おつかれ", "お疲れ", "お父", "お母", "神", "先生"}
)


def asks(text: str) -> bool:
    """A question worth answering: `cues.is_question`, minus exclamations ("what a match!")
    and two- or three-word English openers without a question mark."""
    t = text.strip()
    if not cues.is_question(t):
        return False
    if "?" in t or "？" in t:
        return True
    if t.endswith(("!", "！")):
        return False
    return not (t.isascii() and len(t.split()) < 4)


def musing(text: str) -> bool:
    """A question to oneself: no question mark ("今日も残業かな", "ok why is this matching"),
    or a self-question ("…せいか？", "I wonder"); never when it puts something to the room."""
    if ROOM.found_in(text):
        return False
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not any("?" in x or "？" in x for x in lines):
        return True
    return any(SELF_TALK.search(line) for line in lines)
