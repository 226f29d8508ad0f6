"""The engine port: what the store needs from a database, in graphmem's own types.

An engine keeps memories, their edges, version rows, lifecycle events and a few store
properties, and answers the reads the store makes. Methods take and return ``Memory``,
``Version``, ``LifecycleEvent`` and the small types below; never a query string, a column
name or a driver object. Each engine is one package that alone imports its driver and
owns its schema and migrations (``graphmem._kuzu`` today), and passes the contract
suite in ``tests/engine/``. User Cypher is a capability an engine may offer
(``Engine.cypher``), and so is read-only SQL (``Engine.sql``), not part of the port.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np
import pyarrow as pa

from ._errors import InvalidInputError
from ._models import LifecycleEvent, Memory, Version

__all__ = [
    "BULK_IDS",
    "EDGE_KINDS",
    "INTERNAL_FIELDS",
    "JSON_FIELDS",
    "MEMORY_FIELDS",
    "TABLES",
    "AccessRecord",
    "BatchWriter",
    "ChangeFeed",
    "ChangeSet",
    "Counts",
    "CypherCapability",
    "CypherResult",
    "Decision",
    "EdgeArrays",
    "EdgeKind",
    "EdgeRecord",
    "Engine",
    "EntityRecord",
    "Erasure",
    "EventQuery",
    "FactRecord",
    "ForeignChange",
    "Job",
    "Link",
    "MemoryScan",
    "MentionRecord",
    "NewMemory",
    "Patch",
    "SqlCapability",
    "TableName",
    "WriteBatch",
    "check_vector_dtype",
    "memory_from_fields",
]

EdgeKind = Literal["references", "co_occurs", "supersedes"]
#: The edge kinds between memories, by the names the API uses.
EDGE_KINDS: tuple[EdgeKind, ...] = ("references", "co_occurs", "supersedes")

#: What an engine keeps of a memory besides ``Memory``'s own fields: its vector, when its
#: payload was stored, the state it left at its last transition, and the vectors of its
#: sentences (``_embed.sentence_texts``; as ``_records.sentences_text`` writes them).
INTERNAL_FIELDS = ("vector", "payload_at", "prev_status", "prev_kind", "state_changed",
                   "sentences")
#: Every field a ``Patch`` may set.
MEMORY_FIELDS: frozenset[str] = frozenset(
    {*Memory.model_fields, *INTERNAL_FIELDS} - {"id"})

#: A store's records as tables of Arrow columns, engine-neutral (``_records.TABLE_TYPES``):
#: what ``Engine.read_table`` gives a page at a time and ``BatchWriter.load`` takes in bulk.
TableName = Literal["memories", "versions", "events", "edges", "entities", "mentions",
                    "facts"]
TABLES: tuple[TableName, ...] = ("memories", "versions", "events", "edges", "entities",
                                 "mentions", "facts")

#: Set-based lifecycle jobs an engine applies to staged decisions (one transaction each):
#: promote (episodic -> semantic), archive, expire (weak candidate -> tombstoned), decay
#: and recompute (importance := number), hot and cool (the hot set), payload (drop the
#: raw payload), signals (store centrality := number and cross-references := count).
Job = Literal["promote", "archive", "expire", "decay", "recompute", "hot", "cool", "payload",
              "signals"]


@dataclass(frozen=True)
class Link:
    """One edge seen from a memory: its kind, the other end, "out" or "in", its weight."""

    kind: str
    other: str
    direction: str
    weight: float


@dataclass(frozen=True)
class NewMemory:
    """A memory to create, with its vector, its first version row and the vectors of its
    sentences (a matrix; None: it has none)."""

    memory: Memory
    vector: np.ndarray | None
    version: Version
    payload_at: datetime | None = None
    sentences: np.ndarray | None = None


@dataclass(frozen=True)
class Patch:
    """One memory's change: fields to set (``MEMORY_FIELDS``), and the version row and
    lifecycle event that record it; all committed together."""

    memory_id: str
    set: Mapping[str, Any] = field(default_factory=dict)
    version: Version | None = None
    event: LifecycleEvent | None = None

    def __post_init__(self) -> None:
        unknown = set(self.set) - MEMORY_FIELDS
        if unknown:
            raise ValueError(f"not a memory field: {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class EdgeRecord:
    """An edge between two memories. ``co_occurs`` is stored once per unordered pair
    (``src`` < ``dst``)."""

    kind: EdgeKind
    src: str
    dst: str
    weight: float = 1.0
    count: int = 1
    source: str = "explicit"
    reason: str = ""
    at: datetime | None = None


@dataclass(frozen=True)
class EntityRecord:
    """An entity of the knowledge graph (a person, place, organization, product, event,
    date or other thing one owner's memories mention), with every surface form that
    names it and the merges that joined forms to it (each can be undone). The store
    fills in how many memories mention it and the first and last of their times
    (``observed``, else ``created``); an engine need not."""

    id: str
    owner: str | None
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    merges: tuple[Mapping[str, str], ...] = ()
    created: datetime | None = None
    mentions: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None


@dataclass(frozen=True)
class MentionRecord:
    """A memory mentions an entity: as ``role`` (subject, object, speaker, mention),
    with a ``weight``, by the ``surface`` form the text used."""

    memory_id: str
    entity_id: str
    role: str = "mention"
    weight: float = 1.0
    surface: str = ""


@dataclass(frozen=True)
class FactRecord:
    """A typed relation between two entities (subject -predicate-> object), stated by
    the ``sources`` memories, valid from ``valid_from`` until ``valid_to`` (None: still
    valid), recorded at ``recorded``; ``ended_by`` is the newer fact that ended it."""

    id: str
    owner: str | None
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: datetime | None
    valid_to: datetime | None
    recorded: datetime
    sources: tuple[str, ...]
    rule: str
    ended_by: str | None = None


@dataclass(frozen=True)
class Erasure:
    """What ``forget`` removes beyond the memory's own fields: the text of its versions
    (their hashes replaced by ``version_digests``), its events' metadata, its edges, and
    the metadata of other events that quoted it (``event_metadata``: event id -> new)."""

    memory_id: str
    version_digests: Mapping[str, str] = field(default_factory=dict)
    event_metadata: Mapping[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class WriteBatch:
    """Everything one graphmem write commits in one transaction: all of it, or none.

    ``new_edges`` are created as given (the caller made sure they are missing);
    ``merged_edges`` are created or, when present, strengthened (references keep the
    larger weight, co-occurrences add weights and counts)."""

    memories: list[NewMemory] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    events: list[LifecycleEvent] = field(default_factory=list)
    new_edges: list[EdgeRecord] = field(default_factory=list)
    merged_edges: list[EdgeRecord] = field(default_factory=list)
    erasures: list[Erasure] = field(default_factory=list)
    #: the knowledge graph: entities to create, entities whose names, aliases or merges
    #: changed, mentions and facts to create, facts changed (validity, recorded time,
    #: sources), and what leaves it (the mentions of memories whose text changed or went,
    #: facts, entities)
    new_entities: list[EntityRecord] = field(default_factory=list)
    changed_entities: list[EntityRecord] = field(default_factory=list)
    mentions: list[MentionRecord] = field(default_factory=list)
    facts: list[FactRecord] = field(default_factory=list)
    changed_facts: list[FactRecord] = field(default_factory=list)
    unmentioned: list[str] = field(default_factory=list)
    gone_facts: list[FactRecord] = field(default_factory=list)
    gone_entities: list[str] = field(default_factory=list)
    #: store properties set in the same transaction
    meta: dict[str, str] = field(default_factory=dict)

    def patched(self) -> dict[str, dict[str, Any]] | None:
        """Memory id -> every field the batch sets on it, when setting fields (with their
        version rows, events and edges) is all the batch does to memories; None when it
        creates, erases, or touches the knowledge graph or the store's properties."""
        if (self.memories or self.erasures or self.new_entities or self.changed_entities
                or self.mentions or self.facts or self.changed_facts or self.unmentioned
                or self.gone_facts or self.gone_entities or self.meta):
            return None
        out: dict[str, dict[str, Any]] = {}
        for patch in self.patches:
            out.setdefault(patch.memory_id, {}).update(patch.set)
        return out

    def __bool__(self) -> bool:
        return any((self.memories, self.patches, self.events, self.new_edges,
                    self.merged_edges, self.erasures, self.new_entities,
                    self.changed_entities, self.mentions, self.facts, self.changed_facts,
                    self.unmentioned, self.gone_facts, self.gone_entities, self.meta))


class Decision(NamedTuple):
    """One memory's staged lifecycle decision: ``number`` (a new importance or a
    centrality), ``xrefs`` (cross-references), ``reason`` and ``metadata`` of its
    event, and the event's id. A tuple: a lifecycle run makes ~100k of them."""

    memory_id: str
    number: float | None = None
    xrefs: int | None = None
    reason: str = ""
    metadata: Mapping[str, Any] = MappingProxyType({})
    event_id: str | None = None


#: (access count, last access, recent access times) of a memory.
AccessRecord = tuple[int, datetime, tuple[datetime, ...]]


@dataclass(frozen=True)
class EventQuery:
    """Which lifecycle events to read (all filters optional), oldest first."""

    memory_id: str | None = None
    owner: str | None = None
    event_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None


@dataclass(frozen=True)
class MemoryScan:
    """Many memories, column-wise: ``table`` holds the asked fields (named as
    ``Memory``'s fields, timestamps in UTC), ``vectors`` their vectors when asked
    (a float32 matrix; rows of memories without one are zero, ``has_vector`` False)."""

    table: pa.Table
    vectors: np.ndarray | None = None
    has_vector: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.table.num_rows)


