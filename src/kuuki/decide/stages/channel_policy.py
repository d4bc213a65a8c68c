"""The `channel policy` stage: the channel's own manners (kuuki.settings.policy).

``asked`` keeps the bot silent unless addressed, proactive talk included; quiet hours do
the same in the channel's time zone; ``proactive = false`` turns the bot's own topics off.
``member`` hands its readiness points and keywords to the local score. ``listen`` decides
as a member would: posting nothing is the engine's shadow switch (the app tells it which
channels listen), so a listening channel records exactly what the bot would have done.
"""

from __future__ import annotations

from collections.abc import Callable

from kuuki.decide.types import ALL_PASSES, Case, Pass, StageResult
from kuuki.domain import Channel, Stage
from kuuki.settings.policy import ChannelPolicy

PolicyOf = Callable[[Channel], ChannelPolicy]


class ChannelManners:
    name = "channel policy"
    passes = ALL_PASSES

    def __init__(self, policy_of: PolicyOf) -> None:
        self.policy_of = policy_of

    async def run(self, case: Case) -> StageResult:
        s = case.situation
        p = self.policy_of(s.channel)
        case.readiness = p.readiness
        case.keywords = p.keywords or None
        if case.addressing:
            return StageResult.passing(mode=p.mode)
        proactive = case.passing is Pass.PROACTIVE
        if p.mode == "asked":
            case.trace.step("this channel's policy: only when asked")
            return StageResult.silent(
                Stage.PROACTIVE if proactive else Stage.FILTERED, 0,
                "this channel: only when asked", mode=p.mode)
        if proactive and not p.proactive:
            return StageResult.silent(Stage.PROACTIVE, 0, "proactive talk is off here",
                                      mode=p.mode)
        if p.quiet_at(s.now):
            zone = p.timezone or "UTC"
            case.trace.step(f"quiet hours here: {p.quiet_hours} ({zone})")
            return StageResult.silent(
                Stage.PROACTIVE if proactive else Stage.FILTERED, 0,
                f"quiet hours here ({p.quiet_hours}, {zone})", mode=p.mode)
        return StageResult.passing(mode=p.mode, readiness=p.readiness)
