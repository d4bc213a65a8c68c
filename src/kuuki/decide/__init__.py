"""The speak decision as one ordered list of stages (kuuki.decide.pipeline)."""

from .pipeline import JudgeStage, Pipeline, build_pipeline
from .types import Case, Outcome, Pass, Proposal, Speak, StageResult

__all__ = [
    "Case",
    "JudgeStage",
    "Outcome",
    "Pass",
    "Pipeline",
    "Proposal",
    "Speak",
    "StageResult",
    "build_pipeline",
]
