"""The models the settings name (`make_llm`), each put behind one door (`scheduled_llms`):
the composition root (kuuki.app.build) makes them with these."""

from __future__ import annotations

from kuuki.clock import Clock
from kuuki.errors import ConfigError
from kuuki.llm.base import LLM, Warmable
from kuuki.llm.breaker import CircuitBreaker
from kuuki.llm.registry import create
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.settings import LLMSettings

__all__ = ["make_llm", "scheduled_llms"]


def make_llm(s: LLMSettings) -> LLM | None:
    """The LLM a setting names; None for `none` (generation and LLM judging off)."""
    if s.backend == "none":
        return None
    if s.backend == "embedded":
        return create("embedded", model_path=s.model_path or None, timeout_s=s.timeout_s)
    if s.backend == "openai":
        if not s.model:
            raise ConfigError("KUUKI_LLM_MODEL", "the openai back-end needs a model name")
        return create(
            "openai",
            model=s.model,
            base_url=s.base_url or "https://api.openai.com/v1",
            api_key=s.api_key or None,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
        )
    return create(s.backend)  # stub, or a plugin's back-end (kuuki.llm.registry)


def scheduled_llms(
    main: LLM | None, judge: LLM | None, clock: Clock
) -> tuple[LLM | None, LLM | None, dict[int, ScheduledLLM]]:
    """Put each distinct model behind one door: a priority queue (replies first), a
    circuit breaker for every purpose, and callers' deadlines on ``clock``.

    The judge and the main model share the door when they are the same model. A local
    model runs one call at a time; a server is allowed a few calls at once.
    """
    made: dict[int, ScheduledLLM] = {}

    def wrap(llm: LLM | None) -> LLM | None:
        if llm is None or isinstance(llm, ScheduledLLM):
            return llm
        if id(llm) not in made:
            local = isinstance(llm, Warmable)
            made[id(llm)] = ScheduledLLM(
                llm, concurrency=1 if local else 4, clock=clock, breaker=CircuitBreaker(clock)
            )
        return made[id(llm)]

    m, j = wrap(main), wrap(judge)
    by_wrapper = {id(w): w for w in made.values()}
    return m, j, by_wrapper
