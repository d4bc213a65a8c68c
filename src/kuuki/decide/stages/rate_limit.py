"""The `rate limit` stage: more than ADDRESSED_LIMIT replies to one person in ten minutes and
the bot only reacts (not in a conflict, where an emoji would be flippant), unless the
person is in a conversation with it (`in_conversation`: a person, asking something new at
a person's pace, in an exchange the bot answered them in) and under CONVERSATION_LIMIT. It
limits calls (a mention, the name, a reply...): ping floods, repeats, other bots and
mentions of many people at once; talk addressed to the bot by context is a conversation,
not a flood. Its ledger, written after each send, also feeds the local scorer's per-user
limit for unasked talk.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from kuuki.decide.judge.history import TriggerLedger
from kuuki.decide.response_type import choose_form
from kuuki.decide.stages.common import conversation_of
from kuuki.decide.stages.sent_twice import same_text
from kuuki.decide.types import MESSAGE_PASSES, Case, StageResult
from kuuki.domain import ActionKind, Decision, Stage, Verdict
from kuuki.settings import Settings

ADDRESSED_LIMIT = 6  # replies per person per 10 min before the bot only reacts


CONVERSATION_LIMIT = 20  # ...when the person is in a conversation with the bot (a person


# asking one thing after another waits for each answer: about two a minute at most)
EXCHANGE = timedelta(minutes=5)  # the bot answered the person this recently: an exchange


PACE = timedelta(minutes=1)  # a person writes at most PACE_MAX calls to the bot in PACE


PACE_MAX = 3


REPEAT_DICE = 0.75  # two calls sharing this much of their letters ask the same thing


MASS_MENTION = 4  # a message that @-mentions this many people or more calls no one in


# particular (as @everyone and @here do)
TEN_MIN = timedelta(minutes=10)


class RateLimit:
    name = "rate limit"
    passes = MESSAGE_PASSES

    def __init__(self, settings: Settings, ledger: TriggerLedger) -> None:
        self.settings = settings
        self.ledger = ledger

    async def run(self, case: Case) -> StageResult:
        if not case.addressing or case.local is None or case.addressing.kind == "context":
            return StageResult.passing()  # a talk by context is a conversation, not a flood
        s = case.situation
        n = self.ledger.count(s.channel.id, s.message.user.id, s.now, TEN_MIN)
        if n < ADDRESSED_LIMIT or case.local.conflict:
            return StageResult.passing(replies_10min=n)
        talk = (in_conversation(case, self.settings.persona.names)
                if n < CONVERSATION_LIMIT else "")
        if talk:
            case.trace.step(f"{n} replies to {s.message.user.name} in 10 min, but not a flood: "
                            f"{talk}")
            return StageResult.passing(replies_10min=n, conversation=talk)
        trace = case.trace
        trace.add("user rate limit", -30, f"{n} replies to {s.message.user.name} in 10 min")
        emoji = choose_form(
            case.local, 0, s.message.text, self.settings.persona, diversity=True,
            suggested="react",
        ).emoji
        verdict = Verdict(
            ActionKind.REACT, Stage.ADDRESSED, trace.score, "rate limited: react only",
            emoji=emoji, conversation_id=conversation_of(case),
        )
        return StageResult.decide(verdict, replies_10min=n)

    def sent(self, case: Case, decision: Decision) -> None:
        if decision.action.kind is not ActionKind.NONE:
            s = case.situation
            self.ledger.record(s.channel.id, s.message.user.id, s.now)


def in_conversation(case: Case, names: Sequence[str]) -> str:
    """Why a person's call is part of a conversation with the bot, not a flood ("" when it
    is not): a person (not a bot), calling the bot alone (not among MASS_MENTION people),
    saying something new (not a copy of one of their last three messages, and more than
    the bot's ``names``), at a person's pace (at most PACE_MAX calls in PACE), in an exchange
    the bot answered them in (a message of the bot's since one of theirs, within EXCHANGE).
    """
    s = case.situation
    msg = s.message
    bot_ids = s.bot.user_ids if s.bot else frozenset()
    if msg.user.is_bot or len(msg.mentions) >= MASS_MENTION:
        return ""
    before = [m for m in s.recent if m.ts <= msg.ts and m.id != msg.id]
    theirs = [m for m in before if m.user.id == msg.user.id]
    key = same_text(msg.text)
    said = key
    for name in names:
        said = said.replace(same_text(name), "", 1)
    if len(said) < 3:
        return ""  # a bare call ("@Kuu", "Kuu!!"): a ping, not a turn of a talk
    if any(_alike(said, same_text(m.text), names) for m in theirs[-3:]):
        return ""  # the same request again, or nearly ("tell me fact number 7")
    if sum(1 for m in theirs if msg.ts - m.ts <= PACE) >= PACE_MAX:
        return ""
    last_theirs = theirs[-1].ts if theirs else None
    answered = any(m.user.id in bot_ids and msg.ts - m.ts <= EXCHANGE
                   and (last_theirs is None or m.ts >= last_theirs) for m in before)
    if not answered:
        return ""
    return "a person asking one thing after another in an exchange with the bot"


def _alike(said: str, other: str, names: Sequence[str]) -> bool:
    """Two calls say (nearly) the same: their letters and digits, the bot's names left
    out, share REPEAT_DICE of their character pairs."""
    for name in names:
        other = other.replace(same_text(name), "", 1)
    if said == other:
        return True
    a = {said[k:k + 2] for k in range(len(said) - 1)}
    b = {other[k:k + 2] for k in range(len(other) - 1)}
    return bool(a and b) and 2 * len(a & b) / (len(a) + len(b)) >= REPEAT_DICE
