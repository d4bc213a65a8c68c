"""Cheap lexical cues about a chat message, for English and Japanese.

These are shared by the disentangler (as model features) and by the judge (to decide
whether a message asks something or calls someone). Everything here is pure string
work: no model, no I/O, safe to call on every message.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Sequence

from kuuki.text.folded import Folded

HONORIFICS = ("さん", "ちゃん", "くん", "君", "様", "さま", "氏", "先輩", "せんぱい")

# Words that only make a question when they open the sentence ("is it …", "can you …").
_EN_OPENERS = frozenset(
    [
        "does",
        "do",
        "did",
        "is",
        "are",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "has",
        "have",
        "was",
        "were",
    ]
)
_EN_ANYWHERE = frozenset(
    [
        "what",
        "how",
        "why",
        "where",
        "who",
        "which",
        "anyone",
        "anybody",
        "whats",
        "hows",
    ]
)
_JA_QWORDS = (
    "何",
    "なに",
    "なん",
    "どう",
    "なぜ",
    "なんで",
    "いつ",
    "どこ",
    "誰",
    "だれ",
    "どれ",
    "どの",
    "どちら",
    "どっち",
    "いくら",
    "いくつ",
)
_JA_QENDINGS = (
    "か",
    "か。",
    "かな",
    "かな？",
    "かね",
    "かしら",
    "ですか",
    "ますか",
    "でしょうか",
    "の？",
    "だっけ",
    "っけ",
    "の?",
    "ない？",
    "ない?",
    "る？",
)
_THANKS_RE = re.compile(
    r"\b(thanks?|thank\s*you|thx|tnx|ty|tyvm|cheers|appreciated?|merci|danke|gracias)\b"
    r"|ありがと|有難う|有り難う|サンキュ|感謝|助かり|助かっ|たすかる|どうも",
    re.IGNORECASE,
)
_THANKS = Folded(_THANKS_RE)
_GREETING_RE = re.compile(
    r"^\s*(hi|hello|hey|hiya|yo|morning|good\s+(morning|evening|afternoon)|greetings)\b"
    r"|^\s*(こんにちは|こんばんは|おはよう|はじめまして|初めまして|やあ|おつかれ|お疲れ)",
    re.IGNORECASE,
)
_URL_RE = re.compile(r"https?://|www\.", re.IGNORECASE)
_WORD_RE = re.compile(r"[a-z0-9']+")
# IRC nicks may contain these; used to find words that could be nicks.
_NICK_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-\[\]\\^{}|`]+")
_LEADING_RE = re.compile(r"^\s*@?([^\s:,，、：]{1,32})\s*[:,，、：>]")
_AT_RE = re.compile(r"@([^\s:,，、：。！？!?]{1,32})")
# A run of name-like characters (latin, digits, katakana, kanji, hiragana) before an honorific.
_HONORIFIC_RE = re.compile(
    r"([A-Za-z0-9_\u30A0-\u30FF\u4E00-\u9FFF\u3040-\u309F\uFF21-\uFF5A]{1,16}?)"
    r"(" + "|".join(HONORIFICS) + r")(?=$|[\s、，,。！？!?：:…ー〜~]|は|も|に|の|って|が|と|へ|、)"
)
_HIRAGANA_PARTICLES = re.compile(r"^.*(?:は|が|を|に|で|と|も|の|へ|や|ね|よ|さ|、)")


# A question put to the room says so ("anyone know…", "誰か…", polite forms that speak to
# others); without such a word, musing and self-questions are talking to oneself.
ROOM = Folded(re.compile(
    r"\b(any ?one|any ?body|some ?one|some ?body|any ideas?|you guys|y'?all|folks|guys"
    r"|can i ask|help me|thoughts)\b"
    r"|誰か|だれか|どなたか|知ってる人|知ってるひと|わかる人|分かる人|詳しい人|教えて|みなさん|皆さん|みんな"
    r"|ますか|ですか|でしょうか|ません[か？?]|ませんか",
    re.IGNORECASE,
))


_JA_QENDINGS_WHOLE = tuple(e for e in _JA_QENDINGS if e.endswith(("。", "？", "?")))
# a bare か is decided below (it has exceptions)
_JA_QENDINGS_STRIPPED = tuple(
    e for e in _JA_QENDINGS if not e.endswith(("。", "？", "?")) and e != "か"
)


def to_the_room(text: str) -> bool:
    return ROOM.found_in(text)


def is_question(text: str) -> bool:
    """True when the message asks something (en or ja): `?`/`？`, `…か。`, question words."""
    t = text.strip()
    if not t:
        return False
    if "?" in t or "？" in t:
        return True
    if not t.isascii():  # (no Japanese cue fits ASCII text)
        verdict = _asks_in_japanese(t)
        if verdict is not None:
            return verdict
    words = _WORD_RE.findall(t.lower())
    if not words:
        return False
    if words[0] in _EN_OPENERS and len(words) > 2:
        return True
    return words[0] in _EN_ANYWHERE or (
        len(words) > 1
        and words[1] in _EN_ANYWHERE
        and words[0] in {"so", "and", "but", "ok", "hey"}
    )


def _asks_in_japanese(t: str) -> bool | None:
    """is_question's Japanese cues: True or False when one decides, else None."""
    stripped = t.rstrip("。.！!…〜~ 　")
    # an ending with its punctuation must end the text; the others end it once stripped
    if t.endswith(_JA_QENDINGS_WHOLE) or stripped.endswith(_JA_QENDINGS_STRIPPED):
        return True
    # A bare trailing か is a question particle unless the word is one like "しか"/"ばか".
    if stripped.endswith("か") and not stripped.endswith(("しか", "ばか", "なか", "まさか")):
        return len(stripped) > 2
    if stripped.endswith(("の", "？", "?", "っけ", "か")):
        for q in _JA_QWORDS:  # a loop, not any(genexpr): this runs for every message
            if q in t:
                return True
    return None


