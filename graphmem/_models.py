"""graphmem's value types: memories, their versions, lifecycle events, store statistics and
what a conversation added (immutable pydantic models the store hands out and never
keeps), the edges and merge results of a batch write, and the small integer codes the
in-memory indexes keep for statuses and kinds.

Imports nothing of graphmem's but its errors: every floor may use these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ._errors import InvalidInputError

__all__ = [
    "KIND_CODE",
    "STATUS_CODE",
    "AddResult",
    "ChangeType",
    "Edge",
    "EventType",
    "Kind",
    "LifecycleEvent",
    "Memory",
    "MergeResult",
    "Stats",
    "Status",
    "TriggeredBy",
    "Version",
    "parse_change_type",
    "parse_kind",
    "parse_status",
]


class Kind(StrEnum):
    """What a memory is about (UMP kinds)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    IDENTITY = "identity"
    NOTE = "note"


class Status(StrEnum):
    """Where a memory is in its lifecycle.

    ``candidate`` memories wait for reinforcement, ``active`` ones are recalled,
    ``archived`` ones are kept for audit and export, ``tombstoned`` ones are deleted
    logically, ``forgotten`` ones were hard-deleted: only hashes remain.
    """

    CANDIDATE = "candidate"
    ACTIVE = "active"
    ARCHIVED = "archived"
    TOMBSTONED = "tombstoned"
    FORGOTTEN = "forgotten"


#: A status's code in the in-memory indexes (recall's, the learned features'), and a kind's.
STATUS_CODE = {s.value: i for i, s in enumerate(Status)}
KIND_CODE = {k.value: i for i, k in enumerate(Kind)}


class ChangeType(StrEnum):
    """Why a version row was written (the lifecycle model's types and the archivist's)."""

    CREATED = "created"
    CONFLICT_UPDATE = "conflict_update"
    MANUAL_EDIT = "manual_edit"
    IMPORTANCE_DECAY = "importance_decay"
    IMPORTANCE_BOOST = "importance_boost"
    ARCHIVED = "archived"
    PROMOTED = "promoted"
    RESTORED = "restored"
    TOMBSTONED = "tombstoned"
    FORGOTTEN = "forgotten"
    #: a weak candidate confirmed by a later conversation (it becomes active, or the
    #: statement that confirms it replaces it)
    REINFORCED = "reinforced"


class EventType(StrEnum):
    """Kinds of lifecycle transitions recorded in the audit log (the archivist's, and more)."""

    PROMOTE = "promote"
    ARCHIVE = "archive"
    DELETE = "delete"
    RESTORE = "restore"
    TOMBSTONE = "tombstone"
    SUPERSEDE = "supersede"
    ACTIVATE = "activate"
    EXPIRE = "expire"
    HOT = "hot"
    COOL = "cool"
    #: an ad-hoc Cypher write (``cypher(write=True)``): it bypasses the version history
    CYPHER_WRITE = "cypher_write"
    #: a reviewer's decision to leave a memory as it is (``keep``): nothing changes
    KEEP = "keep"
    #: retrieval feedback (useful or not) on a recalled memory; the learned ranker and
    #: the forecasts of need learn from these (the state does not change)
    FEEDBACK = "feedback"


class TriggeredBy(StrEnum):
    AUTO = "auto"
    MANUAL = "manual"


def parse_kind(value: Kind | str) -> Kind:
    """A kind, or an error that lists the kinds (the one place kinds are checked)."""
    try:
        return Kind(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown kind {value!r}; one of {', '.join(k.value for k in Kind)}",
            field="kind") from None


def parse_status(value: Status | str) -> Status:
    """A status, or an error that lists them."""
    try:
        return Status(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown status {value!r}; one of {', '.join(s.value for s in Status)}",
            field="status") from None


def parse_change_type(value: ChangeType | str) -> ChangeType:
    """A change type, or an error that lists them."""
    try:
        return ChangeType(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown change type {value!r}; one of {', '.join(c.value for c in ChangeType)}",
            field="reason") from None


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, use_enum_values=False)


