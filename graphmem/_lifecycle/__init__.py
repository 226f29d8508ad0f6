"""The lifecycle's algorithms: the archivist's rules, centrality, summaries, and the
results they report. The lifecycle manager that applies them to a store is
``graphmem._store._lifecycle``."""

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
