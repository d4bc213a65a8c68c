"""Proactive talk: when a channel wakes up, bring up a related thing the bot remembers.

Conditions (seed 002): a shareable fact the channel may see relates to what is being said,
and the channel was silent for at least ``silence`` before this message. The check runs a
short while after the wake-up message, off the message path, so the judge's own answer
comes first. Whether the bot may speak then — not asked to be quiet, nothing said about
the wake-up already, outside the intervention interval — is the decision pipeline's call:
the fact is *proposed* to the engine (`propose`), goes on the channel's own queue and
through the same list of stages as every message (kuuki.decide), and is sent, recorded
and explained like any other decision.

The ledger (the store's ``proactive_ledger``) records what was brought up, where and when;
a fact is never brought up twice in the same channel.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any, Protocol

from kuuki.clock import Clock
from kuuki.domain import ActionKind, Channel, Message
from kuuki.memory.fact_store import FactMemory
from kuuki.memory.jobs import JobRecord, Jobs
from kuuki.ports import EngineControl

DEFAULT_SILENCE = timedelta(minutes=30)
DEFAULT_DELAY_S = 20.0
MIN_RELEVANCE = 0.3


class LedgerPort(Protocol):
    async def record_proactive(self, fact_id: int, channel_id: str, at: datetime) -> None: ...

    async def proactive_fact_ids(self, channel_id: str) -> set[int]: ...


class ProactiveTalker:
    """Watches for wake-ups and volunteers a remembered fact."""

    def __init__(
        self,
        *,
        facts: FactMemory,
        ledger: LedgerPort,
        clock: Clock,
        jobs: Jobs,
        silence: timedelta = DEFAULT_SILENCE,
        delay_s: float = DEFAULT_DELAY_S,
    ) -> None:
        self.facts = facts
        self.ledger = ledger
        self.clock = clock
        self.jobs = jobs
        self.silence = silence
        self.delay_s = delay_s
        self.engine: EngineControl | None = None
        self._last_seen: dict[str, datetime] = {}
        self._used: dict[str, set[int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._timers: list[Any] = []

    def observe(self, channel: Channel, msg: Message, *, from_bot: bool) -> None:
        previous = self._last_seen.get(channel.id)
        if previous is None or msg.ts > previous:
            self._last_seen[channel.id] = msg.ts
        if from_bot or msg.user.is_bot or self.engine is None:
            return
        # The first message seen in a channel after a restart counts as a wake-up only if
        # the store's history says so; without history there is no silence to measure.
        if previous is None or msg.ts - previous < self.silence:
            return

        async def fire() -> None:
            self.jobs.spawn(f"proactive-{channel.id}", lambda: self.consider(channel, msg))

        self._timers = [t for t in self._timers if not getattr(t, "cancelled", False)][-50:]
        self._timers.append(self.clock.call_later(self.delay_s, fire))

    def seen_before(self, channel_id: str, ts: datetime) -> None:
        """Seed the silence detector with the newest stored message of a channel."""
        previous = self._last_seen.get(channel_id)
        if previous is None or ts > previous:
            self._last_seen[channel_id] = ts

    async def used(self, channel_id: str) -> set[int]:
        used = self._used.get(channel_id)
        if used is None:
            used = self._used[channel_id] = await self.ledger.proactive_fact_ids(channel_id)
        return used

    async def consider(self, channel: Channel, wake: Message) -> bool:
        """Bring up a fact about the wake-up, if every condition holds. True if it did."""
        engine = self.engine
        if engine is None:
            return False
        lock = self._locks.setdefault(channel.id, asyncio.Lock())
        async with lock:
            now = self.clock.now()
            live = engine.live(channel.id)
            if live is None:
                return False
            trigger = live.last_human or wake
            recent = [m.text for m in live.recent if m.ts >= wake.ts
                      and not m.user.is_bot][-5:]
            text = "\n".join(recent) or wake.text
            used = await self.used(channel.id)
            hits = self.facts.search(
                channel, text, now=now, speaker=trigger.user.id, limit=1,
                shareable_only=True, exclude=used, min_relevance=MIN_RELEVANCE,
            )
            if not hits:
                self._record(channel, now, False, "no related shareable fact")
                return False
            hit = hits[0]
            used.add(hit.fact.id)  # reserved now: a concurrent wake-up must not pick it too
            decision = await engine.propose(
                channel, wake, topic=hit.fact.content, score=round(hit.score * 100, 1),
                reason=(
                    f"proactive: channel woke up after a silence; bringing up fact "
                    f"{hit.fact.id} (relevance {hit.relevance:.2f}, score {hit.score:.2f})"
                ),
            )
            acted = decision is not None and decision.action.kind in (
                ActionKind.REPLY, ActionKind.ACK)
            if acted:
                await self.ledger.record_proactive(hit.fact.id, channel.id, now)
            else:
                used.discard(hit.fact.id)
            why = decision.reason if decision is not None else "channel not live"
            self._record(channel, now, acted, f"fact {hit.fact.id}" if acted else why)
            return acted

    def _record(self, channel: Channel, now: datetime, ok: bool, reason: str) -> None:
        # Not bringing anything up (no related fact, or the decision was to stay quiet) is
        # the usual outcome, not a failure: skipped, so it is not logged as a warning.
        self.jobs.record(JobRecord("proactive", channel.id, now, ok, reason, skipped=not ok))

    def forget_cache(self) -> None:
        self._used.clear()

    def cancel_timers(self) -> None:
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
