"""graphmem: an embedded, graph-centric memory store for AI agents."""

from ._embed import Embedder, HashingEmbedder, MiniLMEmbedder, OllamaEmbedder
from ._errors import (
    BackendUnavailableError,
    ConfirmationRequiredError,
    ConflictError,
    EmbedderMismatchError,
    GraphmemError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyStoreError,
    RecordError,
    SchemaVersionError,
    StoreError,
    StoreLockedError,
)
from ._extract import OllamaExtractor, RuleExtractor
from ._extract._mixin import AddResult
from ._facade import MemoryStore
from ._input import MemoryInput
from ._lifecycle import (
    ArchiveResult,
    EvaluationResult,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
    evaluate_memory_lifecycle,
)
from ._models import (
    ChangeType,
    EventType,
    Kind,
    LifecycleEvent,
    Memory,
    Stats,
    Status,
    TriggeredBy,
    Version,
)
from ._recall import PRESETS, Explanation, Hit, RecallConfig
from ._settings import Settings
from ._store import Edge, Link, MergeResult

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "AddResult",
    "ArchiveResult",
    "BackendUnavailableError",
    "ChangeType",
    "ConfirmationRequiredError",
    "ConflictError",
    "Edge",
    "Embedder",
    "EmbedderMismatchError",
    "EvaluationResult",
    "EventType",
    "Explanation",
    "GraphmemError",
    "HashingEmbedder",
    "Hit",
    "InvalidInputError",
    "Kind",
    "LifecycleEvent",
    "LifecycleReport",
    "Link",
    "Memory",
    "MemoryInput",
    "MemoryStore",
    "MergeResult",
    "MiniLMEmbedder",
    "NotFoundError",
    "OllamaEmbedder",
    "OllamaExtractor",
    "PromoteResult",
    "ReadOnlyStoreError",
    "RecallConfig",
    "RecordError",
    "RestoreResult",
    "RuleExtractor",
    "SchemaVersionError",
    "Settings",
    "Stats",
    "Status",
    "StoreError",
    "StoreLockedError",
    "TriggeredBy",
    "Version",
    "evaluate_memory_lifecycle",
]
