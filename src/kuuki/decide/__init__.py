"""The speak decision as one ordered list of stages (kuuki.decide.pipeline)."""

from kuuki.decide.pipeline import JudgeStage, Pipeline, build_pipeline
from kuuki.decide.types import Case, Outcome, Pass, Proposal, Speak, StageResult

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
