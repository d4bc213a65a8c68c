"""The `ping burst` stage: a person pinging again soon after a ping the bot answered in
words, with nobody else speaking in between, is in a burst; the pings are held and the
newest is answered once the person stops, with the whole burst in view. A person answers
the burst, not each ping (12 pings in 24 s get at most 2 replies). A repeat after a failed
send or a fallback reaction is answered at once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kuuki.decide.types import Case, Pass, StageResult
from kuuki.domain import ActionKind, Decision, Stage, Verdict

PING_BURST_GAP = timedelta(seconds=10)  # a ping this soon after the person's answered one:


# too soon to have read the answer (a reply to it takes longer)
PING_SETTLE_S = 8.0  # quiet from that person before the burst is answered


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
