"""The channel policy stage on proactive talk: off in a channel that says so, and silent
in an `asked` one; on elsewhere."""

from __future__ import annotations

from kuuki.clock import VirtualClock
from kuuki.decide.judge.build import build_judge
from kuuki.decide.types import Case, Pass, Proposal
from kuuki.domain import ActionKind, Stage
from kuuki.settings import Persona, Settings
from kuuki.settings.policy import policies

from ..conftest import Room, msg, trace


async def proactive_verdict(table: dict[str, dict[str, object]]) -> tuple[ActionKind, str]:
    room = Room()
    wake = msg("m1", 0, "alice", "anyone climbing fuji this year?")
    s = Settings(persona=Persona(name="Kuu"), channel_policy=policies("p", table))
    pipeline = build_judge(s, None, VirtualClock())
    proposal = Proposal("Bob climbed Fuji last summer.", 60, "proactive: fact 1", wake.ts)
    case = Case(room.situation(wake, at=20), Pass.PROACTIVE, trace(wake), proposal=proposal)
    v = await pipeline.decide(case)
    assert v.stage is Stage.PROACTIVE
    return v.action, v.reason


async def test_proactive_talk_follows_the_channels_policy() -> None:
    channel = Room().situation(msg("m0", 0, "alice", "hi"), at=0).channel.name
    assert (await proactive_verdict({}))[0] is ActionKind.REPLY
    assert await proactive_verdict({channel: {"proactive": False}}) == (
        ActionKind.NONE, "proactive talk is off here")
    assert await proactive_verdict({channel: {"mode": "asked"}}) == (
        ActionKind.NONE, "this channel: only when asked")
    assert (await proactive_verdict({"elsewhere": {"proactive": False}}))[0] is ActionKind.REPLY
