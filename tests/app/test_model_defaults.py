"""Defaults that follow the model: the judge mode and the prompt budget."""

from __future__ import annotations

from pathlib import Path

from kuuki.app import judge_mode_for, model_languages, prompt_budget
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.scheduler import ScheduledLLM
from kuuki.settings import LLMSettings
from kuuki.testing.llm import ScriptedLLM


def test_the_shipped_model_does_not_judge_by_default(tmp_path: Path) -> None:
    shipped = ScheduledLLM(EmbeddedLLM())  # not loaded: construction reads no file
    own = EmbeddedLLM(tmp_path / "own.gguf")
    assert judge_mode_for("auto", shipped) == "rules"
    assert judge_mode_for("auto", own) == "hybrid"
    assert judge_mode_for("auto", ScriptedLLM()) == "hybrid"
    assert judge_mode_for("auto", None) == "hybrid"
    assert judge_mode_for("llm", shipped) == "llm"  # a mode set by hand is kept


def test_prompts_are_sized_for_the_model(tmp_path: Path) -> None:
    s = LLMSettings()
    assert prompt_budget(s, ScheduledLLM(EmbeddedLLM())) == 450
    assert prompt_budget(s, EmbeddedLLM(tmp_path / "own.gguf")) == 1500
    assert prompt_budget(s, ScriptedLLM()) is None
    assert prompt_budget(LLMSettings(prompt_tokens=900), ScriptedLLM()) == 900


def test_the_shipped_model_is_not_asked_for_japanese(tmp_path: Path) -> None:
    s = LLMSettings()
    assert model_languages(s, ScheduledLLM(EmbeddedLLM())) == {"en"}
    assert model_languages(s, EmbeddedLLM(tmp_path / "own.gguf")) == {"ja", "en"}
    assert model_languages(s, ScriptedLLM()) == {"ja", "en"}
    assert model_languages(LLMSettings(languages=("ja", "en")), EmbeddedLLM()) == {"ja", "en"}
