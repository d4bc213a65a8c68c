"""Which later lines do not answer an open question, however the tracker groups them.

In a busy channel the line after a question is as often the next turn of another exchange
as an answer, and the tracker, unsure, tends to put it in the question's conversation. A
member reading the room does not take "bob2: no, breezy", "try LXDE Gremuchnik :-)",
"ok sorry" or someone else's "anyone?" for an answer to the question asked just before;
the `answered` stage (through `ChannelView.answered_by`) passes over such lines and keeps
looking. Everything else still counts: a line that names the asker, or no one, or that
the platform reports as a reply to the question, is an answer, so the bot keeps erring
towards "answered" (it must not talk over people).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kuuki.conversation import cues
from kuuki.domain import Message

# A whole line of these is a backchannel, not an answer ("ok", "d'oh", "ok sorry", "?").
# "yes", "no", "sure" are left out: they answer a yes/no question.
_BACKCHANNEL = frozenset(
    {"ok", "okay", "k", "kk", "lol", "heh", "hehe", "hmm", "hm", "ah", "oh", "d'oh", "doh",
     "sorry", "thanks", "thx", "ty", "cool", "nice", "i", "try", "see", "hello", "hi", "hey",
     "うん", "へー", "なるほど", "了解", "りょ", "おけ", "w", "笑"}
)
_TOKEN = re.compile(r"[^\s]+")
_PUNCT = ".,!?;:()[]<>\"'`~^*-_=+|/\\…。、！？"


def reason_not_an_answer(
    msg: Message, recent: Sequence[Message], ids: set[str]
) -> Callable[[Message], str]:
    """For questions ``msg`` (its burst: ``ids``), a function that says, in words, why a
    later line of another person is not an answer to it, or "" when it may be one."""
    asker = {msg.user.id.casefold(), msg.user.name.casefold()}
    people = {_key(n) for m in recent for n in (m.user.id, m.user.name)} - {
        _key(n) for n in asker}
    author_of = {m.id: m.user for m in recent}

    def why(m: Message) -> str:
        if m.reply_to is not None and m.reply_to not in ids:
            to = author_of.get(m.reply_to)
            if to is not None and to.id != msg.user.id:
                return f"a reply to {to.name}"
        if m.mentions and not asker & {n.casefold() for n in m.mentions}:
            return f"said to {', '.join(m.mentions)}"
        named = _names_another(m.text, people)
        if named:
            return f"said to {named}"
        if cues.to_the_room(m.text) and cues.is_question(m.text):
            return "a question of its own to the room"
        words = [w.strip(_PUNCT).casefold() for w in _TOKEN.findall(m.text)]
        if all(not w or w in _BACKCHANNEL for w in words):
            return "a backchannel"
        return ""

    return why


def names_the_asker(msg: Message) -> Callable[[Message], bool]:
    """Does a later line call ``msg``'s author by name, anywhere in it ("sorry Tex-Twil
    nettop", "steve: wififofum" to Steve^, 「あとゴウさん、…」), or mention them? Then it is
    said to the asker: an answer, whatever conversation the tracker put it in."""
    keys = {_key(msg.user.id), _key(msg.user.name)} - {""}

    def names(m: Message) -> bool:
        called = [*m.mentions, *_TOKEN.findall(m.text), *cues.honorific_names(m.text)]
        return any(_key(n) in keys for n in called)

    return names


def _key(name: str) -> str:
    """A name as people type it back: case folded, IRC's trailing decorations dropped
    ("Steve^" is "steve", "ActionParsnip1" is "actionparsnip")."""
    return name.strip(_PUNCT).casefold().rstrip("_^`|0123456789")


def _names_another(text: str, people: set[str]) -> str:
    """The person a line is said to when it opens or ends with their name ("nick: …",
    "nichola could be…", "try LXDE Gremuchnik :-)"): a name only when somebody of the
    channel goes by it, so "no, …" or "yes, run …" stay answers."""
    lead = cues.leading_addressee(text)
    if lead is not None and _key(lead) in people:
        return lead
    words: list[str] = [w.strip(_PUNCT) for w in _TOKEN.findall(text)]
    words = [w for w in words if w]
    for w in (words[:1] + words[-1:]) if words else []:
        if _key(w) in people:
            return w
    return ""
