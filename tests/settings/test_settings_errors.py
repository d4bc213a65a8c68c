"""Settings errors name the key the way the user wrote it, and where it came from."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kuuki.errors import ConfigError
from kuuki.llm import registry
from kuuki.llm.stub import StubLLM
from kuuki.settings import load_settings


def toml(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "kuuki.toml"
    cfg.write_text(text, encoding="utf-8")
    return cfg


def error_for(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_settings(env=env or {}, path=toml(tmp_path, text))
    return info.value


def test_a_toml_value_is_named_by_its_toml_key_and_file(tmp_path: Path) -> None:
    err = error_for(tmp_path, '[persona]\nlanguage = "fr"\n')
    assert err.key == "persona.language"
    assert str(err) == (
        f"setting persona.language (from {tmp_path / 'kuuki.toml'}): "
        "expected one of ja, en, got 'fr'"
    )
    assert "KUUKI_LANGUAGE" not in str(err)


def test_an_environment_value_is_named_by_its_environment_name() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"KUUKI_LANGUAGE": "fr"})
    assert str(info.value) == (
        "setting KUUKI_LANGUAGE (from the environment): expected one of ja, en, got 'fr'"
    )


def test_the_environment_wins_and_is_then_the_one_named(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[tuning]\nCHANNEL_BUFFER_SIZE = 20\n", {"CHANNEL_BUFFER_SIZE": "0"})
    assert err.key == "CHANNEL_BUFFER_SIZE" and err.source == "from the environment"


def test_a_check_across_settings_names_the_key_as_written(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[tuning]\nJUDGE_LLM_THRESHOLD_LOW = 90\n")
    assert err.key == "tuning.JUDGE_LLM_THRESHOLD_LOW" and "kuuki.toml" in err.source
    assert "below JUDGE_LLM_THRESHOLD_HIGH (80)" in str(err)


@pytest.mark.parametrize(
    ("text", "key", "suggestion"),
    [
        ("[tuning]\nCHANEL_BUFFER_SIZE = 20\n", "tuning.CHANEL_BUFFER_SIZE", "tuning.CHANNEL_BUFFER_SIZE"),
        ("CHANNEL_BUFFER_SIZE = 20\n", "CHANNEL_BUFFER_SIZE", "tuning.CHANNEL_BUFFER_SIZE"),
        ("[persona]\nnmae = 'x'\n", "persona.nmae", "persona.name"),
        ("[persona]\nalias = ['x']\n", "persona.alias", "persona.aliases"),
        ("[store]\nuri = 'sqlite:///x.db'\n", "store.uri", "store.url"),
    ],
)
def test_an_unknown_key_gets_the_closest_known_name(
    tmp_path: Path, text: str, key: str, suggestion: str
) -> None:
    err = error_for(tmp_path, text)
    assert err.key == key
    assert str(err).endswith(f"unknown setting; did you mean {suggestion}?")


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[persona]\naliases = "kuu"\n', "persona.aliases", "expected a list of texts"),
        ("[persona]\nkeywords = [1, 2]\n", "persona.keywords", "expected a list of texts"),
        ("[persona]\nname = 5\n", "persona.name", "expected text (in quotes), got the number 5"),
        ('[tuning]\nCHANNEL_BUFFER_SIZE = "50"\n', "tuning.CHANNEL_BUFFER_SIZE", "got text '50'"),
        ("[tuning]\nCHANNEL_BUFFER_SIZE = 2.5\n", "tuning.CHANNEL_BUFFER_SIZE", "whole number"),
        ('[tuning]\nREFLECTION_ENABLED = "yes"\n', "tuning.REFLECTION_ENABLED", "true or false (without quotes)"),
        ('[tuning]\nFAMILIARITY_THRESHOLDS = "6,31,101"\n', "tuning.FAMILIARITY_THRESHOLDS", "increasing counts"),
        ('[channels]\ndms = "no"\n', "channels.dms", "true or false"),
        ("[llm]\ntimeout_s = true\n", "llm.timeout_s", "expected a number"),
        ("[persona.name]\nfirst = 'x'\n", "persona.name", "got a table"),
    ],
)
def test_every_toml_value_is_type_checked(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    err = error_for(tmp_path, text)
    assert err.key == key and problem in str(err)


def test_right_types_in_toml_and_text_in_the_environment_are_accepted(tmp_path: Path) -> None:
    cfg = toml(
        tmp_path,
        '[persona]\naliases = ["くう"]\n[tuning]\nFAMILIARITY_THRESHOLDS = [3, 10, 50]\n'
        "REFLECTION_ENABLED = false\nFACT_DECAY_HALF_LIFE_DAYS = 7\n",
    )
    s = load_settings(env={"JUDGE_KEYWORDS": "rust, async", "KUUKI_DMS": "no"}, path=cfg)
    assert s.persona.aliases == ("くう",) and s.persona.keywords == ("rust", "async")
    assert s.FAMILIARITY_THRESHOLDS == (3, 10, 50) and s.REFLECTION_ENABLED is False
    assert s.FACT_DECAY_HALF_LIFE_DAYS == 7.0 and s.dms_enabled is False
    assert s.key_of("persona.aliases") == ("persona.aliases", f"from {cfg}")
    assert s.key_of("dms_enabled") == ("KUUKI_DMS", "from the environment")
    assert s.key_of("store_url") == ("KUUKI_STORE_URL", "")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://root:hunter2@db/kuuki", "unsupported database 'mysql'"),
        ("just-a-path.db", "is not a URL"),
        ("sqlite:////definitely/not/here/x.db", "does not exist"),
    ],
)
def test_a_store_url_error_names_the_setting(tmp_path: Path, url: str, problem: str) -> None:
    err = error_for(tmp_path, f'[store]\nurl = "{url}"\n')
    assert err.key == "store.url" and problem in str(err) and "hunter2" not in str(err)
    with pytest.raises(ConfigError) as info:
        load_settings(env={"KUUKI_STORE_URL": url})
    assert info.value.key == "KUUKI_STORE_URL" and "hunter2" not in str(info.value)


def test_a_misspelt_environment_variable_gets_a_warning_with_the_right_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="kuuki.settings"):
        s = load_settings(env={"CHANEL_BUFFER_SIZE": "20", "PATH": "/usr/bin", "HOME": "/x"})
    assert s.CHANNEL_BUFFER_SIZE == 50
    assert [r.getMessage() for r in caplog.records] == [
        "environment variable CHANEL_BUFFER_SIZE is not a kuuki setting; "
        "did you mean CHANNEL_BUFFER_SIZE?"
    ]


def test_llm_back_ends_come_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"KUUKI_LLM": "myplugin"})
    assert "myplugin" in str(info.value) and "embedded" in str(info.value)
    monkeypatch.setitem(registry.REGISTRY.factories, "myplugin", lambda **_: StubLLM())
    assert load_settings(env={"KUUKI_LLM": "myplugin"}).llm.backend == "myplugin"
    assert load_settings(env={"KUUKI_JUDGE_LLM": "none"}).judge.backend == "none"
