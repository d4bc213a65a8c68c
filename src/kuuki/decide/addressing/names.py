"""Is a message addressed to the bot? Mention, reply to one of its messages, a name call,
a direct message, or a message in a thread under one of its own posts.

A name call is the name used as a vocative ("Kuu, what do you think?", "くうさん、これ見て",
"thanks Kuu!", "hey Kuu") or a question put to the bot by name ("くうも来る？"), not the
name used in reference ("I asked Kuu yesterday", "くうが言ってた"). Kana, kanji and latin
variants and the usual honorifics count.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import timedelta

from kuuki.decide.situation import Addressing
from kuuki.domain import Message

HONORIFICS_JA = ("さん", "ちゃん", "くん", "君", "様", "さま", "氏", "たん", "っち")
HONORIFICS_LATIN = ("san", "chan", "kun", "sama")
_GREETINGS = (
    "hey",
    "hi",
    "hello",
    "yo",
    "ok",
    "okay",
    "oh",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "good morning",
    "morning",
    "night",
    "good night",
    "sorry",
    "please",
    "dear",
    "so",
    "well",
    "ねえ",
    "ねぇ",
    "おい",
    "あの",
    "ありがとう",
    "おはよう",
    "こんにちは",
    "こんばんは",
    "やあ",
    "よう",
    "ども",
    # Japanese thanks, greetings and farewells, often glued to the name with no space
    # (「ありがとうそら！」, 「ありがとね くう」, 「おつかれさまです、くうさん」).
    "ありがと",
    "ありがとね",
    "ありがとうね",
    "ありがとうございます",
    "おつかれ",
    "おつかれさま",
    "おつかれさまです",
    "お疲れ",
    "お疲れさま",
    "お疲れ様",
    "お疲れさまです",
    "お疲れ様です",
    "よろしく",
    "よろしくね",
    "さすが",
    "ごめん",
    "ごめんね",
    "おやすみ",
    "またね",
)
_VOCATIVE_AFTER = r"(?:\s*[,、，:：!！?？。.…~〜ー]|\s*$|\s+(?=[^\W\d_]))"
# Openers and discourse markers a member puts before a call ("by the way Kuu, …",
# 「ちなみにソラ、…」, "ok so Kuu, …"), one to three of them. Unlike a greeting they also
# open a remark about someone ("btw kuu said it was fine", 「ちなみにソラが言ってた」), so
# after them the name is a call only when punctuation, the end, a question or request to
# it ("btw Kuu what do you think") or a topic question (「でソラはどう思う？」) follows.
_OPENERS_EN = (
    "by the way", "btw", "anyway", "anyways", "also", "and", "and also", "but", "so",
    "ok so", "okay so", "oh", "oh and", "ah", "actually", "alright", "all right", "right",
    "um", "umm", "uh", "hmm", "hm", "well", "now", "then", "ok", "okay", "plus", "wait",
    "besides", "incidentally", "quick question", "one more thing", "excuse me", "listen",
    "look", "say", "hey", "hi", "hello", "yo", "thanks", "sorry", "please",
)
_OPENERS_JA = (
    "ちなみに", "ちなみにさ", "それで", "それでさ", "で", "ところで", "ところでさ",
    "そういえば", "そういや", "あと", "あとさ", "じゃあ", "じゃ", "では", "でも", "えっと",
    "えーと", "えーっと", "あのさ", "あのね", "あの", "ねえねえ", "ねぇねぇ", "ねえ", "ねぇ",
    "それと", "さて", "てか", "ていうか", "っていうか", "というか", "そうそう", "あ", "あっ",
    "ほら", "よし", "さあ", "まあ", "おい",
)
# what opens a question or request put to someone after "…Kuu, "
_ASKS = (
    "what", "who", "whom", "whose", "where", "when", "why", "how", "which", "is", "are",
    "was", "were", "do", "does", "did", "can", "could", "would", "will", "should", "shall",
    "may", "might", "have", "has", "any", "please", "tell", "help",
)
_CALL_AFTER_OPENER = (
    r"(?:\s*[,、，:：!！?？。.…~〜ー]|\s*$"
    r"|\s+(?:what|who|where|when|why|how|which|please|tell|help|remind|any"
    r"|(?:are|can|could|did|do|have|should|will|would)\s+you)(?![a-z'])"
    r"|(?:も|は|って|ってさ)[^。\n]{0,40}[?？]\s*$)"
)
# a list of people the bot is one of: "Bob, Kuu, what do you think?", "Bob and Kuu,
# lunch?", 「ミナとソラ、どう思う？」, 「ソラとミナ、どっち？」: short items (a word; in
# Japanese at most 8 letters and no particle), then a comma or colon, in a question
# words before a name that make it a reference, not a call ("I asked Kuu, is that ok?")
_REPORTING = "asked|ask|told|tell|with|to|for|from|about|of|like|than|and|or|by|at"
_ITEM = r"(?:[a-z0-9_'-]{1,20}|[^\x00-\x7fがをにではもよねたのへ、，。！？]{1,8})"
_LIST_SEP = r"(?:\s*[,、，&]\s*|\s+and\s+|\s*[とや]\s*)"
_KATA_START, _KATA_END = 0x30A1, 0x30F6


# katakana ァ..ヶ to the hiragana 0x60 below them, as one table for str.translate
_TO_HIRAGANA = {c: c - 0x60 for c in range(_KATA_START, _KATA_END + 1)}


def to_hiragana(text: str) -> str:
    return text.translate(_TO_HIRAGANA)


def to_katakana(text: str) -> str:
    return "".join(chr(ord(ch) + 0x60) if 0x3041 <= ord(ch) <= 0x3096 else ch for ch in text)


def normalise(text: str) -> str:
    """NFKC (full-width latin → ASCII, half-width kana → full-width), lower-cased."""
    return unicodedata.normalize("NFKC", text).lower()


def name_variants(names: Iterable[str]) -> list[str]:
    """Every spelling a name call may use: kana swapped, with and without honorifics."""
    base: set[str] = set()
    for name in names:
        n = normalise(name).strip()
        if not n:
            continue
        base |= {n, to_hiragana(n), to_katakana(n)}
    out: set[str] = set(base)
    for n in base:
        for h in HONORIFICS_JA:
            out.add(n + h)
        if n.isascii():
            for h in HONORIFICS_LATIN:
                out |= {f"{n}-{h}", f"{n} {h}", f"{n}{h}"}
    # Longest first, so "kuu-san" wins over "kuu".
    return sorted(out, key=len, reverse=True)


# The bot is where a thread message goes unless it answers a person: a thread reply this
# soon after another person's message in the thread is read as talk between the two.
THREAD_EXCHANGE = timedelta(minutes=2)



class AddressDetector:
    """Detects the three ways of addressing the bot, for one persona."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = [normalise(n) for n in names if n.strip()]
        self._lowered = frozenset(normalise(n) for n in self.names)
        self._hira_names = [to_hiragana(n) for n in self.names]
        self._named: dict[str, bool] = {}
        variants = name_variants(names)
        alt = "|".join(re.escape(v) for v in variants) or r"(?!x)x"
        greet = "|".join(re.escape(g) for g in _GREETINGS)
        # A latin name must not be glued to other latin letters ("kuuki" is not "kuu").
        name = rf"(?<![a-z0-9])(?:@)?(?P<name>{alt})(?![a-z0-9])"
        self._start = re.compile(rf"^\s*(?:(?:{greet})[\s,、!！]*)?{name}{_VOCATIVE_AFTER}")
        # The end: "…, kuu", "thanks kuu", and a greeting after a clause of its own
        # ("なるほど、ありがとうそら！"): the greeting opens the text, follows a space or
        # punctuation, and the name may be glued to it.
        self._end = re.compile(
            rf"(?:[,、，]|(?:^|[\s,、，。.!！?？…])(?:{greet}))\s*{name}"
            rf"\s*[!！?？。.…~〜w笑]*\s*$"
        )
        self._at = re.compile(rf"@{name}")
        # "くうも来る？", "くうは何が好き？": a question that opens with the bot's name and a
        # topic particle asks the bot itself ("くうが言ってた" does not: no question).
        self._topic_question = re.compile(
            rf"^\s*{name}(?:も|は|って|ってさ)[^。\n]{{0,40}}[?？]\s*$"
        )
        self._mid_vocative = re.compile(rf"(?:^|[。.!！?？\n]\s*){name}\s*[,、，]")
        self._calls = (self._at, self._start, self._end, self._mid_vocative,
                       self._topic_question, *_member_calls(name))

    def detect(
        self,
        msg: Message,
        *,
        bot_user_ids: Iterable[str],
        bot_message_ids: Iterable[str] = (),
        dm: bool = False,
        recent: Sequence[Message] = (),
    ) -> Addressing:
        """How ``msg`` addresses the bot. ``dm``: the channel is a direct message with the
        bot (a person's message there is always to the bot); ``recent``: the channel's
        buffer, read to tell a thread reply to another person from one to the bot."""
        # Asked for every message: the id sets are built only when a check reads them.
        ids: set[str] | None = None
        own: set[str] | None = None
        if msg.mentions:
            ids = set(bot_user_ids)
            for m in msg.mentions:
                if m in ids or normalise(m) in self._lowered:
                    return Addressing("mention", m)
        if msg.reply_to is not None:
            own = set(bot_message_ids)
            if msg.reply_to in own:
                return Addressing("reply", msg.reply_to)
        if self.mentions_name(msg.text):  # (every call has the name in it)
            text = normalise(msg.text)
            for pattern in self._calls:
                hit = pattern.search(text)
                if hit:
                    return Addressing("name", hit.group("name"))
        if msg.user.is_bot:
            return Addressing("")
        if dm:
            return Addressing("dm", msg.channel_id)
        if msg.thread is not None:
            own = own if own is not None else set(bot_message_ids)
            ids = ids if ids is not None else set(bot_user_ids)
            if msg.thread in own and not self._to_person(msg, recent, ids):
                return Addressing("thread", msg.thread)
        return Addressing("")

    def _to_person(self, msg: Message, recent: Sequence[Message], bot_ids: set[str]) -> bool:
        """In the bot's thread, is this message said to another person?"""
        by_id = {m.id: m for m in recent}
        target = by_id.get(msg.reply_to) if msg.reply_to else None
        if target is not None and target.user.id != msg.user.id and target.user.id not in bot_ids:
            return True
        if any(normalise(x) not in self._lowered for x in msg.mentions):
            return True
        people = [
            m
            for m in recent
            if m.thread == msg.thread
            and m.id != msg.id
            and m.ts <= msg.ts
            and not m.user.is_bot
            and m.user.id not in bot_ids
        ]
        if not people:
            return False
        last = people[-1]
        return last.user.id != msg.user.id and msg.ts - last.ts <= THREAD_EXCHANGE

    def mentions_name(self, text: str) -> bool:
        """The name appears at all, called or not ("could Kuu stay out for an hour?").
        Asked twice of every message (the quiet request, the models' reading): kept."""
        hit = self._named.get(text)
        if hit is None:
            t = to_hiragana(normalise(text))
            hit = any(n in t for n in self._hira_names)
            if len(self._named) > 4096:
                self._named.clear()
            self._named[text] = hit
        return hit


