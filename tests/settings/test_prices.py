"""`llm.price_per_1k_tokens` (`KUUKI_LLM_PRICE_PER_1K`): one price for every model or a
table per model, as `kuuki stats` reads it; a bad one names the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuuki.errors import ConfigError
from kuuki.settings import load_settings


@pytest.mark.parametrize(("env", "toml", "prices"), [
    ("0.5", None, {"*": 0.5}),
    ("big=2, qwen2.5:3b=0", None, {"big": 2.0, "qwen2.5:3b": 0.0}),
    (None, 'price_per_1k_tokens = { "gpt-4o-mini" = 0.15 }', {"gpt-4o-mini": 0.15}),
    (None, "price_per_1k_tokens = 1", {"*": 1.0}),
])
def test_prices_are_a_number_or_a_table(
    env: str | None, toml: str | None, prices: dict[str, float], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if env is not None:
        monkeypatch.setenv("KUUKI_LLM_PRICE_PER_1K", env)
    config = tmp_path / "kuuki.toml"
    config.write_text(f"[llm]\n{toml or ''}\n", encoding="utf-8")
    assert load_settings(path=str(config)).llm.price_per_1k_tokens == prices


def test_a_bad_price_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUUKI_LLM_PRICE_PER_1K", "cheap")
    with pytest.raises(ConfigError, match=r"KUUKI_LLM_PRICE_PER_1K.*price per 1,000 tokens"):
        load_settings()
    monkeypatch.setenv("KUUKI_LLM_PRICE_PER_1K", "big=-1")
    with pytest.raises(ConfigError, match=r"KUUKI_LLM_PRICE_PER_1K.*from 0"):
        load_settings()
