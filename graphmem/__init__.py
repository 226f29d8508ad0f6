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
from ._facade import MemoryStore
from ._input import MemoryInput
from ._models import ChangeType, EventType, Kind, LifecycleEvent, Memory, Stats, Status, Version
from ._settings import Settings
from ._store import Edge, Link, MergeResult

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "ChangeType",
    "ConfirmationRequiredError",
    "ConflictError",
    "Edge",
    "Embedder",
    "EmbedderMismatchError",
    "EventType",
    "GraphmemError",
    "HashingEmbedder",
    "InvalidInputError",
    "Kind",
    "LifecycleEvent",
    "Link",
    "Memory",
    "MemoryInput",
    "MemoryStore",
    "MergeResult",
    "MiniLMEmbedder",
    "NotFoundError",
    "OllamaEmbedder",
    "ReadOnlyStoreError",
    "RecordError",
    "SchemaVersionError",
    "Settings",
    "Stats",
    "Status",
    "StoreError",
    "StoreLockedError",
    "Version",
]
