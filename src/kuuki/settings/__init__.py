"""Every setting, read once at the edge (env + `kuuki.toml` + flags), validated, and passed
down as values. `Settings` and the table of every setting live in `core`, the persona and
LLM values in `schema`, reading and checking them in `loader`; how one raw value becomes typed
in `values`; the reply tools' settings in `tools`; database URLs in `urls`.
"""

from kuuki.settings.core import Settings, llm_backends
from kuuki.settings.loader import (
    apply_values,
    check_dashboard,
    describe,
    load_settings,
    loopback,
    remember_secrets,
    typed_values,
    validate,
)
from kuuki.settings.schema import LLMSettings, Persona

__all__ = [
    "LLMSettings",
    "Persona",
    "Settings",
    "apply_values",
    "check_dashboard",
    "describe",
    "llm_backends",
    "load_settings",
    "loopback",
    "remember_secrets",
    "typed_values",
    "validate",
]
