"""What the judge remembers between messages: interventions, triggers, short-lived answers.

- `InterventionHistory` (seed 000): per channel, (time, conversation, log of the last five
  messages) of every time the bot spoke up unasked, kept one hour.
- `TriggerLedger`: per channel and person, when their messages made the bot act, for the
  per-user rate limit.
- `TTLCache`: a small expiring map for the same-conversation and situation-changed
  answers (seed: five minutes).

All time comes from the caller (the injected clock), so replays are deterministic.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

HISTORY_KEEP = timedelta(hours=1)
CACHE_TTL = timedelta(minutes=5)
# how long a person's triggers are kept: far longer than the longest window counted (ten
# minutes), so that a clock set back by less than the difference changes no count
LEDGER_KEEP = timedelta(hours=1)

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Intervention:
    at: datetime
    conversation_id: str | None
    message_id: str
    log: str
    message_ids: tuple[str, ...] = ()


class InterventionHistory:
    """Per-channel list of the bot's unasked interventions within the last hour."""

    def __init__(self, keep: timedelta = HISTORY_KEEP) -> None:
        self.keep = keep
        self._by_channel: dict[str, list[Intervention]] = {}

    def record(self, channel_id: str, item: Intervention) -> None:
        items = self._by_channel.setdefault(channel_id, [])
        items.append(item)
        self._prune(channel_id, item.at)

    def last(self, channel_id: str, now: datetime) -> Intervention | None:
        self._prune(channel_id, now)
        items = self._by_channel.get(channel_id)
        return items[-1] if items else None

    def __len__(self) -> int:
        """The channels with an intervention held."""
        return len(self._by_channel)

    def _prune(self, channel_id: str, now: datetime) -> None:
        items = self._by_channel.get(channel_id)
        if items:
            cutoff = now - self.keep
            kept = [i for i in items if i.at > cutoff]
            if kept:
                self._by_channel[channel_id] = kept
            else:  # no key left behind for every channel the bot ever spoke in
                del self._by_channel[channel_id]


class TriggerLedger:
    """When each person's messages made the bot act, per channel (bounded).

    At most ``per_user`` times per (channel, person), and only people with a time within
    ``keep``: every ``sweep_every`` records, the pairs whose latest time is older are
    dropped. Each such pair counted 0 in every window up to ``keep`` from then on (the
    clock does not go back), so no count changes; without it the ledger held a pair for
    everyone the bot ever answered in every channel, for the life of the process.
    """

    def __init__(
        self, per_user: int = 32, keep: timedelta = LEDGER_KEEP, sweep_every: int = 1024
    ) -> None:
        self.per_user = per_user
        self.keep = keep
        self.sweep_every = sweep_every
        self._times: dict[tuple[str, str], deque[datetime]] = {}
        self._recorded = 0

    def record(self, channel_id: str, user_id: str, at: datetime) -> None:
        times = self._times.setdefault((channel_id, user_id), deque(maxlen=self.per_user))
        times.append(at)
        self._recorded += 1
        if self._recorded % self.sweep_every == 0:
            cutoff = at - self.keep
            self._times = {k: ts for k, ts in self._times.items() if max(ts) >= cutoff}

    def __len__(self) -> int:
        """The (channel, person) pairs held."""
        return len(self._times)

    def count(self, channel_id: str, user_id: str, now: datetime, window: timedelta) -> int:
        if window > self.keep:
            raise ValueError(f"window {window} is longer than the ledger keeps ({self.keep})")
        times = self._times.get((channel_id, user_id))
        if not times:
            return 0
        cutoff = now - window
        return sum(1 for t in times if cutoff <= t <= now)


class CallBudget:
    """A token bucket per channel for LLM-stage calls: cost stays bounded in busy channels.

    ``capacity`` calls may be spent at once; one more becomes available every
    ``refill`` of (clock) time. When the bucket is empty the local stage answers.
    A capacity of 0 switches the budget off.
    """

    def __init__(self, capacity: int = 4, refill: timedelta = timedelta(minutes=8)) -> None:
        self.capacity = capacity
        self.refill = refill
        self._state: dict[str, tuple[float, datetime]] = {}

    def take(self, channel_id: str, now: datetime) -> bool:
        if self.capacity <= 0:
            return True  # switched off
        tokens, at = self._state.get(channel_id, (float(self.capacity), now))
        tokens = min(self.capacity, tokens + (now - at) / self.refill)
        if tokens < 1:
            self._state[channel_id] = (tokens, now)
            return False
        self._state[channel_id] = (tokens - 1, now)
        return True


class TTLCache(Generic[K, V]):
    """A bounded map whose entries expire; expiry is checked against the caller's time."""

    def __init__(self, ttl: timedelta = CACHE_TTL, capacity: int = 1024) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._items: OrderedDict[K, tuple[datetime, V]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: K, now: datetime) -> V | None:
        item = self._items.get(key)
        if item is None or item[0] <= now:
            if item is not None:
                del self._items[key]
            self.misses += 1
            return None
        self.hits += 1
        return item[1]

    def put(self, key: K, value: V, now: datetime, ttl: timedelta | None = None) -> None:
        self._items[key] = (now + (ttl or self.ttl), value)
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def drop(self, key: K) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