class Memory(_Value):
    """One memory as stored: content, scope, times, lifecycle state and usage counters."""

    id: str
    kind: Kind = Kind.EPISODIC
    status: Status = Status.ACTIVE
    hot: bool = False
    subject: str | None = None
    text: str = ""
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    owner: str | None = None
    project: str | None = None
    visibility: str = "private"
    importance: float = 0.5
    original_importance: float = 0.5
    confidence: float = 1.0
    created: datetime
    modified: datetime
    observed: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    access_times: tuple[datetime, ...] = ()
    useful_count: int = 0
    ignored_count: int = 0
    superseded_by: tuple[str, ...] = ()
    session: str | None = None
    #: Text this memory is indexed with besides its own (its neighbours in a session):
    #: searchable, never shown as the memory.
    context: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    integrity: dict[str, Any] = Field(default_factory=dict)
    payload: str | None = None
    payload_hash: str | None = None
    text_sha256: str = ""
    version: int = 1
    centrality: float | None = None
    xref_count: int | None = None
    #: Fields of the source record that graphmem does not model, kept for round trips.
    extra: dict[str, Any] = Field(default_factory=dict)
    #: The time windows the text speaks of ("last Saturday", "in May 2023"), resolved
    #: against the memory's own time: starts and ends, pairwise.
    times_from: tuple[datetime, ...] = ()
    times_to: tuple[datetime, ...] = ()

    @property
    def is_current(self) -> bool:
        """True unless a newer memory supersedes this one."""
        return not self.superseded_by

    def short(self, width: int = 72) -> str:
        """Subject or text on one line, cut to ``width`` characters."""
        line = " ".join((self.subject or self.text).split())
        return line if len(line) <= width else line[: width - 1] + "…"


class Version(_Value):
    """An append-only history row of one memory (never updated; redacted by forget)."""

    id: str
    memory_id: str
    seq: int
    change_type: ChangeType
    at: datetime
    reason: str | None = None
    actor: str | None = None
    text: str | None = None
    subject: str | None = None
    text_sha256: str
    importance: float | None = None
    status: Status | None = None
    kind: Kind | None = None
    redacted: bool = False


class LifecycleEvent(_Value):
    """An audited lifecycle transition; fields and JSON names follow the archivist policy."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, use_enum_values=False
    )

    event_id: str
    memory_id: str
    event_type: EventType
    from_state: str
    to_state: str
    reason: str
    triggered_by: TriggeredBy
    agent_id: str
    timestamp: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class Stats(_Value):
    """Counts describing a store."""

    memories: int
    by_kind: dict[str, int]
    by_status: dict[str, int]
    hot: int
    superseded: int
    edges: dict[str, int]
    versions: int
    events: int
    owners: int
    embedder: str | None = None
    schema_version: int


class AddResult(BaseModel):
    """What ``add_conversation`` did (the lifecycle model's add() result, with the ids)."""

    model_config = ConfigDict(frozen=True)

    memories_created: int
    pending_candidates_buffered: int
    nothing_to_extract: bool
    created_ids: list[str] = Field(default_factory=list)
    candidate_ids: list[str] = Field(default_factory=list)
    reinforced_ids: list[str] = Field(default_factory=list)
    #: memories that a correction in the conversation superseded
    corrected_ids: list[str] = Field(default_factory=list)
    dropped: list[tuple[int, str]] = Field(default_factory=list)
    extractor: str = "rules"
    warnings: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    """An edge to write with a batch: ``kind`` is references, co_occurs or supersedes."""

    kind: str
    src: str
    dst: str
    weight: float = 1.0
    source: str = "explicit"
    reason: str | None = None


@dataclass
class MergeResult:
    """What ``MemoryStore.merge`` did, by memory id."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: records whose memory was forgotten: skipped, never brought back
    forgotten: list[str] = field(default_factory=list)
    edges_created: int = 0
    #: what an import read and did not import, each naming where (a file, a line)
    skipped: list[str] = field(default_factory=list)
