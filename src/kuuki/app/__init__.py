"""The composition root: `build` wires store, models, memory, the decision pipeline and
the engine into an `App` (kuuki.run hands it to the front-ends: `kuuki chat`, `kuuki run`);
`heap` tunes the collector for a long-running process.
"""

from kuuki.app.build import (
    App,
    PromptDumper,
    build_app,
    build_toolbox,
    judge_mode_for,
    make_llm,
    model_languages,
    prompt_budget,
    reply_guard,
    tools_off,
)

__all__ = [
    "App",
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
