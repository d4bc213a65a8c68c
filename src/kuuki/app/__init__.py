"""The composition root: `build` wires store, models, memory, the decision pipeline and
the engine into an `App` (kuuki.run hands it to the front-ends: `kuuki chat`, `kuuki run`);
`models` holds what is assumed of a model the settings do not describe; `heap` tunes the
collector for a long-running process.
"""

from kuuki.app.build import (
    FROM_SETTINGS,
    App,
    FromSettings,
    PromptDumper,
    build_app,
    build_toolbox,
    make_llm,
    reply_guard,
)
from kuuki.app.models import judge_mode_for, model_languages, prompt_budget, tools_off

__all__ = [
    "FROM_SETTINGS",
    "App",
    "FromSettings",
    "PromptDumper",
    "build_app",
    "build_toolbox",
    "judge_mode_for",
    "make_llm",
    "model_languages",
    "prompt_budget",
    "reply_guard",
    "tools_off",
]
