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


# What a question asks for when the asker needs it in order to help: a place, a choice, a
# time, an amount ("which area?", 「予算はどれくらいですか？」). Not "are you still growing?" nor
# "how was it?": small talk that a short answer closes.
ASKS_FOR = Folded(re.compile(
    r"\b(what|which|where|when|who|how (much|many|long|big|old|far|often|soon))\b"
    r"|どこ|どの|どちら|どっち|どれ|どんな|いつ(?![もか])|何(?!か|と|だか)|なに|なん[時人日曜円回個]"
    r"|いくら|いくつ|誰|だれ",
    re.IGNORECASE,
))
# Asking for help or a recommendation, with or without a question mark.
REQUEST = Folded(re.compile(
    r"\b(recommend|suggest|help|looking for|any (ideas?|tips?)|can you|could you|would you"
    r"|where can|how (do|can|should) i)\b"
    r"|おすすめ|オススメ|お勧め|教えて|探して|知りたい|手伝|助けて|ほしい|欲しい"
    r"|どうしたら|どうすれば",
    re.IGNORECASE,
))

# How a help question opens when the asker leaves the question mark out, as IRC's help
# channels do ("how to install the nvidia driver", "is there a dock for ubuntu"): read as a
# question only in the persona's area, where musing about one's own day is unlikely.
HELP_OPENER = Folded(re.compile(
    r"^\s*(how (to|do i|can i|should i|do you|can you)|is there|are there|does|do i|can i"
    r"|what is|what's|where (is|can|do)|any way to)\b",
    re.IGNORECASE,
))

# A question about the askers' own group: what they will do, who of them does it
# ("who's booking?", "shall we meet at 12?", 「誰が予約する？」, 「私たちは何時に集合？」).
GROUP_PLAN = Folded(re.compile(
    r"\b(we|us|our|let'?s|who'?s|who is|who will|who wants|who else)\b"
    r"|私たち|わたしたち|僕ら|ぼくら|俺ら|うちら|我々|みんなで|皆で|誰が|だれが|誰か[がにで]?(?:予約|行|やる|持|払)"
    r"|何人|集合|待ち合わせ",
    re.IGNORECASE,
))

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
