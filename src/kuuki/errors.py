"""Every exception kuuki raises, in one tree.

    KuukiError
    ├── ConfigError          a setting is missing or wrong (names the key and what is allowed)
    ├── TranscriptError      a transcript line cannot be read (names file and line)
    ├── StoreError           the database cannot be opened, migrated or written
    │   └── IntakeUnavailable  events cannot be made durable now: do not acknowledge them
    └── LLMError             an LLM call failed; callers fall back to their documented default
        ├── LLMTimeout
        ├── LLMUnavailable   unreachable, refused, an answer that is no completion, a 429
        │                    (``retry_after``), or the circuit breaker is open
        └── LLMBadOutput     the model's text is empty or does not match the requested schema

Errors become user messages only at the CLI and platform edges; inside, they travel as
these types, translated from library exceptions with ``raise … from exc``.
"""

from __future__ import annotations


class KuukiError(Exception):
    pass


class ConfigError(KuukiError):
    """`key` as the user wrote it (env name or TOML key); `source` where it came from."""

    def __init__(self, key: str, problem: str, *, source: str = "") -> None:
        where = f" ({source})" if source else ""
        super().__init__(f"setting {key}{where}: {problem}")
        self.key = key
        self.problem = problem
        self.source = source


class TranscriptError(KuukiError):
    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class StoreError(KuukiError):
    pass


class IntakeUnavailable(StoreError):
    """The store could not take an event in (within the intake's patience): the platform
    must not be told it arrived, so that it delivers it again."""


class LLMError(KuukiError):
    pass


class LLMTimeout(LLMError):
    pass


class LLMUnavailable(LLMError):
    """``retry_after``: seconds the service asked us to wait (a 429's Retry-After), if any."""

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMInterrupted(LLMUnavailable):
    """The call was stopped on purpose: for a more urgent call, or at shutdown. Not a
    failure of the model (the breaker does not count it, memory jobs do not warn)."""


class LLMBadOutput(LLMError):
    pass
