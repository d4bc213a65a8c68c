"""The LLM judge's answers, cached per conversation.

A judgment holds for a conversation until anything new is said in it: an entry remembers
the newest message id it saw and is void as soon as the conversation's newest message is
another one. Its lifetime grows with the model's confidence (seed 003: 1.0 means "unlikely
to change"), from one minute for a shrug to ten minutes for a sure answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

MIN_TTL = timedelta(minutes=1)
MAX_TTL = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class LLMJudgment:
    """The validated answer of the LLM judge (seed 003's JSON, plus a response type)."""

    should_respond: bool
    response_type: str
    reason: str
    confidence: float


@dataclass(frozen=True, slots=True)
class _Entry:
    judgment: LLMJudgment
    newest_id: str
    expires: datetime


def lifetime(confidence: float) -> timedelta:
    c = min(1.0, max(0.0, confidence))
    return MIN_TTL + (MAX_TTL - MIN_TTL) * c


class VerdictCache:
    """Per (channel, conversation): the last LLM judgment and the message it was valid for."""

    def __init__(self, capacity: int = 2048) -> None:
        self.capacity = capacity
        self._items: dict[tuple[str, str], _Entry] = {}
        self.hits = 0

    def get(
        self, channel_id: str, conversation: str, newest_id: str, now: datetime
    ) -> LLMJudgment | None:
        key = (channel_id, conversation)
        entry = self._items.get(key)
        if entry is None:
            return None
        if entry.newest_id != newest_id or entry.expires <= now:
            # Something new was said (or time ran out): the old answer no longer holds.
            del self._items[key]
            return None
        self.hits += 1
        return entry.judgment

    def put(
        self,
        channel_id: str,
        conversation: str,
        newest_id: str,
        judgment: LLMJudgment,
        now: datetime,
    ) -> timedelta:
        ttl = lifetime(judgment.confidence)
        if len(self._items) >= self.capacity:
            oldest = min(self._items, key=lambda k: self._items[k].expires)
            del self._items[oldest]
        self._items[(channel_id, conversation)] = _Entry(judgment, newest_id, now + ttl)
        return ttl

    def invalidate(self, channel_id: str, conversation: str) -> None:
        self._items.pop((channel_id, conversation), None)