def _member_calls(name: str) -> tuple[re.Pattern[str], ...]:
    """The calls a member hears beyond a name at the start or the end: after openers
    ("by the way Kuu, …", 「ちなみにソラ、…」), in brackets as IRC writes a nick, in a list
    of people ("Bob, Kuu, what do you think?", 「ミナとソラ、どう思う？」), between commas
    in a question, after a clause before a question to it ("bob and I were wondering
    Kuu, is it open on Sundays?"), and after proposing to ask it ("let's ask Kuu, what do
    you think?"). ``name`` is the pattern of the bot's names."""
    en = "|".join(re.escape(o) for o in sorted(_OPENERS_EN, key=len, reverse=True))
    ja = "|".join(re.escape(o) for o in sorted(_OPENERS_JA, key=len, reverse=True))
    openers = rf"(?:(?:(?:{en})(?![a-z])|{ja})[\s,、，!！.…]*)"
    item, sep = _ITEM, _LIST_SEP
    in_list = r"\s*[,、，:：][^\n]*[?？]\s*$"
    question = r"[^\n]*[?？]\s*$"
    return (
        re.compile(rf"^\s*{openers}{{1,3}}{name}{_CALL_AFTER_OPENER}"),
        re.compile(rf"^\s*<\s*{name}\s*>"),
        re.compile(
            rf"^\s*{openers}{{0,3}}(?:{item}{sep}){{1,4}}{name}(?:{sep}{item}){{0,4}}{in_list}"
        ),
        re.compile(rf"^\s*{openers}{{0,3}}{name}(?:{sep}{item}){{1,4}}{in_list}"),
        re.compile(rf"[,、，]\s*{name}\s*[,、，]{question}"),
        re.compile(rf"(?<![a-z'])(?!(?:{_REPORTING})\s)[a-z']+\s+{name}\s*,\s*"
                   rf"(?:{'|'.join(_ASKS)})(?![a-z']){question}"),
        # proposing to ask it, then asking it: "we could ask Kuu too, what do you think?",
        # 「ソラにも聞いてみよう、どう思う？」 (the question right after is put to it)
        re.compile(rf"(?<![a-z'])ask\s+{name}(?:\s+(?:too|also|as well|then|now))?\s*[,:：]"
                   rf"[^\n]*\byou(?:r)?\b{question}"),
        re.compile(rf"{name}に(?:も)?(?:聞|き)(?:いてみ)?(?:よう|こう)[、，,!！]{question}"),
    )
