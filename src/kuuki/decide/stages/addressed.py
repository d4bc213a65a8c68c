"""Stages for a message that addresses the bot (mention, reply, name call, DM, its thread).

- `PingBurst`: a person pinging again soon after a ping the bot answered in words, with
  nobody else speaking in between, is in a burst; the pings are held and the newest is
  answered once the person stops, with the whole burst in view. A person answers the
  burst, not each ping (12 pings in 24 s get at most 2 replies). A repeat after a failed
  send or a fallback reaction is answered at once.
- `RateLimit`: more than ADDRESSED_LIMIT replies to one person in ten minutes and the bot
  only reacts (not in a conflict, where an emoji would be flippant), unless the person is
  in a conversation with it (`in_conversation`: a person, asking something new at a
  person's pace, in an exchange the bot answered them in) and under CONVERSATION_LIMIT. It
  limits calls (a mention, the name, a reply…): ping floods, repeats, other bots and
  mentions of many people at once; talk addressed to the bot by context is a
  conversation, not a flood. Its ledger, written after each send, also feeds the local
  scorer's per-user limit for unasked talk.
- `Addressed`: the form of the answer (seed 002's table; a short remark in a DM or the
  bot's own thread gets a nod, not a speech); by context, as a member would (`_by_context`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from kuuki.decide.addressing.context import answers_the_bot
from kuuki.decide.judge.history import TriggerLedger
from kuuki.decide.judge.state import ConvState
from kuuki.decide.response_type import SHORT_AT, choose_form, pick_emoji
from kuuki.decide.stages.sent_twice import same_text
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult
from kuuki.domain import ActionKind, Decision, Stage, Verdict
from kuuki.settings import Settings

PING_BURST_GAP = timedelta(seconds=10)  # a ping this soon after the person's answered one:
# too soon to have read the answer (a reply to it takes longer)
PING_SETTLE_S = 8.0  # quiet from that person before the burst is answered
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
CONTEXT_COOLDOWN = timedelta(minutes=2)  # = the local score's cooldown (kuuki.decide.rules)
CALLS = frozenset({"mention", "reply", "name", "dm", "thread"})
_MAX_PEOPLE = 64


class PingBurst:
    name = "ping burst"
    passes = frozenset({Pass.FIRST, Pass.SETTLED})

    def __init__(self) -> None:
        # (channel, person) -> when a ping of theirs was last answered in words
        self._answered: dict[tuple[str, str], datetime] = {}
        self._held: set[tuple[str, str]] = set()

    async def run(self, case: Case) -> StageResult:
        msg = case.message
        if not case.addressing or case.addressing.kind == "context" or msg.user.is_bot:
            return StageResult.passing()  # a burst is of calls; talk by context is talk
        key = (case.situation.channel.id, msg.user.id)
        if case.passing is Pass.SETTLED:
            self._held.discard(key)  # the burst ended: this ping is answered now
            return StageResult.passing()
        last = self._answered.get(key)
        held = key in self._held
        if not held and (last is None or not timedelta(0) <= msg.ts - last <= PING_BURST_GAP):
            return StageResult.passing()
        if not held and self._others_between(case, last):
            return StageResult.passing()  # a conversation with others going on: no flood
        self._held.add(key)
        case.trace.step(
            f"another ping within {PING_BURST_GAP.total_seconds():.0f} s of an answered one: "
            f"waiting {PING_SETTLE_S:.0f} s for the burst to end"
        )
        verdict = Verdict(
            ActionKind.NONE, Stage.ADDRESSED, 100, "ping burst: answered when it ends",
            defer_s=PING_SETTLE_S, defer_key=f"ping:{msg.user.id}", owed=True,
        )
        return StageResult.decide(verdict, held_behind=last.isoformat() if last else None)

    @staticmethod
    def _others_between(case: Case, since: datetime | None) -> bool:
        """Did another person speak since the person's answered ping? A flood is one
        person's run of pings; pings amid other people's talk are answered one by one."""
        msg = case.message
        return any(
            m.user.id != msg.user.id and not m.user.is_bot and since is not None
            and since <= m.ts <= msg.ts
            for m in case.situation.recent
            if m.id != msg.id and m.user.id not in (case.situation.bot.user_ids
                                                     if case.situation.bot else ())
        )

    def sent(self, case: Case, decision: Decision) -> None:
        msg = case.message
        key = (case.situation.channel.id, msg.user.id)
        if decision.stage is not Stage.ADDRESSED or msg.user.is_bot:
            return
        if decision.action.kind in (ActionKind.REPLY, ActionKind.ACK):
            self._answered[key] = msg.ts
            if len(self._answered) > _MAX_PEOPLE * 16:  # bounded: forget old answers
                cutoff = msg.ts - PING_BURST_GAP
                self._answered = {k: t for k, t in self._answered.items() if t >= cutoff}


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
            emoji=emoji, conversation_id=_cid(case),
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


class Addressed:
    name = "addressed"
    passes = MESSAGE_PASSES

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def run(self, case: Case) -> StageResult:
        a = case.addressing
        if not a:
            return StageResult.passing(addressed=None)
        r = case.local
        assert r is not None, "the local score runs before"
        if a.kind == "context":
            return self._by_context(case)
        form = choose_form(
            r, r.score, case.message.text, self.settings.persona,
            diversity=self.settings.RESPONSE_DIVERSITY_ENABLED,
        )
        case.trace.step(f"addressed ({a.kind}): {form.action.value} — {form.why}")
        verdict = Verdict(
            form.action, Stage.ADDRESSED, r.score, f"addressed by {a.kind}",
            emoji=form.emoji, conversation_id=_cid(case),
        )
        if case.passing is Pass.SETTLED:
            case.trace.step("answering the burst of pings as one")
        return StageResult.decide(verdict, addressed=a.kind, form=form.action.value)


    def _by_context(self, case: Case) -> StageResult:
        """A message for the bot by context only (no call): how a member answers it.

        An answer to the bot's own question keeps the talk going (a short ack when it is
        short or a member in the seat would say little, else a reply); a question gets a
        reply; a remark in a talk the bot takes part in gets a short word, but after the bot
        answered a call (a mention, its name, a reply…) a remark closes that exchange: an
        emoji, or nothing within 2 minutes (a member lets "ok, I'll think about it" be).
        Nothing either when it names the bot in passing ("I asked Kuu yesterday"), at the
        end of the talk or in a quarrel."""
        r, s = case.local, case.situation
        assert r is not None
        kind, why = ActionKind.REACT, "a remark to the bot: an emoji"
        last = s.bot.last_reply_at if s.bot else None
        if r.state is not None and r.state.state is ConvState.ENDING:
            kind, why = ActionKind.NONE, "the conversation is ending"
        elif answers_the_bot(case):
            short = (r.seat_short >= SHORT_AT or r.short) and not r.conflict
            kind = ActionKind.ACK if short else ActionKind.REPLY
            why = f"answers the bot's question (a short answer: {r.seat_short:.0%})"
        elif r.question:
            kind, why = ActionKind.REPLY, "a question to the bot"
        elif r.conflict:
            kind, why = ActionKind.NONE, "a remark in a quarrel: no emoji"
        elif _about_the_bot(case):
            kind, why = ActionKind.NONE, "a remark that names the bot is about it, not to it"
        elif s.bot is None or s.bot.last_reply_to not in CALLS:
            kind, why = ActionKind.ACK, "a remark in a talk the bot is part of: a short word"
        elif last is not None and s.now - last <= CONTEXT_COOLDOWN:
            kind, why = _after_a_call(case)
        case.trace.step(f"addressed by context: {kind.value} — {why}")
        if kind is ActionKind.NONE:
            return StageResult.silent(Stage.ADDRESSED, r.score, f"addressed by context: {why}",
                                      addressed="context")
        emoji = pick_emoji(case.message.text, self.settings.persona.emoji)
        verdict = Verdict(
            kind, Stage.ADDRESSED, r.score, "addressed by context",
            emoji=emoji if kind is ActionKind.REACT else None, conversation_id=_cid(case),
        )
        return StageResult.decide(verdict, addressed="context", form=kind.value)


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


def _after_a_call(case: Case) -> tuple[ActionKind, str]:
    """A remark to the bot just after it answered a call. The rule "it closes the
    exchange" holds where every user expects it: a few words, or a remark that does not
    call the bot ("hmm, I'll think about the options you gave"). A remark that calls it by
    name ("kuu - it does respond to the power button, the screen just stays on") carries
    the exchange on: answered, with a short word when the seat model expects one."""
    r, reading = case.local, case.reading
    assert r is not None
    p = reading.bot_p if reading is not None else 0.0
    called = reading is not None and reading.called
    held = "model" if called and not r.short else "rule"
    _both(case, "a remark after a call closes the exchange", p, r.seat_p, held)
    if held == "rule":
        return ActionKind.NONE, "a remark just after the bot answered a call"
    case.trace.step(f"a remark just after the bot answered a call, but it calls the bot by "
                    f"name: the addressee model's {p:.0%} stands over the rule")
    if r.seat_short >= SHORT_AT:
        return ActionKind.ACK, "a remark that carries the exchange on: a short word"
    return ActionKind.REPLY, "a remark that carries the exchange on"


def _both(case: Case, rule: str, p: float, seat_p: float, held: str) -> None:
    """A rule and the models disagreed: both in the trace, and which one held."""
    both = case.trace.features.setdefault("rule_vs_model", [])
    both.append({"rule": rule, "model_p": round(p, 3), "seat_p": round(seat_p, 3),
                 "held": held})


def _about_the_bot(case: Case) -> bool:
    """The rule "a remark that names the bot is about it, not to it" ("I asked Kuu
    yesterday"), where every user expects it: the name is a reference. Where the name is
    a call ("kuu - it does respond to the power button"), the addressee model's reading
    stands. The trace shows the rule and the model side by side either way."""
    reading = case.reading
    if reading is None or not reading.named:
        return False
    p = reading.bot_p
    if reading.called:
        case.trace.step(f"the rule 'names the bot: about it' does not apply: the name is a "
                        f"call; the addressee model gives the bot {p:.0%}")
        _both(case, "names the bot: about it", p, reading.seat.p, "model")
        return False
    case.trace.step(f"the name is a reference, not a call: the rule 'names the bot: about "
                    f"it' holds over the addressee model's {p:.0%}")
    _both(case, "names the bot: about it", p, reading.seat.p, "rule")
    return True


def _cid(case: Case) -> str | None:
    return case.view.conversation_id if case.view is not None else None
