"""The words the local stage's rules look for: good news shared with the room, a question
put to the room, talking to oneself, honorifics that address the room, and what counts as
a question worth answering. English and Japanese, matched on folded text where it says so.
"""

from __future__ import annotations

import re

from kuuki.conversation import cues
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
# A question put to the room says so ("anyone know…", "誰か…", polite forms that speak to
# others); without such a word, musing and self-questions are talking to oneself.
ROOM = Folded(re.compile(
    r"\b(any ?one|any ?body|some ?one|some ?body|any ideas?|you guys|y'?all|folks|guys"
    r"|can i ask|help me|thoughts)\b"
    r"|誰か|だれか|どなたか|知ってる人|知ってるひと|わかる人|分かる人|詳しい人|教えて|みなさん|皆さん|みんな"
    r"|ますか|ですか|でしょうか|ません[か？?]|ませんか",
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