@dataclass(frozen=True)
class EdgeArrays:
    """Every edge of one kind: source ids, target ids, weights (1 for supersedes)."""

    src: list[str]
    dst: list[str]
    weight: np.ndarray


@dataclass(frozen=True)
class Counts:
    """The counts behind ``Stats``."""

    by_kind: dict[str, int]
    by_status: dict[str, int]
    hot: int
    superseded: int
    owners: int
    edges: dict[str, int]
    versions: int
    events: int


@dataclass(frozen=True)
class CypherResult:
    columns: list[str]
    rows: list[list[Any]]


class CypherCapability(Protocol):
    """User Cypher, for engines that speak it: one reading statement, or with ``write``
    one data-changing statement committed with ``event`` (its audit record), stopped
    after ``timeout_s`` seconds (a stopped write changes nothing)."""

    def run(self, query: str, params: Mapping[str, Any], *, write: bool,
            event: LifecycleEvent | None, timeout_s: float) -> CypherResult: ...


class SqlCapability(Protocol):
    """Read-only SQL, for engines that speak it: one statement in a read-only
    transaction, parameters bound by the database (``%(name)s``), stopped after
    ``timeout_s`` seconds."""

    def run(self, query: str, params: Mapping[str, Any], *, timeout_s: float
            ) -> CypherResult: ...


