"""Topic keywords without an LLM: nouns for Japanese, content words for English.

Japanese goes through janome, a pure-Python morphological analyser whose wheel carries its
own IPADIC dictionary: nothing to compile and nothing fetched at run time, at about 2 ms a
chat message — fine for background profile updates and one lookup after the decision to
speak. English (and any text without kana or kanji) uses a word regex and a stop list.
`keywords` serves facts and retrieval, so keywords always compare alike.

`topics` is what a person is shown as someone's or a channel's topics: nouns only. Janome's
Japanese keywords are nouns already; an English word is kept when lemminflect's dictionary
(the lemmatiser spaCy users add; its tables ship in its wheel, read compactly by
kuuki.memory.nouns) gives it a noun reading, or
when the dictionary does not know it (a name, a product, "kubernetes") and it is no
function word — so "telling", "probably", "please" and "beside" are not topics.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from kuuki.guard.japanese import tokenize
from kuuki.memory.nouns import nouns

_JA_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
_KANJI = re.compile(r"[\u3400-\u9fff]")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#._-]*[A-Za-z0-9+#]|[A-Za-z]{2,}")
_MENTION = re.compile(r"<[@#!&][^>]*>|https?://\S+|:[a-z0-9_+-]+:")

# Noun sub-types that carry no topic ("こと", "これ", "3", "さん", "時間" as a counter…).
_JA_SKIP_POS = ("非自立", "代名詞", "数", "接尾", "副詞可能", "特殊", "接続詞的", "動詞非自立的")
_JA_STOP_WORDS = (
    "こと もの ところ とき 感じ 気 人 方 前 後 今 今日 昨日 明日 みんな 自分 本当 ほんと "
    "それ これ あれ どれ 何 なに ため よう そう 笑 www"
)
_EN_STOP_WORDS = """a about above after again against all also am an and any are aren't as at
    be because been before being below between both but by can can't cannot could did didn't do does
    doesn't doing don't down during each few for from further get gets got had hadn't has
    hasn't have haven't having he her here hers herself him himself his how i if in into is
    isn't it it's its itself just let's like lol me more most much my myself no nor not now of
    off ok okay on once only or other ought our ours ourselves out over own really same she
    should so some such than that that's the their theirs them themselves then there these
    they this those through to too under until up very was wasn't we were what when where
    which while who whom why will with won't would yeah yes yet you your yours yourself
    yourselves thanks thank think know want going gonna one two still maybe thing things
    something anyone everyone someone today tomorrow yesterday good great nice sure hey hi
    hello well right time way lot pretty kinda"""
# Function words and chat filler that no dictionary of open-class words lists: never topics.
_EN_FUNCTION_WORDS = """aboard across along alongside amid amidst among amongst anyway around
    astride atop beneath beside besides beyond despite except inside into near nearby
    onto opposite outside past per plus round since than thru toward towards unlike upon
    versus via within without whether whereas wherever whenever whatever whoever however
    although though unless anyhow somehow else ever never always often sometimes
    already almost quite rather perhaps probably maybe please plz pls thx ty yeah yep yup
    nope nah lol lmao haha hah heh hmm hm huh oh ah aw wow omg btw imo imho tbh idk irl
    gonna wanna gotta kinda sorta dunno ya yall y'all u ur
    look check need try guess bet mind bit kind sort stuff
    say make take go get give come see let put keep find seem feel leave call ask show mean
    turn move set hold bring happen sit stand lose pay include continue allow add spend
    offer remember consider appear wait send expect stay fall reach remain suggest raise
    pass require decide pull love
    long short new old big small little high low late early next last first second fine cool
    best better worse real true whole full hard easy quick slow awesome amazing"""
_JA_STOP = frozenset(_JA_STOP_WORDS.split())
EN_STOP = frozenset(_EN_STOP_WORDS.split())
_EN_NOT_TOPIC = EN_STOP | frozenset(_EN_FUNCTION_WORDS.split())

def is_japanese(text: str) -> bool:
    return _JA_CHARS.search(text) is not None


def normalise(word: str) -> str:
    """The comparable form of a keyword: NFKC, lower case, no surrounding punctuation."""
    return unicodedata.normalize("NFKC", word).strip(" .,!?;:'\"()[]{}").lower()


def _ja_keywords(text: str) -> list[str]:
    out: list[str] = []
    for token in tokenize(text):
        pos = token.part_of_speech.split(",")
        if pos[0] != "名詞" or pos[1] in _JA_SKIP_POS:
            continue
        surface = normalise(token.surface)
        if surface in _JA_STOP or surface in EN_STOP:
            continue
        # One kana is noise; one kanji is often a whole topic (猫, 酒, 山).
        if len(surface) < 2 and not _KANJI.fullmatch(surface):
            continue
        out.append(surface)
    return out


def _en_keywords(text: str) -> list[str]:
    out: list[str] = []
    for match in _EN_WORD.finditer(text):
        word = normalise(match.group(0))
        if len(word) < 3 or word in EN_STOP or word.isdigit():
            continue
        # Crude plural folding so "cats" meets "cat"; tech words like "k8s" survive.
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def keywords(text: str, limit: int = 12) -> list[str]:
    """Topic keywords of one text, most frequent first, ties in order of appearance."""
    text = _MENTION.sub(" ", text)
    words = _ja_keywords(text) if is_japanese(text) else _en_keywords(text)
    counts = Counter(words)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return ranked[:limit]


def keywords_of(texts: Iterable[str], limit: int = 12) -> list[str]:
    """Keywords of several texts together (a user's recent messages, a batch)."""
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for text in texts:
        for w in keywords(text, limit=50):
            counts[w] += 1
            order.setdefault(w, len(order))
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:limit]


def keyword_set(words: Iterable[str]) -> frozenset[str]:
    return frozenset(n for n in (normalise(w) for w in words) if n)


@functools.lru_cache(maxsize=1 << 16)
def _noun(word: str) -> str | None:
    """The topic an English word names — its singular noun, or itself when the dictionary
    does not know it (a name) —, or None: a function word, or no noun reading."""
    if word in _EN_NOT_TOPIC:
        return None
    known, noun = nouns().noun_reading(word)
    if not known:
        return word
    if noun is None or noun in _EN_NOT_TOPIC:  # "looks" is a form of "look"
        return None
    return noun


def is_topic(word: str) -> bool:
    """Whether a keyword can name a topic (a noun; the module doc)."""
    return is_japanese(word) or _noun(word) is not None  # janome kept nouns only


def _en_topics(text: str) -> list[str]:
    """English nouns of one text, a plural as its singular where the dictionary knows it
    ("cats" → "cat", "kubernetes" stays)."""
    out: list[str] = []
    for match in _EN_WORD.finditer(text):
        word = normalise(match.group(0))
        if len(word) >= 3 and not word.isdigit() and (noun := _noun(word)) is not None:
            out.append(noun)
    return out


def warm_topics() -> None:
    """Read the noun table now (kuuki.memory.nouns; a third of a second, once per
    process), at start-up: not in the middle of traffic, when the first profile flush
    would otherwise pay it."""
    nouns()


def topics(texts: Iterable[str], limit: int = 12) -> list[str]:
    """The topics of several texts (a person's recent lines, a channel's batch): nouns
    and names (the module doc), the most frequent first, ties in order of appearance."""
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for raw in texts:
        text = _MENTION.sub(" ", raw)
        words = _ja_keywords(text) if is_japanese(text) else _en_topics(text)
        for w in dict.fromkeys(words):
            counts[w] += 1
            order.setdefault(w, len(order))
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:limit]
