"""Building the decision pipeline with its LLM stage: what `build_app` wires in.

hybrid (the default): the local stages decide the clear cases, the LLM judge only the
unclear band; ``llm``: every settled ambient message goes to the LLM judge (the seeds'
behaviour); ``rules``: no model, the local stage answers the unclear band itself.
"""

from __future__ import annotations

from kuuki.clock import Clock
from kuuki.decide.judge.llm_stage import LLMStage
from kuuki.decide.pipeline import Pipeline, build_pipeline
from kuuki.decide.stages.channel_policy import PolicyOf
from kuuki.embed import Embedder
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM
from kuuki.memory.context import ContextBuilder
from kuuki.ports import MemoryProvider, PromptDump
from kuuki.prompts import Prompts
from kuuki.settings import Settings


def build_judge(
    settings: Settings,
    llm: LLM | None,
    clock: Clock,
    *,
    embedder: Embedder | None = None,
    memory: MemoryProvider | None = None,
    dump: PromptDump | None = None,
    builder: ContextBuilder | None = None,
    scaffold: Scaffold | None = None,
    policy_of: PolicyOf | None = None,
) -> Pipeline:
    """The pipeline for ``settings.judge_mode``, asking ``llm`` in its LLM stage."""
    stage: LLMStage | None = None
    if llm is not None and settings.judge_mode != "rules":
        prompts = Prompts(settings.persona.default_language, settings.prompts_dir or None)
        builder = builder or ContextBuilder(settings.persona, prompts)
        stage = LLMStage(
            llm, clock, builder.prompts, builder, memory=memory, dump=dump, scaffold=scaffold
        )
    return build_pipeline(settings, llm_stage=stage, embedder=embedder, policy_of=policy_of)