class BatchWriter(Protocol):
    """Batches written into one open transaction (``Engine.writer``)."""

    def write(self, batch: WriteBatch) -> None: ...
    def load(self, name: TableName, rows: pa.Table) -> None:
        """Rows of table ``name`` in its engine-neutral layout (``_records.TABLE_TYPES``,
        columns in that order), created as given in bulk: a copied or restored store
        into one that held no memory. The caller has checked them (values, what they
        name, ids given once); memories before the versions, edges and mentions that
        name them, entities before mentions and facts. Recorded as a bulk change."""
        ...


@dataclass(frozen=True)
class ForeignChange:
    """A commit another process made: the memories it changed (``ids``), the ends of
    the edges it changed (``edge_ends``), the memories it erased (``removed``), the
    memories whose access counters alone it changed (``accessed``: a recall's); with
    ``bulk`` anything may have changed (too many ids to list, or a model switch)."""

    ids: tuple[str, ...] = ()
    edge_ends: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    bulk: bool = False
    accessed: tuple[str, ...] = ()


#: Past this many ids a commit's change is recorded as bulk (a reader rebuilds what it
#: derived instead of reading each memory again).
BULK_IDS = 1000


class ChangeSet:
    """What one transaction changed, collected while it writes, for the change log an
    engine keeps in the same transaction (what other processes, and a recall index saved
    earlier, catch up from)."""

    def __init__(self, *, bulk: bool = False) -> None:
        self.ids: dict[str, None] = {}
        self.edge_ends: dict[str, None] = {}
        self.removed: dict[str, None] = {}
        self.accessed: dict[str, None] = {}
        self.bulk = bulk

    def touch(self, ids: Iterable[str]) -> None:
        self.ids.update(dict.fromkeys(ids))

    def edges(self, ends: Iterable[str]) -> None:
        self.edge_ends.update(dict.fromkeys(ends))

    def add(self, batch: WriteBatch) -> None:
        """What ``batch`` changes: its memories, patches and mentions, the ends of its
        edges, its erasures; a model switch (``embedder*`` meta) changes everything."""
        self.touch(n.memory.id for n in batch.memories)
        self.touch(p.memory_id for p in batch.patches)
        self.touch(batch.unmentioned)
        self.touch(m.memory_id for m in batch.mentions)
        self.edges(e for edge in (*batch.new_edges, *batch.merged_edges)
                   for e in (edge.src, edge.dst))
        for erasure in batch.erasures:
            self.removed[erasure.memory_id] = None
            self.touch([erasure.memory_id])
        if any(k.startswith("embedder") for k in batch.meta):
            self.bulk = True

    def __bool__(self) -> bool:
        return bool(self.ids or self.edge_ends or self.removed or self.accessed or self.bulk)

    @property
    def is_bulk(self) -> bool:
        """Whether it is recorded as bulk: asked for, or too many ids to list."""
        return self.bulk or len(self.ids) + len(self.edge_ends) + len(self.accessed) \
            > BULK_IDS

    def change(self) -> ForeignChange:
        """The change as a reader gets it (ids left out when bulk)."""
        if self.is_bulk:
            return ForeignChange(removed=tuple(self.removed), bulk=True)
        return ForeignChange(ids=tuple(self.ids), edge_ends=tuple(self.edge_ends),
                             removed=tuple(self.removed), accessed=tuple(self.accessed))


