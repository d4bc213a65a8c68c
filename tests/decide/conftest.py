from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kuuki.clock import VirtualClock
from kuuki.decide.addressing.names import AddressDetector
from kuuki.decide.situation import BotState, Situation
from kuuki.domain import Channel, DecisionTrace, Message, User
from kuuki.errors import LLMUnavailable
from kuuki.settings import Persona, Settings
from kuuki.testing.llm import Scripted, ScriptedLLM

T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
CH = Channel("general", "general")
BOT = User("Kuu", "Kuu", is_bot=True)


def settings(**kw: Any) -> Settings:
    persona = Persona(
        name="Kuu",
        aliases=("くう", "クウ"),
        language=kw.pop("language", "en"),
        keywords=("docker", "python", "ゲーム"),
    )
    return Settings(persona=persona, **kw)


def msg(mid: str, t: float, user: str, text: str, **kw: Any) -> Message:
    who = BOT if user == "Kuu" else User(user, user, is_bot=kw.pop("bot", False))
    return Message(mid, CH.id, who, text, T0 + timedelta(seconds=t), **kw)


class Room:
    """A channel's buffer and bot state, to build Situations the way the engine does."""

    def __init__(self) -> None:
        self.recent: list[Message] = []
        self.bot = BotState(frozenset({"Kuu"}))
        self.detector = AddressDetector(["Kuu", "くう", "クウ"])

    def add(self, m: Message) -> Message:
        self.recent.append(m)
        if m.user.id == "Kuu":
            self.bot.last_reply_at = m.ts
        return m

    def situation(self, m: Message, *, at: float | None = None, **extra: Any) -> Situation:
        if m not in self.recent:
            self.add(m)
        bot_ids = {x.id for x in self.recent if x.user.id == "Kuu"}
        addressing = self.detector.detect(m, bot_user_ids={"Kuu"}, bot_message_ids=bot_ids)
        now = T0 + timedelta(seconds=at) if at is not None else m.ts
        return Situation(
            m, CH, addressing, list(self.recent), now, None, None, self.bot, dict(extra)
        )


def trace(m: Message) -> DecisionTrace:
    return DecisionTrace(m.id, CH.id, m.ts)


# What the judge model answers when nothing is scripted: stay silent.
NO = {"should_respond": False, "response_type": "none", "reason": "no", "confidence": 0.9}


def judge_llm(*answers: Scripted) -> ScriptedLLM:
    """The scripted model as a judge: answers from a queue (dicts, strings or exceptions),
    and with nothing scripted, a judge call stays silent."""
    return ScriptedLLM(*answers, defaults={"judge": NO})


@pytest.fixture
def room() -> Room:
    return Room()


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(T0)


DOWN = LLMUnavailable("connection refused")


class Delivering:
    """A pipeline driven as the engine drives it: a verdict that speaks is reported back
    as delivered (`Pipeline.sent`), so the history stages (interventions, rate limits)
    see what the bot said."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    async def judge(self, situation: Situation, trace: DecisionTrace) -> Any:
        from kuuki.decide.types import Case, Pass
        from kuuki.domain import Action, ActionKind, Decision

        case = Case(situation, Pass.of(situation.extra), trace)
        v = await self.pipeline.decide(case)
        if v.action is not ActionKind.NONE:
            m = situation.message
            action = Action(v.action, situation.channel.id, m.id, emoji=v.emoji)
            self.pipeline.sent(
                case, Decision(m.id, situation.channel.id, action, v.stage, v.score, v.reason,
                               situation.now, trace)
            )
        return v

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pipeline, name)


# A request, the bot's question asked in order to help with it, and the answer carrying
# what it asked for, in both languages (the clarifying rule's tests, as the context reads
# it and as the addressed stage answers it).
ASKED_TO_HELP = (
    ("Kuu, any cafe you'd recommend for this weekend?",
     "Nice! Which area are you looking in, and what's your budget?",
     "near Shibuya, about 30 dollars"),
    ("くう、週末に行けるおすすめのカフェある？",
     "いいですね！どのあたりで探してますか？予算はどれくらいですか？",
     "渋谷の近くで、3000円くらいです"),
)

