"""The `addressed` stage: the form of the answer to a message that addresses the bot (mention,
reply, name call, DM, its thread; seed 002's table; a short remark in a DM or the bot's own
thread gets a nod, not a speech); addressed by context, as a member would.
"""

from __future__ import annotations

from datetime import timedelta

from kuuki.decide.addressing.context import answers_the_bot, clarifying
from kuuki.decide.judge.state import ConvState
from kuuki.decide.response_type import SHORT_AT, choose_form, pick_emoji
from kuuki.decide.stages.common import conversation_of
from kuuki.decide.types import MESSAGE_PASSES, Case, Pass, StageResult
from kuuki.domain import ActionKind, Stage, Verdict
from kuuki.settings import Settings

CONTEXT_COOLDOWN = timedelta(minutes=2)  # = the local score's cooldown (kuuki.decide.rules)


CALLS = frozenset({"mention", "reply", "name", "dm", "thread"})


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
            emoji=form.emoji, conversation_id=conversation_of(case),
        )
        if case.passing is Pass.SETTLED:
            case.trace.step("answering the burst of pings as one")
        return StageResult.decide(verdict, addressed=a.kind, form=form.action.value)


    def _by_context(self, case: Case) -> StageResult:
        """A message for the bot by context only (no call): how a member answers it.

        An answer to the bot's own question keeps the talk going (a short ack when it is
        short or a member in the seat would say little, else a reply; a reply when the bot
        asked it in order to help: `_answering`); a question gets a
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
            kind, why = _answering(case)
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
            emoji=emoji if kind is ActionKind.REACT else None,
            conversation_id=conversation_of(case),
        )
        return StageResult.decide(verdict, addressed="context", form=kind.value)


def _answering(case: Case) -> tuple[ActionKind, str]:
    """An answer to the bot's own question. When the bot asked in order to help (where,
    which, how much… after a request), the answer carries what it needed: the help
    follows, a reply, however short the answer (a Japanese answer is short by its
    characters). Else a short answer, or one a member in the seat would meet with few
    words, gets a short ack."""
    r = case.local
    assert r is not None
    asked = clarifying(case)
    if asked:
        if r.seat_short >= SHORT_AT:
            p = case.reading.bot_p if case.reading is not None else 0.0
            _both(case, "an answer to what the bot asked in order to help gets the help", p,
                  r.seat_p, "rule")
            case.trace.step(f"the seat model expects few words ({r.seat_short:.0%}), but the "
                            f"bot asked in order to help: the rule holds")
        return ActionKind.REPLY, f"answers what the bot asked in order to help ({asked})"
    short = (r.seat_short >= SHORT_AT or r.short) and not r.conflict
    kind = ActionKind.ACK if short else ActionKind.REPLY
    return kind, f"answers the bot's question (a short answer: {r.seat_short:.0%})"


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