class ChangeFeed(Protocol):
    """What other processes committed, for engines that many processes share: each
    ``poll`` returns the commits made since the last one, by others, in commit order."""

    def poll(self) -> list[ForeignChange]: ...


class Engine(Protocol):
    """A database that holds one graphmem store."""

    #: where the store lives (a directory, ``:memory:``, a URL)
    path: str
    read_only: bool
    schema_version: int
    #: user Cypher, or None when the engine does not speak it
    cypher: CypherCapability | None
    #: read-only SQL, or None when the engine does not speak it
    sql: SqlCapability | None
    #: what crash recovery did when the store opened (None: nothing to do)
    recovery_note: str | None
    #: the commits of other processes, or None when no other process can write
    changes: ChangeFeed | None
    #: a directory of the store's own on this host where files derived from it may be
    #: kept (the recall index), or None (in memory, or a server's database)
    local_dir: str | None

    def close(self) -> None: ...
    def exclusive(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Hold the store-wide lock ``name`` for the block, against every process."""
        ...

    # -- store properties ------------------------------------------------------------
    def meta(self) -> dict[str, str]: ...
    def set_meta(self, values: Mapping[str, str]) -> None: ...

    # -- the change log: every commit records what it changed, in its transaction -----
    def change_mark(self) -> str:
        """Where the store's history stands: a token for ``changes_since`` (state
        derived from everything committed before this call may carry it)."""
        ...
    def changes_since(self, mark: str) -> list[ForeignChange] | None:
        """What every commit since ``mark`` changed (this process's too), oldest first;
        None when the log cannot say (the mark is of another history, or what followed
        it is no longer kept): derived state must then be built again."""
        ...

    # -- secret keys -------------------------------------------------------------------
    #: where the keys are kept, for messages (a file, a table)
    secrets_location: str

    def secrets(self) -> list[tuple[str, str]]:
        """The store's secret keys as (purpose, hex value), oldest first, kept where no
        query, export or backup reaches (never in ``meta``)."""
        ...
    def add_secret(self, purpose: str, value: str) -> None: ...

    # -- writes ----------------------------------------------------------------------
    def commit(self, batch: WriteBatch) -> None: ...
    def writer(self) -> contextlib.AbstractContextManager[BatchWriter]: ...
    def apply_decisions(self, job: Job, decisions: Sequence[Decision], *, now: datetime,
                        actor: str) -> int: ...
    def record_access(self, records: Mapping[str, AccessRecord]) -> None: ...
    def set_vectors(self, vectors: Mapping[str, np.ndarray | None],
                    sentences: Mapping[str, np.ndarray | None] | None = None) -> None:
        """Replace the vectors of these memories, and with ``sentences`` their sentence
        vectors (a memory left out has none), in one transaction."""
        ...
    def purge(self, erased: Collection[str] = ()) -> None:
        """Rewrite the stored data so that deleted bytes leave the disk; ``erased``: the
        texts deleted, which an engine may look for afterwards."""
        ...
    def snapshot(self) -> contextlib.AbstractContextManager[None]: ...

    # -- reads -------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None: ...
    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]: ...
    def existing(self, ids: Sequence[str]) -> set[str]: ...
    def forgotten(self, ids: Sequence[str]) -> set[str]: ...
    def forgotten_digests(self, digests: Sequence[str], *, owner: str | None) -> set[str]:
        """Which of these keyed text digests a forgotten memory of ``owner`` holds (its
        text's, or one of its ``said_form`` ones: ``_redact.forgotten_holds``)."""
        ...
    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        """Every memory (of ``owner``) in id order, or the page of ``limit`` of them
        after the first ``offset`` (reading only that page's rows)."""
        ...
    def scan(self, fields: Sequence[str], *, owner: str | None = None,
             ids: Sequence[str] | None = None,
             vector_dtype: type[np.floating[Any]] = np.float32) -> MemoryScan:
        """Fields of every memory (of ``owner``, or these ``ids``), ordered by id; the
        vectors as one matrix of ``vector_dtype`` (float32 or float16) when ``vector`` is
        asked."""
        ...
    def memory_count(self, *, owner: str | None = None) -> int:
        """How many memories the store (or ``owner``) holds, whatever their state."""
        ...
    def history(self, memory_id: str) -> list[Version]: ...
    def read_table(self, name: TableName, *, page: int = 20_000) -> Iterator[pa.Table]:
        """Every row of table ``name`` (live ones: no gone edge, mention, entity or
        fact) in its engine-neutral layout (``_records.TABLE_TYPES``), a page of about
        ``page`` rows at a time (memories, and the versions, edges and mentions of a
        page of memories); inside ``snapshot()`` for a consistent read."""
        ...
    def versions(self, *, owner: str | None = None) -> list[Version]: ...
    def events(self, query: EventQuery) -> list[LifecycleEvent]: ...
    def edges(self, kind: EdgeKind, *, owner: str | None = None) -> list[EdgeRecord]:
        """Every edge of ``kind`` (between ``owner``'s memories), ordered by source, then
        target: the same on every engine, however the edges were written."""
        ...
    def edge_arrays(self, kind: EdgeKind) -> EdgeArrays: ...
    def links_of(self, memory_id: str, kind: EdgeKind | None = None) -> list[Link]:
        """The edges of one memory (of one ``kind`` when given), seen from it."""
        ...
    def counts(self) -> Counts: ...
    def holding(self, field: Literal["context", "payload"], probe: str, *,
                whole: bool = False, session: str | None = None) -> list[Memory]:
        """The memories (of ``session``) whose ``field`` contains ``probe`` (is it, with
        ``whole``), ordered by id; with a session and an empty probe, every one of it that
        has the field."""
        ...
    def entities(self, *, owner: str | None = None, all_owners: bool = False,
                 ids: Sequence[str] | None = None) -> list[EntityRecord]: ...
    def mentions(self, *, memory_ids: Sequence[str] | None = None,
                 entity_ids: Sequence[str] | None = None) -> list[MentionRecord]: ...
    def mentioned_elsewhere(self, entity_ids: Sequence[str], memory_id: str) -> set[str]:
        """Which of these entities a live mention by a memory other than ``memory_id``
        names (one found is enough: an entity many memories mention costs no more)."""
        ...
    def facts(self, *, owner: str | None = None, all_owners: bool = False,
              sources: Sequence[str] | None = None,
              entity_ids: Sequence[str] | None = None) -> list[FactRecord]: ...
    def events_mentioning(self, memory_id: str, probe: str
                          ) -> list[tuple[str, dict[str, Any]]]: ...
    def graph_owners(self, *, entities: Sequence[str] = (), facts: Sequence[str] = ()
                     ) -> dict[str, str | None]:
        """The owner of each of these entity and fact ids the store holds, gone ones
        too (an id stays its owner's); ids it does not hold are left out."""
        ...


def check_vector_dtype(dtype: Any) -> None:
    """A scan's vectors come as float32 or float16 (half the memory); anything else is
    refused before the store is read.

    >>> check_vector_dtype(np.float16)
    >>> check_vector_dtype(np.int8)
    Traceback (most recent call last):
    graphmem._errors.InvalidInputError: vector_dtype must be float32 or float16, not int8
    """
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float16)):
        raise InvalidInputError(
            f"vector_dtype must be float32 or float16, not {np.dtype(dtype).name}",
            field="vector_dtype")


#: Fields a scan carries as JSON text (they hold objects).
JSON_FIELDS = ("provenance", "integrity", "extra")
_DEFAULTED = ("hot", "access_count", "useful_count", "ignored_count", "version", "visibility",
              "text", "text_sha256")


#: ``Memory``'s fields (pydantic's ``model_fields`` of the class, asked for every field of
#: every row, was a third of what making a row took)
_FIELDS = frozenset(Memory.model_fields)
_TUPLES = frozenset({"tags", "superseded_by", "entities", "access_times", "times_from",
                     "times_to"})


def memory_from_fields(row: Mapping[str, Any]) -> Memory:
    """A ``Memory`` from a scanned row (fields by name, JSON fields as text; missing or
    null fields take their defaults)."""
    data: dict[str, Any] = {}
    for name, value in row.items():
        if name not in _FIELDS:
            continue
        if name in JSON_FIELDS:
            loaded = json.loads(value) if isinstance(value, str) and value else value
            data[name] = loaded if isinstance(loaded, dict) else {}
        elif value is None and name in _DEFAULTED:
            continue
        elif name in _TUPLES:
            data[name] = tuple(value or ())
        else:
            data[name] = value
    return Memory(**data)
