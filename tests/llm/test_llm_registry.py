from __future__ import annotations

import pytest

from kuuki.errors import ConfigError
from kuuki.llm import registry
from kuuki.llm.embedded import EmbeddedLLM
from kuuki.llm.openai_compat import OpenAICompatLLM
from kuuki.llm.stub import StubLLM


def test_built_ins_are_registered() -> None:
    assert {"embedded", "openai", "stub"} <= set(registry.names())


async def test_create_passes_settings_to_the_factory() -> None:
    assert isinstance(registry.create("stub", name="counter"), StubLLM)
    embedded = registry.create("embedded", model_path="/models/mine.gguf", timeout_s=3)
    assert isinstance(embedded, EmbeddedLLM) and embedded.name == "mine"
    remote = registry.create("openai", model="m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(remote, OpenAICompatLLM)
    await remote.aclose()


def test_unknown_names_and_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown back-end"):
        registry.create("nope")
    with pytest.raises(ConfigError, match=r"llm\.stub"):
        registry.create("stub", temperature_typo=1)


def test_a_plugin_registers_like_a_built_in() -> None:
    class Mine(StubLLM):
        pass

    registry.register("mine", lambda **config: Mine(**config))
    try:
        assert isinstance(registry.create("mine"), Mine)
    finally:
        registry.REGISTRY.factories.pop("mine")


def test_an_entry_point_plugin_is_offered_by_settings_and_the_cli(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess
    import sys

    from kuuki.settings import llm_backends, load_settings

    class Plugin(StubLLM):
        pass

    class Entry:
        def load(self) -> object:
            return lambda register: register("plugged", lambda **c: Plugin(**c))

    monkeypatch.setattr("kuuki.registry.entry_points", lambda group: [Entry()])
    monkeypatch.setattr(registry.REGISTRY, "plugins_loaded", False)
    try:
        assert "plugged" in llm_backends()
        settings = load_settings(env={"KUUKI_LLM": "plugged"}, path=None)
        assert settings.llm.backend == "plugged"
        assert isinstance(registry.create("plugged"), Plugin)
    finally:
        registry.REGISTRY.factories.pop("plugged", None)
    # The scripted test double is never offered to users: only importing kuuki.testing
    # registers it (a fresh interpreter, so this test's imports do not count).
    code = "from kuuki.settings import llm_backends; print(' '.join(llm_backends()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "scripted" not in out and {"none", "embedded", "openai", "stub"} <= set(out)
