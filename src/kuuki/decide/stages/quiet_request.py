"""Requests said to the bot in plain words that stay rules.

`QuietRequest`: "Kuu, can you stay out of this channel for an hour?", 「くう、ちょっと黙ってて」
is honoured like `/kuuki quiet`: the bot reacts (👍, or the persona's first emoji when 👍
is not one of its own) and its verdict carries ``quiet_s``, which the engine applies
(``BotState.quiet_until``, kuuki.engine.deciding) before it acts; the quiet stage then
keeps it silent unless addressed, proactive talk included, until the time is up.

A request counts when it is said *to this bot* (a mention, a reply, its name anywhere in
the message, or "the bot" / "hey bot" / ボット) and its wording asks for silence as a
request, not a report: "Kuu was quiet yesterday", 「くうが黙ってた」, "why did you stay
quiet?" do nothing; neither do requests about someone else ("tell Bob to be quiet",
"be quiet, Bob", 「ボブに黙ってって言って」).

Durations: "an hour", "2 hours", "30 minutes", "half an hour", "1時間", "30分", "1時間半",
"半日" (12 h), "a day"/「1日」 (24 h); no time, "for now", "a while", 「しばらく」,
「ちょっと」: an hour. Anything longer than a day is capped at 24 h: a request in passing
must not silence the bot for a week (`/kuuki quiet` is there for that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kuuki.decide.addressing.names import AddressDetector, normalise
from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Stage, Verdict

DEFAULT_QUIET_MIN = 60.0
MAX_QUIET_MIN = 24 * 60.0
ACK_EMOJI = "👍"

_EN_ASK = re.compile(
    r"\b(?:(?:be|stay|keep|go|remain)\s+(?:quiet|silent)"
    r"|quiet\s+down|pipe\s+down|shut\s+up|hush"
    r"|(?:stay|keep)\s+out\s+of\s+(?:this|the|here|our)"
    r"|stop\s+(?:talking|posting|replying|responding|answering|chiming\s+in)"
    r"|(?:don'?t|do\s+not)\s+(?:talk|post|reply|respond|chime\s+in)"
    r"|mute\s+yourself|take\s+a\s+break)\b"
)
# Not a request to the bot: about someone else ("tell Bob to be quiet"), or a report or
# question about the past ("why did you stay quiet?").
_EN_NOT = re.compile(
    r"\b(?:tell|ask|make|get|have)\s+(?!you\b|yourself\b)[\w@-]+\s+(?:to\s+)?"
    r"|\b(?:why|did|didn'?t|was|were|when|how\s+come)\b"
)
_EN_LEADING_VOCATIVE = re.compile(r"^\s*@?(?P<who>[a-z][\w-]*)\s*,")
_EN_TRAILING_VOCATIVE = re.compile(r",\s*@?(?P<who>[a-z][\w-]*)\s*[.!]*\s*$")
_EN_FILLERS = frozenset({"please", "pls", "now", "ok", "okay", "thanks", "thx", "ty", "k",
                         "guys", "everyone", "all", "buddy", "mate", "bot", "friend",
                         "hey", "hi", "yo", "so", "sorry", "look", "listen", "oh", "well"})
_JA_ASK = re.compile(
    r"(?:黙って|だまって|黙れ|だまれ|静かにして|しずかにして|静かにしといて|おとなしくして"
    r"|(?:発言|返信|反応|口出し|書き込み)(?:を)?(?:しないで|控えて|ひかえて|やめて)"
    r"|(?:発言|返信|書き込み)は(?:しないで|控えて|ひかえて)"
    r"|(?:喋|しゃべ)らないで|話さないで|出てこないで)"
    # the request's own endings only: 「黙ってて」「静かにしてください」「発言しないでね」,
    # not 「黙ってた」 nor 「黙ってて助かった」
    r"[てねよなくださいれるもらえますかほしおーっ下]*\s*(?:[。.!！?？…〜~w笑、,]|$)"
)
_BOT_WORD = re.compile(r"\bthe\s+bot\b|^\s*(?:hey\s+|ok\s+|yo\s+|hi\s+)?bot\b|(?<![ァ-ヺ])ボット")

_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30,
                 "forty": 40, "forty-five": 45}
_KANJI_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
                  "九": 9, "十": 10}
_NUM = r"(\d+(?:\.\d+)?|[一二三四五六七八九十]|an?|one|two|three|four|five|six|ten" \
       r"|fifteen|twenty|thirty|forty-five|forty)"
# (pattern, minutes per number, minutes added): a pattern with no number is worth its unit.
_DURATIONS: tuple[tuple[re.Pattern[str], float, float], ...] = (
    (re.compile(r"half\s+an?\s+hour|半時間"), 30.0, 0.0),
    (re.compile(r"半日"), 12 * 60.0, 0.0),
    (re.compile(r"\b(?:a|one|the)\s+(?:whole\s+)?day\b|rest\s+of\s+the\s+day|一日"),
     24 * 60.0, 0.0),
    (re.compile(rf"(?:\b|^){_NUM}\s*時間半"), 60.0, 30.0),
    (re.compile(rf"(?:\b|^){_NUM}\s*(?:h|hrs?|hours?)\b|{_NUM}\s*時間"), 60.0, 0.0),
    (re.compile(rf"(?:\b|^){_NUM}\s*(?:m|mins?|minutes?)\b|{_NUM}\s*分"), 1.0, 0.0),
    (re.compile(rf"(?:\b|^){_NUM}\s*(?:d|days?)\b|{_NUM}\s*日"), 24 * 60.0, 0.0),
)


def _number(raw: str) -> float:
    if raw in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[raw])
    if raw in _KANJI_NUMBERS:
        return float(_KANJI_NUMBERS[raw])
    return float(raw)


def quiet_minutes(text: str) -> float:
    """How long a quiet request asks for, in minutes: an hour when it says no time,
    never more than a day (module doc)."""
    t = normalise(text)
    for pattern, unit, extra in _DURATIONS:
        hit = pattern.search(t)
        if hit is None:
            continue
        raw = next((g for g in hit.groups() if g), None)
        minutes = (_number(raw) if raw is not None else 1.0) * unit + extra
        if minutes > 0:
            return min(minutes, MAX_QUIET_MIN)
    return DEFAULT_QUIET_MIN


def asks_for_quiet(text: str, bot_names: Sequence[str]) -> bool:
    """The wording is a request for silence to whoever it is said to (module doc)."""
    t = normalise(text)
    en = _EN_ASK.search(t)
    if en is not None:
        if _EN_NOT.search(t[: en.start()]):
            return False
        # "be quiet, Bob" / "Bob, be quiet": said to someone else by name
        names = {normalise(n) for n in bot_names} | _EN_FILLERS
        called = [hit["who"] for rx in (_EN_LEADING_VOCATIVE, _EN_TRAILING_VOCATIVE)
                  if (hit := rx.search(t)) is not None]
        return all(who in names for who in called)
    return _JA_ASK.search(t) is not None


class QuietRequest:
    """Honours a request to stay out of the channel like `/kuuki quiet` (module doc)."""

    name = "quiet request"
    passes = frozenset({Pass.FIRST, Pass.CAUGHT_UP})

    def __init__(self, detector: AddressDetector, bot_names: Sequence[str],
                 emoji: Sequence[str]) -> None:
        self.detector = detector
        self.bot_names = tuple(bot_names)
        self.emoji = ACK_EMOJI if ACK_EMOJI in emoji or not emoji else emoji[0]

    def said_to_bot(self, case: Case) -> str | None:
        """How the message is said to this bot, or None."""
        if case.addressing:
            return case.addressing.kind
        text = case.message.text
        if self.detector.mentions_name(text):
            return "name"
        if _BOT_WORD.search(normalise(text)):
            return "bot word"
        return None

    async def run(self, case: Case) -> StageResult:
        msg = case.message
        if msg.user.is_bot or not asks_for_quiet(msg.text, self.bot_names):
            return StageResult.passing()
        to_bot = self.said_to_bot(case)
        if to_bot is None:
            return StageResult.passing(quiet_s=None, to_bot=None)
        minutes = quiet_minutes(msg.text)
        seconds = minutes * 60
        case.trace.step(f"asked to stay out of the channel ({to_bot}) for {minutes:g} min: "
                        f"quiet unless addressed until then")
        verdict = Verdict(
            ActionKind.REACT, Stage.ADDRESSED, 100,
            f"asked to be quiet for {minutes:g} min", emoji=self.emoji, quiet_s=seconds,
        )
        return StageResult.decide(verdict, quiet_s=seconds, to_bot=to_bot)
