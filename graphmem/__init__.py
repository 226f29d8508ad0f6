"""graphmem: an embedded, graph-centric memory store for AI agents."""

from __future__ import annotations

import os as _os
import typing as _typing

from ._api import MemoryAPI
from ._derive import embedding_text, session_contexts
from ._embed import (
    ContextPooled,
    E5Embedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OllamaEmbedder,
    embedder_from_spec,
    query_vectors,
)
from ._engine import EntityRecord as Entity
from ._engine import FactRecord as Fact
from ._engine import Link
from ._engine import MentionRecord as Mention
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
    UnsupportedError,
)
from ._facade import MemoryStore
from ._input import MemoryInput
from ._lazy import lazy_names as _lazy_names
from ._lifecycle import (
    ArchiveResult,
    EvaluationResult,
    LifecycleReport,
    PromoteResult,
    RestoreResult,
    evaluate_memory_lifecycle,
)
from ._models import (
    AddResult,
    ChangeType,
    Edge,
    EventType,
    Kind,
    LifecycleEvent,
    Memory,
    MergeResult,
    Stats,
    Status,
    TriggeredBy,
    Version,
)
from ._recall import PRESETS, Explanation, Hit, RecallConfig
from ._settings import Settings
from ._time import format_iso, parse_iso

if _typing.TYPE_CHECKING:
    from ._extract import OllamaExtractor, RuleExtractor, extract_entities
    from ._learn import ForecastInfo, LearnReport, RankerInfo
    from .client import Client

# imported on first use: a process that recalls never loads the extractors or the
# learning's reports
__getattr__, __dir__ = _lazy_names(__name__, {
    **dict.fromkeys(("OllamaExtractor", "RuleExtractor", "extract_entities"), "._extract"),
    **dict.fromkeys(("ForecastInfo", "LearnReport", "RankerInfo"), "._learn")})

__version__ = "0.1.0"


def connect(url: str | _os.PathLike[str], *, token: str | None = None,
            timeout_s: float = 30.0, actor: str | None = None) -> Client:
    """A client of the graphmem sidecar at ``url``, or of the sidecar serving the database
    directory ``url`` (found, or started: how several processes share one store); see
    ``graphmem.client.connect``, imported on first use: a process that never talks HTTP
    does not load the HTTP stack."""
    from .client import connect as _connect

    return _connect(url, token=token, timeout_s=timeout_s, actor=actor)

__all__ = [
    "PRESETS",
    "AddResult",
    "ArchiveResult",
    "BackendUnavailableError",
    "ChangeType",
    "ConfirmationRequiredError",
    "ConflictError",
    "ContextPooled",
    "E5Embedder",
    "Edge",
    "Embedder",
    "EmbedderMismatchError",
    "Entity",
    "EvaluationResult",
    "EventType",
    "Explanation",
    "Fact",
    "ForecastInfo",
    "GraphmemError",
    "HashingEmbedder",
    "Hit",
    "InvalidInputError",
    "Kind",
    "LearnReport",
    "LifecycleEvent",
    "LifecycleReport",
    "Link",
    "Memory",
    "MemoryAPI",
    "MemoryInput",
    "MemoryStore",
    "Mention",
    "MergeResult",
    "MiniLMEmbedder",
    "NotFoundError",
    "OllamaEmbedder",
    "OllamaExtractor",
    "PromoteResult",
    "RankerInfo",
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
    "UnsupportedError",
    "Version",
    "connect",
    "embedder_from_spec",
    "embedding_text",
    "evaluate_memory_lifecycle",
    "extract_entities",
    "format_iso",
    "parse_iso",
    "query_vectors",
    "session_contexts",
]