def is_thanks(text: str) -> bool:
    """True for thanks in en or ja (thanks, thx, ty, ありがとう, 助かりました…)."""
    return _THANKS.found_in(text)


def is_greeting(text: str) -> bool:
    return _GREETING_RE.search(text) is not None


def has_url(text: str) -> bool:
    return _URL_RE.search(text) is not None


def nick_tokens(text: str) -> set[str]:
    """Lower-cased word-like tokens that could be IRC nicks or chat names."""
    return {t.lower() for t in _NICK_TOKEN_RE.findall(text)}


NO_WORDS: frozenset[str] = frozenset()  # shared by every text without a content word


def content_words(text: str) -> frozenset[str]:
    """Lower-cased words of 4+ letters: a crude bag for lexical overlap.

    The words are interned: a channel's history keeps these sets for up to 512 messages,
    and a chat says the same words again and again; one string per distinct word instead
    of one per occurrence (an interned string is still freed once no set holds it)."""
    words = [sys.intern(w) for w in _WORD_RE.findall(text.lower()) if len(w) > 3]
    return frozenset(words) if words else NO_WORDS


def leading_addressee(text: str) -> str | None:
    """The name a message opens with, IRC style: ``nick: …``, ``nick, …``, ``@nick …``.

    Returns the raw name (case kept, honorific removed) or None.
    """
    m = _LEADING_RE.match(text)
    if m is not None:
        return strip_honorific(m.group(1))
    t = text.lstrip()
    if t.startswith("@"):
        m2 = _AT_RE.match(t)
        if m2 is not None:
            return strip_honorific(m2.group(1))
    return None


def strip_honorific(name: str) -> str:
    for h in HONORIFICS:
        if name.endswith(h) and len(name) > len(h):
            return name[: -len(h)]
    return name


def honorific_names(text: str) -> list[str]:
    """Names called with a Japanese honorific anywhere in the text (``田中さん``, ``くうちゃん``).

    Without a list of known names the name boundary is a guess: the name is the run of
    characters of one script (kanji, katakana, latin, or hiragana) just before the
    honorific, and a hiragana run is cut after its last particle (``それでたなかさん``
    gives ``たなか``).
    """
    out: list[str] = []
    if text.isascii():  # every honorific is Japanese
        return out
    for m in _HONORIFIC_RE.finditer(text):
        run = m.group(1)
        kind = _script(run[-1])
        start = len(run)
        while start > 0 and _script(run[start - 1]) == kind:
            start -= 1
        name = run[start:]
        if kind == "hiragana" and len(name) > 1:
            name = _HIRAGANA_PARTICLES.sub("", name) or name
        if name and name not in out:
            out.append(name)
    return out


def _script(ch: str) -> str:
    o = ord(ch)
    if 0x3040 <= o <= 0x309F:
        return "hiragana"
    if 0x30A0 <= o <= 0x30FF:
        return "katakana"
    if 0x4E00 <= o <= 0x9FFF:
        return "kanji"
    return "latin"


def at_mentions(text: str) -> list[str]:
    if "@" not in text:
        return []
    return [strip_honorific(m.group(1)) for m in _AT_RE.finditer(text)]


def addressees(text: str) -> list[str]:
    """Every name the message calls: leading name, ``@name`` and ``name+honorific``."""
    found: list[str] = []
    lead = leading_addressee(text)
    if lead is not None:
        found.append(lead)
    for name in (*at_mentions(text), *honorific_names(text)):
        if name not in found:
            found.append(name)
    return found


def called_in_question(text: str) -> list[str]:
    """The names a question calls. "weird, `git push` asks for my password… anyone seen
    that?" opens like "nick, …", but a question that asks "anyone" is put to the room:
    then only ``@name`` and ``name+honorific`` call someone."""
    if to_the_room(text):
        return [*at_mentions(text), *honorific_names(text)]
    return addressees(text)


@functools.lru_cache(maxsize=64)
def _folded(names: tuple[str, ...]) -> list[str]:
    # a bot's names are the same few for every message; fold them once
    return [n.casefold() for n in names if n]


def calls_name(text: str, names: Iterable[str]) -> bool:
    """Does the message address one of ``names`` (a bot's aliases, say)?

    Counts a name at the very start (``Kuu, …``, ``くうさん、…``), after ``@``, or anywhere
    with a honorific; a bare name mid-sentence ("I told kuu") is talk *about*, not *to*.
    """
    folded = _folded(tuple(names))
    if not folded:
        return False
    t = text.strip().casefold()
    for name in folded:
        if t.startswith(name):
            rest = t[len(name) :]
            for h in HONORIFICS:
                if rest.startswith(h):
                    rest = rest[len(h) :]
                    break
            if not rest or rest[0] in " \t:,，、：!！?？。.~〜ー":
                return True
        if "@" + name in t:
            return True
        for h in HONORIFICS:  # a loop, not any(genexpr): this runs for every message
            if name + h in t:
                return True
    return False


def match_names(called: Sequence[str], known: Iterable[str]) -> list[str]:
    """Resolve called names to known ones: exact (case-folded), else a unique prefix of 3+."""
    known_list = list(known)
    folded = {k.casefold(): k for k in known_list}
    out: list[str] = []
    for c in called:
        cf = c.casefold()
        hit = folded.get(cf)
        if hit is None and len(cf) >= 3:
            cands = [k for f, k in folded.items() if f.startswith(cf)]
            hit = cands[0] if len(cands) == 1 else None
        if hit is not None and hit not in out:
            out.append(hit)
    return out
