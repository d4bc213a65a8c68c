from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.errors import ConfigError
from kuuki.settings import describe, load_settings


def test_defaults_need_no_configuration() -> None:
    s = load_settings(env={})
    assert s.persona.name == "Kuu"
    assert s.llm.backend == "embedded"
    assert s.JUDGE_LLM_THRESHOLD_HIGH == 80 and s.JUDGE_LLM_THRESHOLD_LOW == 20
    assert s.CHANNEL_BUFFER_SIZE == 50 and s.CHANNEL_BUFFER_TTL_MINUTES == 30
    assert s.EAVESDROP_MIN_INTERVENTION_INTERVAL_MINUTES == 10
    assert s.judge_mode == "auto"  # hybrid, or rules with the shipped model (kuuki.app)
    assert s.judge is s.llm


def test_toml_then_env_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "kuuki.toml"
    cfg.write_text(
        '[persona]\nname = "Mio"\naliases = ["みお"]\nlanguage = "ja"\nkeywords = ["rust"]\n'
        '[tuning]\nCHANNEL_BUFFER_SIZE = 20\n[judge]\nmode = "rules"\n',
        encoding="utf-8",
    )
    s = load_settings(env={"CHANNEL_BUFFER_SIZE": "30"}, path=cfg)
    assert s.persona.name == "Mio" and s.persona.aliases == ("みお",)
    assert s.persona.language == "ja" and s.persona.keywords == ("rust",)
    assert s.CHANNEL_BUFFER_SIZE == 30
    assert s.judge_mode == "rules"


def test_judge_model_is_separate() -> None:
    s = load_settings(
        env={
            "KUUKI_LLM": "openai",
            "KUUKI_LLM_BASE_URL": "http://127.0.0.1:9/v1",
            "KUUKI_LLM_MODEL": "big",
            "EAVESDROP_JUDGE_MODEL": "small",
        }
    )
    assert s.llm.model == "big"
    assert s.judge.model == "small" and s.judge.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("env", "key", "allowed"),
    [
        ({"KUUKI_LANGUAGE": "fr"}, "KUUKI_LANGUAGE", "ja, en"),
        ({"KUUKI_JUDGE_MODE": "always"}, "KUUKI_JUDGE_MODE", "hybrid, llm, rules"),
        ({"CHANNEL_BUFFER_SIZE": "lots"}, "CHANNEL_BUFFER_SIZE", "whole number from 1"),
        ({"JUDGE_LLM_THRESHOLD_HIGH": "150"}, "JUDGE_LLM_THRESHOLD_HIGH", "from 0 to 100"),
        ({"REFLECTION_ENABLED": "maybe"}, "REFLECTION_ENABLED", "true or false"),
        ({"KUUKI_LLM": "gpt"}, "KUUKI_LLM", "embedded"),
        ({"FAMILIARITY_THRESHOLDS": "5,3,1"}, "FAMILIARITY_THRESHOLDS", "increasing"),
        ({"JUDGE_LLM_THRESHOLD_LOW": "90"}, "JUDGE_LLM_THRESHOLD_LOW", "below"),
        ({"KUUKI_LLM": "openai"}, "KUUKI_LLM_BASE_URL", "base URL"),
        ({"KUUKI_LLM": "openai", "KUUKI_LLM_API_KEY": "k"}, "KUUKI_LLM_MODEL", "model name"),
    ],
)
def test_wrong_values_name_the_key_and_what_is_allowed(
    env: dict[str, str], key: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert info.value.key == key
    assert allowed in str(info.value)




def test_broken_toml_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "kuuki.toml"
    cfg.write_text("[persona\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(env={}, path=cfg)


def test_secrets_are_masked_when_described() -> None:
    s = load_settings(
        env={
            "KUUKI_LLM": "openai", "KUUKI_LLM_MODEL": "m", "KUUKI_LLM_API_KEY": "sk-secret",
            "DISCORD_TOKEN": "tok",
        }
    )
    shown = repr(describe(s)) + repr(s)
    assert "sk-secret" not in shown and "tok'" not in shown
