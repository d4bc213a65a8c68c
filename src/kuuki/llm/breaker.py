"""A circuit breaker for LLM calls.

When the model service is down every call would wait for its timeout; after a few
consecutive failures the breaker "opens" and calls fail at once for a cool-down, then one
trial call is let through ("half-open"): success closes the circuit, failure re-opens it.
A service that says how long to stay away (a 429's Retry-After, carried by
`LLMUnavailable.retry_after`) opens the circuit at once, for that long.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Protocol

from kuuki.errors import LLMBadOutput, LLMError, LLMUnavailable
from kuuki.llm.base import LLM, ChatMessage, Completion


class MonotonicClock(Protocol):
    """Anything with a monotonic seconds counter; `kuuki.clock.Clock` qualifies."""

    def monotonic(self) -> float: ...


class CircuitOpen(LLMUnavailable):
    """Raised instead of calling the model while the circuit is open."""


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failures, for ``cooldown_s`` seconds."""

    def __init__(
        self, clock: MonotonicClock, *, failure_threshold: int = 3, cooldown_s: float = 60.0
    ) -> None:
        self._clock = clock
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self.failures = 0
        self._opened_at: float | None = None
        self._open_for = cooldown_s
        self._trial_running = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock.monotonic() - self._opened_at < self._open_for:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    def allow(self) -> bool:
        """Whether a call may go ahead now; in half-open state only one at a time."""
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.OPEN or self._trial_running:
            return False
        self._trial_running = True
        return True

    def record_success(self) -> None:
        self.failures = 0
        self._opened_at = None
        self._trial_running = False

    def record_aborted(self) -> None:
        """A call ended without telling anything about the service (e.g. cancelled)."""
        self._trial_running = False

    def record_failure(self, *, retry_after: float | None = None) -> None:
        """One failed call; ``retry_after`` (seconds the service asked for) opens the
        circuit at once for that long."""
        self.failures += 1
        if retry_after is not None and retry_after > 0:
            self._opened_at = self._clock.monotonic()
            self._open_for = retry_after
        elif self._trial_running or self.failures >= self.failure_threshold:
            self._opened_at = self._clock.monotonic()
            self._open_for = self.cooldown_s
        self._trial_running = False


class GuardedLLM:
    """An `LLM` that consults a `CircuitBreaker` around another one.

    While the circuit is open, `complete` raises `CircuitOpen` without calling the model
    (`call_llm` records that as "skipped"). A bad answer counts as success for the
    breaker: the service is up, the model just wrote nonsense.
    """

    def __init__(self, inner: LLM, breaker: CircuitBreaker) -> None:
        self.inner = inner
        self.breaker = breaker
        self.name = inner.name

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> Completion:
        if not self.breaker.allow():
            raise CircuitOpen("circuit open")
        try:
            result = await self.inner.complete(
                messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature
            )
        except LLMBadOutput:
            self.breaker.record_success()
            raise
        except LLMUnavailable as exc:
            self.breaker.record_failure(retry_after=exc.retry_after)
            raise
        except LLMError:
            self.breaker.record_failure()
            raise
        except BaseException:
            # Cancelled, or a bug in the back-end: not the service's fault, but the
            # half-open trial slot must not stay taken.
            self.breaker.record_aborted()
            raise
        self.breaker.record_success()
        return result
