"""Every setting, read once at the edge (env + `kuuki.toml` + flags), validated, and passed
down as values. The loader and the `Settings` type live in `core`; how one raw value
becomes typed in `values`; the reply tools' settings in `tools`.
"""

from kuuki.settings.core import (
    LLMSettings,
    Persona,
    Settings,
    apply_values,
    describe,
    llm_backends,
    load_settings,
    typed_values,
    validate,
)

__all__ = [
    "LLMSettings",
    "Persona",
    "Settings",
    "apply_values",
    "describe",
    "llm_backends",
    "load_settings",
    "typed_values",
    "validate",
]
