"""The output guard for text the bot is about to post: a reply, an ack, proactive talk.

`ReplyGuard.check` first repairs what a chat member would simply not have typed (its own
name as a prefix, a second paragraph, the model going on to write the next speaker's
turn, a sentence cut off by the token limit), then rejects what cannot be repaired:

    empty        no words at all ("？", "🌟")
    degenerate   the same line or word over and over
    format       JSON, fields of an answer format, code fences
    echo         a heading, instruction or stretch of the prompt, an opening with one of
                 its instructions' lead-ins ("Based on the above, …"), or talk about the
                 prompt itself ("According to the information above, …")
    placeholder  an example value or fill-in marker of a prompt
    label        writing as another speaker ("bob: …", "user:")
    self         addressing itself ("Kuu, I'm glad…", "くうさん")
    parrot       repeating a message of the conversation
    boilerplate  assistant disclaimers ("as an AI language model")
    language     another language than the conversation's
    fluency      Japanese that is no Japanese (invented words, stray symbols)
    cut-off      nothing complete is left after a cut at the token limit

The checks hold for any model: none depends on which model wrote the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from kuuki.guard.japanese import unfluent
from kuuki.guard.scaffold import Scaffold, longest_run, tokens
from kuuki.text.language import detect
from kuuki.text.safety import defuse_mentions

MAX_SENTENCES = 4
# Sentences end at their punctuation, not at line breaks: a list is one sentence.
_SENTENCE = re.compile(r"[^.!?。！？]+(?:[.!?。！？]+|$)\s*")
_TERMINAL = re.compile(r"[.!?。！？…~〜ー♪)）」』\]]\s*$|[\U0001F300-\U0001FAFF\u2600-\u27BF]\s*$")
_DANGLING = re.compile(r"[,、:：;；(（「『\-–—]\s*$")
# Markdown headings, rules and log time stamps: the model writing a document or a log.
_DOCUMENT = re.compile(
    r"(?m)^[ \t]*#{1,6}[ \t]+\S.*$|^[ \t]*(?:-{3,}|\*{3,}|={3,})[ \t]*$"
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d"
)
_ROLE_LABELS = ("user", "assistant", "system", "bot", "ai", "human", "model")
_HONORIFIC = "さん|ちゃん|くん|君|様|氏"
_BOILERPLATE = re.compile(
    r"\bas an? (ai|artificial intelligence|language model|assistant)\b|\bai language model\b"
    r"|\bi(?:'m| am) (?:just )?an? (?:ai|language model|virtual assistant)\b"
    r"|私は(?:ai|ＡＩ|人工知能)|aiアシスタント|言語モデル",
    re.IGNORECASE,
)
_GREETING = r"(?:hi|hey|hello|dear|oh|well|so|yes|yeah|ok|okay|thanks|thank you|sorry)"
# An opening that talks about the prompt as a text ("Based on the above", 「上記をもとに」):
# a member of the chat has no "above" to point at; a model that read one does.
_ABOUT_THE_PROMPT = re.compile(
    r"^\W*(?:based on|according to|given|from|considering|in light of|looking at)\s+"
    r"(?:all\s+)?(?:the|this|that)\s+(?:above|(?:information|conversation|text|context|"
    r"messages?)\s+(?:above|provided|given)|(?:provided|given)\s+"
    r"(?:information|conversation|text|context))\b"
    r"|^\W*(?:上記|以上)(?:の(?:情報|会話|内容))?(?:を|に)(?:もとに|元に|基づ|踏まえ)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """The guard's answer: ``text`` as it may be posted, or why it may not be."""

    ok: bool
    text: str
    check: str = ""  # which rule rejected it ("" when ok)
    reason: str = ""  # what was wrong, for people (the trace, `kuuki why`)
    repairs: tuple[str, ...] = ()

    @staticmethod
    def reject(check: str, reason: str, text: str, repairs: Sequence[str] = ()) -> GuardVerdict:
        return GuardVerdict(False, text, check, reason, tuple(repairs))


@dataclass(frozen=True, slots=True)
class Expect:
    """What the guard knows of the situation the text answers."""

    language: str
    conversation: Sequence[str] = ()  # texts of the conversation, oldest first
    speakers: Sequence[str] = ()  # names of the people in it
    truncated: bool = False  # the model stopped at its token limit


