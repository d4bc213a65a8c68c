"""What kuuki assumes of a model it was not told about: whether it is offered tools, the judge
mode, the languages it writes, and how long its prompts may be (the shipped SmolLM2-135M is
measured apart; docs/benchmarks.md)."""

from __future__ import annotations

from kuuki.llm.base import LLM
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.llm.stub import StubLLM
from kuuki.prompts import LANGUAGES
from kuuki.settings import LLMSettings

__all__ = ["judge_mode_for", "model_languages", "prompt_budget", "tools_off"]


def tools_off(s: LLMSettings, llm: LLM | None) -> str | None:
    """Why the main model is not offered tools, or None when it is.

    ``llm.tools = auto`` offers them to every model but the shipped SmolLM2-135M, which was
    measured unable to choose a tool sensibly through the grammar-constrained call format
    (docs/benchmarks.md, "Tools"); ``on`` offers them anyway, ``off`` never.
    """
    if s.tools == "off":
        return "switched off (llm.tools = off)"
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if s.tools == "auto" and isinstance(inner, EmbeddedLLM) and inner.shipped:
        return ("the shipped SmolLM2-135M cannot choose tools reliably (docs/benchmarks.md); "
                "set llm.tools = on to try it anyway")
    return None


def judge_mode_for(mode: str, judge_llm: LLM | None) -> str:
    """The judge mode in effect: ``auto`` is ``hybrid``, but ``rules`` when the judge's model
    is the shipped SmolLM2-135M, whose judgments made the scenario suite's decisions worse
    than the local stage alone (docs/decisions.md, docs/benchmarks.md), or the counting
    `stub`, whose answers are all "do nothing" (`kuuki bench judge` asks for hybrid)."""
    if mode != "auto":
        return mode
    inner = judge_llm.inner if isinstance(judge_llm, ScheduledLLM) else judge_llm
    if isinstance(inner, EmbeddedLLM) and inner.shipped:
        return "rules"
    if isinstance(inner, StubLLM):  # it answers "do nothing" to everything: no judgment
        return "rules"
    return "hybrid"


def model_languages(s: LLMSettings, llm: LLM | None) -> frozenset[str]:
    """The languages the model writes: the setting, or what is known of it.

    The shipped SmolLM2-135M writes English; asked for Japanese it writes Japanese
    characters that are no Japanese (tests/guard/corpus), which the guard cannot always
    tell from the real thing. Any other model is trusted with both.
    """
    if s.languages:
        return frozenset(s.languages)
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if isinstance(inner, EmbeddedLLM) and inner.shipped:
        return frozenset({"en"})
    return frozenset(LANGUAGES)


def prompt_budget(s: LLMSettings, llm: LLM | None) -> int | None:
    """How many prompt tokens a model gets: the setting, or what its kind reads quickly.

    The shipped SmolLM2-135M reads about 200 prompt tokens a second on two cores, so its
    prompts are kept near 450 tokens (a reply in ~3 s); another local GGUF gets 1,500; a
    server is not limited here (its own context limit applies).
    """
    if s.prompt_tokens:
        return s.prompt_tokens
    inner = llm.inner if isinstance(llm, ScheduledLLM) else llm
    if isinstance(inner, EmbeddedLLM):
        return 450 if inner.shipped else 1500
    return None
