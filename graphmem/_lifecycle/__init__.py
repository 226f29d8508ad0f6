"""The lifecycle: the archivist's rules and transitions, and the lifecycle manager."""

from ._results import (
    ArchiveResult,
    EvaluationMetrics,
    EvaluationResult,
    JobCounts,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
)
from ._rules import evaluate_memory_lifecycle

__all__ = [
    "ArchiveResult",
    "EvaluationMetrics",
    "EvaluationResult",
    "JobCounts",
    "LifecycleReport",
    "PromoteResult",
    "RestoreResult",
    "evaluate_memory_lifecycle",
]