class ReplyGuard:
    def __init__(self, scaffold: Scaffold, bot_names: Sequence[str]) -> None:
        self.scaffold = scaffold
        self.bot_names = tuple(n for n in bot_names if n)

    def check(self, raw: str, expect: Expect) -> GuardVerdict:
        repairs: list[str] = []
        # Pathologies of the whole answer first: a model that echoed its prompt or a format
        # anywhere is not trusted with the rest of what it wrote either.
        whole = self._without_own_label(raw)
        for rule in (
            self._degenerate, self._format, self._echo, self._placeholder, self._self_address
        ):
            problem = rule(whole, expect)
            if problem is not None:
                return GuardVerdict.reject(problem[0], problem[1], raw.strip())
        try:
            text = self._repair(raw, expect, repairs)
        except _Rejected as exc:
            return GuardVerdict.reject(exc.check, exc.reason, raw, repairs)
        for rule in (
            self._empty, self._degenerate, self._label, self._self_address, self._parrot,
            self._boilerplate,
        ):
            problem = rule(text, expect)
            if problem is not None:
                return GuardVerdict.reject(problem[0], problem[1], text, repairs)
        lang = detect(text)
        if lang is not None and lang != expect.language:
            names = {"ja": "Japanese", "en": "English"}
            return GuardVerdict.reject(
                "language",
                f"answers in {names[lang]} to a {names[expect.language]} conversation",
                text, repairs,
            )
        if expect.language == "ja":
            why = unfluent(text, [*expect.conversation, *self.bot_names])
            if why is not None:
                return GuardVerdict.reject("fluency", why, text, repairs)
        return GuardVerdict(True, defuse_mentions(text), repairs=tuple(repairs))

    # -- repairs ------------------------------------------------------------------------------

    def _without_own_label(self, raw: str) -> str:
        """The text without a leading "Kuu:" (or "**10:00:00** Kuu:"): a harmless habit of
        models. Another speaker's label stays, for the label check to reject."""
        text = raw.strip().strip('"“”「」').strip()
        for name in self.bot_names:
            text = re.sub(rf"^(?:\*\*[^*\n]*\*\*[ \t]*)?\**{re.escape(name)}\**\s*[:：]\s*",
                          "", text, flags=re.I)
        return text

    def _repair(self, raw: str, expect: Expect, repairs: list[str]) -> str:
        text = self._without_own_label(raw)
        if text != raw.strip().strip('"“”「」').strip():
            repairs.append("removed its own name as a prefix")
        first = self._label_at(text, expect)
        if first == 0:
            raise _Rejected("label", "writes as another speaker")
        if first is not None:
            repairs.append("cut where it went on to write another speaker's turn")
            text = text[:first].strip()
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        if len(paragraphs) > 1:
            repairs.append("kept the first paragraph")
            text = paragraphs[0].strip()
        sentences = _SENTENCE.findall(text)
        cut_off = (expect.truncated and not _TERMINAL.search(text)) or dangling(text)
        if cut_off and sentences:
            text = "".join(sentences[:-1]).strip()
            if not text:
                raise _Rejected("cut-off", "stops in the middle of its only sentence")
            repairs.append("dropped a sentence cut off at the token limit")
        if len(sentences) > MAX_SENTENCES:
            repairs.append(f"kept the first {MAX_SENTENCES} sentences")
            text = "".join(_SENTENCE.findall(text)[:MAX_SENTENCES]).strip()
        return text

    def _names(self, expect: Expect) -> list[str]:
        return [*self.bot_names, *expect.speakers, *_ROLE_LABELS]

    def _label_at(self, text: str, expect: Expect) -> int | None:
        """Where a line starting with a speaker label begins (0: the text itself), or None."""
        names = "|".join(re.escape(n) for n in sorted(self._names(expect), key=len, reverse=True))
        stamp = r"(?:\*\*[^*\n]*\*\*[ \t]*)?"  # "**2026-01-05 10:00:00** alice:"
        start = r"(?:^|(?<=[.!?。！？])[ \t]*)"  # a line, or a sentence after another
        pattern = re.compile(
            rf"(?im){start}[ \t]*{stamp}\**(?:{names})\**[ \t]*(?:\([^)\n]*\))?[ \t]*[:：]"
        )
        m = pattern.search(text)
        return None if m is None else m.start()

    # -- checks: each returns (check, reason) or None -----------------------------------------

    @staticmethod
    def _empty(text: str, expect: Expect) -> tuple[str, str] | None:
        # No letters: nothing, unless it is one number ("42" answers "how many?").
        letters = any(unicodedata.category(ch)[0] == "L" for ch in text)
        number = re.fullmatch(r"[^\w]*\d+(?:[.,]\d+)?[^\w]*", text) is not None
        if not letters and not number:
            shown = text[:20] or "nothing"
            return ("empty", f"no words, only “{shown}”" if text else "nothing left to say")
        return None

    @staticmethod
    def _degenerate(text: str, expect: Expect) -> tuple[str, str] | None:
        why = degenerate(text)
        return None if why is None else ("degenerate", why)

    def _format(self, text: str, expect: Expect) -> tuple[str, str] | None:
        why = self.scaffold.schema_echo(text)
        if why is None:
            doc = _DOCUMENT.search(text)
            why = None if doc is None else f"writes a document, not a message (“{doc.group(0)}”)"
        return None if why is None else ("format", why)

    def _echo(self, text: str, expect: Expect) -> tuple[str, str] | None:
        why = self.scaffold.copied(text) or self.scaffold.opened(text)
        if why is None and (m := _ABOUT_THE_PROMPT.search(text)) is not None:
            why = f"talks about its prompt (“{m.group(0).strip()}”)"
        return None if why is None else ("echo", why)

    def _placeholder(self, text: str, expect: Expect) -> tuple[str, str] | None:
        why = self.scaffold.placeholder(text)
        return None if why is None else ("placeholder", why)

    def _label(self, text: str, expect: Expect) -> tuple[str, str] | None:
        if self._label_at(text, expect) is not None:
            return ("label", "contains a speaker label")
        return None

    def _self_address(self, text: str, expect: Expect) -> tuple[str, str] | None:
        for name in self.bot_names:
            n = re.escape(name)
            if re.search(rf"^\W*(?:{_GREETING}\W+)?{n}\s*[,，、!！:：]", text, re.I):
                return ("self", f"addresses itself (“{name}”)")
            if re.search(rf"@{n}\b|{n}(?:{_HONORIFIC})", text, re.I):
                return ("self", f"addresses itself (“{name}”)")
            # Anywhere else its own name means the model lost track of who it is ("Yes,
            # kuu.", "くうがくうなら…"), except when it introduces itself.
            bounded = rf"(?<![A-Za-z]){n}(?![A-Za-z])" if name.isascii() else n
            found = [m.start() for m in re.finditer(bounded, text, re.I)]
            intro = re.compile(r"(?:i'?m|i am|my name is|私は|僕は|ぼくは|わたしは)\s*$", re.I)
            if any(not intro.search(text[:at]) for at in found):
                return ("self", f"speaks of itself by name (“{name}”)")
        return None

    @staticmethod
    def _parrot(text: str, expect: Expect) -> tuple[str, str] | None:
        mine = tokens(text)
        if len(mine) < 4:
            return None
        for other in expect.conversation:
            theirs = tokens(other)
            if len(theirs) < 4:
                continue
            run = longest_run(mine, theirs)
            if run >= 5 and run >= 0.6 * len(mine):
                return ("parrot", "repeats a message of the conversation")
        return None

    @staticmethod
    def _boilerplate(text: str, expect: Expect) -> tuple[str, str] | None:
        m = _BOILERPLATE.search(text)
        return None if m is None else ("boilerplate", f"assistant boilerplate “{m.group(0)}”")


class _Rejected(Exception):
    def __init__(self, check: str, reason: str) -> None:
        super().__init__(reason)
        self.check = check
        self.reason = reason


def degenerate(text: str) -> str | None:
    """Why a text is a loop rather than language ("🌟" per line, "dear, hello!" × 10)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 3 and len(set(lines)) <= len(lines) // 2:
        return "the same line over and over"
    if re.search(r"([^\sw])\1{5,}", text):
        return "one character repeated"
    toks = tokens(text)
    for size in (1, 2, 3):
        for i in range(len(toks) - size * 4 + 1):
            gram = toks[i : i + size]
            if all(toks[i + size * k : i + size * (k + 1)] == gram for k in range(1, 4)):
                return f"“{' '.join(gram)}” repeated"
    # Long texts repeat their function words more: the floor falls with length.
    floor = 0.35 if len(toks) <= 200 else 0.2
    if len(toks) >= 16 and len(set(toks)) / len(toks) < floor:
        return "the same few words over and over"
    return None


def dangling(text: str) -> bool:
    """Ends on a comma, colon or opening bracket: the model stopped mid-sentence."""
    return bool(_DANGLING.search(text))
