"""The core of ``MemoryStore``: open, validate, embed, write and read memories through the graph.

Recall, lifecycle and the analyst views are layered on this core in their own modules.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

import numpy as np

from ._embed import Embedder, embedder_from_spec, fingerprint
from ._errors import (
    ConfirmationRequiredError,
    ConflictError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
)
from ._input import MemoryInput, check_text, check_unit
from ._kuzu import EDGE_KINDS, Change, KuzuGraph, memory_from_row
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
from ._rows import embedding_text, encode_vector, event_row, memory_row, sha256, version_row
from ._settings import Settings
from ._time import to_utc, utcnow

__all__ = ["Edge", "Link", "MergeResult", "StoreCore"]

_DEFAULT = object()


@dataclass(frozen=True)
class Edge:
    """An edge to write with a batch: ``kind`` is references, co_occurs or supersedes."""

    kind: str
    src: str
    dst: str
    weight: float = 1.0
    source: str = "explicit"
    reason: str | None = None


@dataclass(frozen=True)
class Link:
    """One edge seen from a memory: its kind, the other end, "out" or "in", its weight."""

    kind: str
    other: str
    direction: str
    weight: float


@dataclass
class MergeResult:
    """What ``MemoryStore.merge`` did, by memory id."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    edges_created: int = 0


class StoreCore:
    """Opening, writing and reading memories; see ``MemoryStore`` for the whole API."""

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        settings: Settings | None = None,
        embedder: Embedder | str | None = None,
        read_only: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._clock = clock or utcnow
        self._graph = KuzuGraph(
            os.fspath(path), buffer_pool_mb=self.settings.buffer_pool_mb, read_only=read_only
        )
        self._lock = threading.RLock()
        self._embedder_checked = False
        try:
            self._embedder = self._resolve_embedder(embedder)
            self._store_id = self._ensure_store_id()
        except BaseException:
            self._graph.close()
            raise
        self._init_extensions()

    def _ensure_store_id(self) -> str | None:
        """A random id given to the database when it is first opened read-write: faces
        use it to tell whether two handles (a sidecar, an embedded open) are one store."""
        found = self._graph.meta().get("store_id")
        if found is None and not self._graph.db.read_only:
            found = uuid.uuid4().hex
            self._graph.set_meta({"store_id": found})
        return found

    def _init_extensions(self) -> None:
        """Hook for the components layered on the core (recall index, lifecycle cache)."""

    # -- lifecycle of the object ---------------------------------------------------
    @property
    def path(self) -> str:
        return self._graph.path

    @property
    def store_id(self) -> str | None:
        """This database's stable random id (None for an old store opened read-only)."""
        return self._store_id

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def now(self) -> datetime:
        return to_utc(self._clock())

    def close(self) -> None:
        """Close the database (safe to call twice)."""
        self._graph.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.path!r})"

    # -- embeddings ----------------------------------------------------------------
    def _resolve_embedder(self, embedder: Embedder | str | None) -> Embedder:
        meta = self._graph.meta()
        stored_spec, stored_name = meta.get("embedder_spec"), meta.get("embedder_name")
        if embedder is None:
            embedder = stored_spec or self.settings.embedder
        if isinstance(embedder, str):
            embedder = embedder_from_spec(
                embedder,
                threads=self.settings.embed_threads,
                batch_threads=self.settings.embed_batch_threads,
                ollama_host=self.settings.ollama_host,
                timeout=self.settings.ollama_timeout_s,
            )
        if stored_name and stored_name != embedder.name:
            raise EmbedderMismatchError(
                f"store {self.path} was embedded with {stored_name}; you asked for "
                f"{embedder.name}. Open it without choosing an embedder, or switch models "
                f"with `graphmem --db {self.path} reembed --embedder {embedder.spec}`"
            )
        if not stored_name and not self._graph.db.read_only:
            self._graph.set_meta({"embedder_spec": embedder.spec, "embedder_name": embedder.name})
        return embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the store's model (checked against the store's fingerprint)."""
        vectors = self._embedder.embed(list(texts))
        if not self._embedder_checked:
            self._check_fingerprint()
        return vectors

    def _check_fingerprint(self) -> None:
        meta = self._graph.meta()
        print_ = fingerprint(self._embedder)
        stored = meta.get("embedder_fingerprint")
        if stored is None:
            if not self._graph.db.read_only:
                self._graph.set_meta({
                    "embedder_fingerprint": print_, "embedder_dim": str(self._embedder.dim),
                })
        elif stored != print_:
            raise EmbedderMismatchError(
                f"store {self.path} was embedded by a model with fingerprint {stored}; "
                f"{self._embedder.name} now gives {print_} (another version of the model?). "
                f"Re-embed with `graphmem --db {self.path} reembed --embedder "
                f"{self._embedder.spec}`"
            )
        self._embedder_checked = True

    # -- reading -------------------------------------------------------------------
    def _before_read(self) -> None:
        """Called before reading memories back; layers with pending writes flush them."""

    def _visible(self, memory_id: str, owner: str | None) -> Memory:
        self._before_read()
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInputError("a memory id must be a non-empty string", field="id")
        memory = self._graph.get(memory_id)
        if memory is None or (owner is not None and memory.owner != owner):
            raise NotFoundError(f"no memory {memory_id}")
        return memory

    def get(self, memory_id: str, *, owner: str | None = None) -> Memory:
        """The memory with this id; ``NotFoundError`` if absent or another owner's."""
        return self._visible(memory_id, owner)

    def get_many(self, ids: Iterable[str], *, owner: str | None = None) -> list[Memory]:
        """Memories in the order of ``ids``; unknown or other owners' ids are skipped."""
        self._before_read()
        found = self._graph.get_many(ids)
        return [m for m in found.values() if owner is None or m.owner == owner]

    def links(self, memory_id: str, *, owner: str | None = None) -> list[Link]:
        """Every edge touching one memory (other ends of another owner are left out)."""
        self._visible(memory_id, owner)
        out = []
        for kind, other, direction, weight in self._graph.edges_of(memory_id):
            if owner is not None:
                other_memory = self._graph.get(other)
                if other_memory is None or other_memory.owner != owner:
                    continue
            out.append(Link(kind=kind, other=other, direction=direction, weight=weight))
        return out

    def memories(self, *, owner: str | None = None) -> list[Memory]:
        """Every memory (of ``owner``), ordered by id."""
        self._before_read()
        return self._graph.memories(owner=owner)

    def history(self, memory_id: str, *, owner: str | None = None) -> list[Version]:
        """The append-only version rows of one memory, oldest first."""
        self._visible(memory_id, owner)
        return self._graph.history(memory_id)

    def events(
        self,
        memory_id: str | None = None,
        *,
        event_type: EventType | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        owner: str | None = None,
    ) -> list[LifecycleEvent]:
        """Lifecycle events (of one memory, or of ``owner``'s memories), oldest first."""
        if memory_id is not None:
            self._visible(memory_id, owner)
        if event_type is not None:
            try:
                event_type = EventType(event_type).value
            except ValueError:
                raise InvalidInputError(
                    f"unknown event type {event_type!r}; one of "
                    + ", ".join(e.value for e in EventType),
                    field="event_type",
                ) from None
        return self._graph.events(
            memory_id=memory_id, owner=owner if memory_id is None else None,
            event_type=event_type, since=since, until=until, limit=limit,
        )

    def stats(self) -> Stats:
        self._before_read()
        counts = self._graph.counts()
        return Stats(
            memories=sum(counts["by_kind"].values()),
            by_kind=counts["by_kind"],
            by_status=counts["by_status"],
            hot=counts["hot"],
            superseded=counts["superseded"],
            edges=counts["edges"],
            versions=counts["versions"],
            events=counts["events"],
            owners=counts["owners"],
            embedder=self._embedder.name,
            schema_version=self._graph.schema_version,
        )

    # -- writing -------------------------------------------------------------------
    def add(self, text: str, **fields: Any) -> Memory:
        """Add one memory and return it.

        Keyword fields are those of ``MemoryInput``: kind ("episodic"), subject,
        importance (0.5), confidence (1.0), tags, owner, project, visibility, status
        ("active"), id, created, observed, valid_from, valid_to, session, provenance,
        payload, extra.
        """
        return self.add_many([{"text": text, **fields}])[0]

    def add_many(
        self,
        records: Iterable[MemoryInput | Mapping[str, Any] | str],
        *,
        batch_size: int = 500,
        progress: bool = False,
    ) -> list[Memory]:
        """Add many memories: every record is validated first (nothing is written if one
        is bad), then each batch is embedded and committed in one transaction. A batch
        that returned is durable."""
        items = [MemoryInput.parse(r, where=f"record {i}: ") for i, r in enumerate(records)]
        self._check_new_ids(items)
        out: list[Memory] = []
        bar = _progress(len(items), "adding", progress)
        for start in range(0, len(items), max(1, batch_size)):
            chunk = items[start:start + batch_size]
            rows = self._new_rows(chunk)
            versions = [version_row(r, seq=1, change_type=ChangeType.CREATED, at=r["created"])
                        for r in rows]
            with self._lock:
                self._graph.insert(rows, versions)
                self._changed([r["id"] for r in rows], rows=rows)
            out.extend(memory_from_row(r) for r in rows)
            bar.update(len(chunk))
        bar.close()
        return out

    def _check_new_ids(self, items: Sequence[MemoryInput]) -> None:
        ids = [i.id for i in items if i.id]
        seen: set[str] = set()
        for memory_id in ids:
            if memory_id in seen:
                raise InvalidInputError(f"id {memory_id} appears twice in the input", field="id")
            seen.add(memory_id)
        taken = self._graph.existing(ids)
        if taken:
            raise ConflictError(f"a memory with id {sorted(taken)[0]} already exists")

    def _new_rows(self, items: Sequence[MemoryInput]) -> list[dict[str, Any]]:
        now = self.now()
        if not items:
            return []
        items = [i if i.entities else i.model_copy(update={"entities": _entities(i.subject,
                                                                                 i.text)})
                 for i in items]
        vectors = self.embed([embedding_text(i.subject, i.text, i.context) for i in items])
        return [memory_row(item, now=now, vector=vectors[n]) for n, item in enumerate(items)]

    def merge(
        self,
        records: Sequence[MemoryInput],
        *,
        edges: Sequence[Edge] = (),
        reason: str = "import",
        actor: str | None = None,
    ) -> MergeResult:
        """Create, update or leave each record by id, and add missing edges: all in one
        transaction. Re-merging the same records changes nothing."""
        result = MergeResult()
        by_id = {r.id: r for r in records if r.id}
        if len(by_id) != len(records):
            raise InvalidInputError("merge needs an id on every record", field="id")
        existing = self._graph.get_many(by_id)
        new_items = [r for r in records if r.id not in existing]
        changes: list[Change] = []
        now = self.now()
        for memory_id, current in existing.items():
            update = _merge_changes(current, by_id[memory_id])
            if not update:
                result.unchanged.append(memory_id)
                continue
            if {"text", "subject", "context"} & set(update):
                text = update.get("text", current.text)
                subject = update.get("subject", current.subject)
                context = update.get("context", current.context)
                update["vec"] = encode_vector(
                    self.embed([embedding_text(subject, text, context)])[0])
                update["text_sha256"] = sha256(text)
            update.setdefault("modified", by_id[memory_id].modified or current.modified)
            changes.append(self._change(current, update, ChangeType.MANUAL_EDIT, now,
                                        reason=reason, actor=actor))
            result.updated.append(memory_id)
        rows = self._new_rows(new_items)
        versions = [version_row(r, seq=1, change_type=ChangeType.CREATED, at=r["created"],
                                reason=reason, actor=actor) for r in rows]
        result.created = [r["id"] for r in rows]
        edge_rows = self._missing_edges(edges, known=set(by_id) | set(existing))
        result.edges_created = sum(len(v) for v in edge_rows.values())
        with self._lock:
            self._graph.insert(rows, versions, edges=edge_rows, changes=changes)
            self._changed(result.created, rows=rows)
            self._changed(result.updated)
            if edge_rows:
                touched = {r["src"] for v in edge_rows.values() for r in v} | \
                    {r["dst"] for v in edge_rows.values() for r in v}
                self._changed(sorted(touched), edges_only=True)
        return result

    def _missing_edges(self, edges: Sequence[Edge], *, known: set[str]
                       ) -> dict[str, list[dict[str, Any]]]:
        """Edges to create: both ends known, not a self-loop, not already in the graph.

        Existing edges are looked up per memory for a few memories, by one scan of the
        edge table for many (a bulk load touches thousands).
        """
        now = self.now()
        for edge in edges:
            if edge.kind not in EDGE_KINDS:
                raise InvalidInputError(f"unknown edge kind {edge.kind!r}", field="kind")
            if isinstance(edge.weight, bool) or not isinstance(edge.weight, int | float) \
                    or not np.isfinite(edge.weight) or edge.weight <= 0:
                raise InvalidInputError(f"edge weight must be a positive number, got "
                                        f"{edge.weight!r}", field="weight")
        ends = {e.src for e in edges} | {e.dst for e in edges}
        in_store = self._graph.existing(ends)
        present = known | in_store
        touched = {e.src for e in edges} | {e.dst for e in edges}
        touched &= in_store
        current: dict[str, set[tuple[str, str]]] = {}
        if len(touched) > 32:
            for kind in {e.kind for e in edges}:
                table = self._graph.edge_table(kind)
                current[kind] = set(zip(table.column("src").to_pylist(),
                                        table.column("dst").to_pylist(), strict=True))
        else:
            for memory_id in touched:
                for kind, other, direction, _ in self._graph.edges_of(memory_id):
                    pair = (memory_id, other) if direction == "out" else (other, memory_id)
                    current.setdefault(kind, set()).add(pair)
        wanted: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for edge in edges:
            src, dst = edge.src, edge.dst
            if edge.kind == "co_occurs" and dst < src:
                src, dst = dst, src
            if src == dst or src not in present or dst not in present:
                continue
            if (src, dst) in current.get(edge.kind, set()):
                continue
            wanted.setdefault(edge.kind, {})[(src, dst)] = {
                "src": src, "dst": dst, "weight": float(edge.weight), "count": 1,
                "source": edge.source, "reason": edge.reason or "", "at": now,
            }
        return {kind: list(rows.values()) for kind, rows in wanted.items()}

    def link_many(self, edges: Sequence[Edge]) -> int:
        """Create many edges in one transaction (bulk loads); edges already in the graph,
        self-loops and edges to unknown memories are skipped. Returns how many were made."""
        rows = self._missing_edges(list(edges), known=set())
        count = sum(len(v) for v in rows.values())
        if count:
            with self._lock:
                self._graph.insert([], [], edges=rows)
                touched = {r["src"] for v in rows.values() for r in v} | \
                    {r["dst"] for v in rows.values() for r in v}
                self._changed(sorted(touched), edges_only=True)
        return count

    def _change(
        self,
        memory: Memory,
        updates: Mapping[str, Any],
        change_type: ChangeType,
        at: datetime,
        *,
        reason: str | None = None,
        actor: str | None = None,
        event: Mapping[str, Any] | None = None,
    ) -> Change:
        """A change of ``memory`` with the version row that records its new state."""
        seq = memory.version + 1
        snapshot = memory.model_dump()
        snapshot.update({k: v for k, v in updates.items() if k in snapshot})
        sets = dict(updates)
        sets["version"] = seq
        sets.setdefault("modified", at)
        return Change(
            memory.id,
            set=sets,
            version=version_row(snapshot, seq=seq, change_type=change_type, at=at,
                                reason=reason, actor=actor),
            event=dict(event) if event else None,
        )

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        subject: str | object | None = _DEFAULT,
        importance: float | None = None,
        confidence: float | None = None,
        tags: Sequence[str] | None = None,
        kind: Kind | str | None = None,
        project: str | object | None = _DEFAULT,
        visibility: str | None = None,
        valid_from: datetime | object | None = _DEFAULT,
        valid_to: datetime | object | None = _DEFAULT,
        provenance: Mapping[str, Any] | None = None,
        reason: ChangeType | str = ChangeType.MANUAL_EDIT,
        actor: str | None = None,
        owner: str | None = None,
    ) -> Memory:
        """Change fields of a memory; writes one version row with change type ``reason``."""
        memory = self._visible(memory_id, owner)
        if memory.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} was forgotten and cannot be edited")
        change_type = _change_type(reason)
        updates: dict[str, Any] = {}
        if text is not None:
            updates["text"] = check_text(text, field="text")
        if subject is not _DEFAULT:
            updates["subject"] = None if subject is None else check_text(subject, field="subject",
                                                                         max_len=2000)
        if importance is not None:
            updates["importance"] = check_unit(importance, field="importance")
        if confidence is not None:
            updates["confidence"] = check_unit(confidence, field="confidence")
        if tags is not None:
            if isinstance(tags, str) or not all(isinstance(t, str) and t for t in tags):
                raise InvalidInputError("tags must be a list of non-empty strings", field="tags")
            updates["tags"] = list(tags)
        if kind is not None:
            updates["kind"] = _kind(kind).value
        if project is not _DEFAULT:
            updates["project"] = project
        if visibility is not None:
            updates["visibility"] = check_text(visibility, field="visibility", max_len=200)
        if provenance is not None:
            updates["provenance"] = MemoryInput.parse({"text": "x",
                                                       "provenance": provenance}).provenance
        for name, value in (("valid_from", valid_from), ("valid_to", valid_to)):
            if value is not _DEFAULT:
                updates[name] = MemoryInput.parse({"text": "x", name: value}).__dict__[name]
        updates = {k: v for k, v in updates.items() if getattr(memory, k, None) != v
                   and not (k == "kind" and memory.kind.value == v)}
        if not updates:
            return memory
        if "text" in updates or "subject" in updates:
            new_text = updates.get("text", memory.text)
            new_subject = updates.get("subject", memory.subject)
            updates["entities"] = list(_entities(new_subject, new_text))
            updates["vec"] = encode_vector(
                self.embed([embedding_text(new_subject, new_text, memory.context)])[0])
            updates["text_sha256"] = sha256(new_text)
        if "importance" in updates and change_type is not ChangeType.IMPORTANCE_DECAY:
            # A deliberate new importance is the new baseline that decay starts from.
            updates["original_importance"] = updates["importance"]
        now = self.now()
        with self._lock:
            self._graph.apply([self._change(memory, updates, change_type, now,
                                            reason=change_type.value, actor=actor)])
            self._changed([memory_id])
        return self._graph.get(memory_id) or memory

    def supersede(
        self,
        old_id: str,
        new: Memory | str,
        *,
        reason: str = "conflict_update",
        owner: str | None = None,
        **fields: Any,
    ) -> Memory:
        """Record that ``new`` replaces ``old_id``: a SUPERSEDES edge (new -> old), the old
        memory marked superseded-by (kept, no longer recalled). ``new`` is a memory, the id
        of one, or the text of a new memory that inherits the old one's kind and scope."""
        old = self._visible(old_id, owner)
        if old.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {old_id} was forgotten")
        now = self.now()
        rows: list[dict[str, Any]] = []
        versions: list[dict[str, Any]] = []
        if isinstance(new, Memory):
            new_id = self._visible(new.id, owner).id
        elif isinstance(new, str) and self._graph.get(new) is not None:
            new_id = self._visible(new, owner).id
        else:
            inherited = {"kind": old.kind, "subject": old.subject, "owner": old.owner,
                         "project": old.project, "visibility": old.visibility,
                         "tags": old.tags, "importance": old.importance}
            item = MemoryInput.parse({**inherited, **fields, "text": new})
            rows = self._new_rows([item])
            versions = [version_row(rows[0], seq=1, change_type=ChangeType.CREATED, at=now,
                                    reason=f"supersedes {old_id}")]
            new_id = rows[0]["id"]
        if new_id == old_id:
            raise ConflictError("a memory cannot supersede itself")
        if new_id in old.superseded_by:
            return self._graph.get(new_id)  # type: ignore[return-value]
        event = event_row(old_id, EventType.SUPERSEDE, from_state="current", to_state="superseded",
                          reason=reason, at=now, agent_id=self.settings.agent_id,
                          metadata={"supersededBy": new_id})
        change = self._change(old, {"superseded_by": [*old.superseded_by, new_id]},
                              ChangeType.CONFLICT_UPDATE, now, reason=reason, event=event)
        edge = {"src": new_id, "dst": old_id, "reason": reason, "at": now}
        with self._lock:
            self._graph.insert(rows, versions, edges={"supersedes": [edge]}, changes=[change])
            self._changed([old_id, new_id])
        return self._graph.get(new_id)  # type: ignore[return-value]

    def link(
        self,
        a: str,
        b: str,
        *,
        kind: str = "references",
        weight: float = 1.0,
        source: str = "explicit",
        owner: str | None = None,
    ) -> None:
        """Connect two memories: ``references`` (a points at b) or ``co_occurs``
        (undirected; a second link strengthens it)."""
        if kind not in ("references", "co_occurs"):
            raise InvalidInputError("kind must be 'references' or 'co_occurs'", field="kind")
        if isinstance(weight, bool) or not isinstance(weight, int | float) \
                or not np.isfinite(weight) or weight <= 0:
            raise InvalidInputError(f"weight must be a positive number, got {weight!r}",
                                    field="weight")
        self._visible(a, owner)
        self._visible(b, owner)
        if a == b:
            raise InvalidInputError("a memory cannot be linked to itself", field="b")
        if kind == "co_occurs" and b < a:
            a, b = b, a
        with self._lock:
            self._graph.merge_edge(kind, a, b, weight=float(weight),
                                   source=check_text(source, field="source", max_len=200),
                                   at=self.now())
            self._changed([a, b], edges_only=True)

    def tombstone(self, memory_id: str, *, reason: str = "manual", owner: str | None = None,
                  triggered_by: TriggeredBy = TriggeredBy.MANUAL) -> Memory:
        """Delete logically: kept for audit and export, never recalled. Reversible."""
        memory = self._visible(memory_id, owner)
        if memory.status in (Status.TOMBSTONED, Status.FORGOTTEN):
            raise ConflictError(f"memory {memory_id} is already {memory.status.value}")
        return self.transition(memory, status=Status.TOMBSTONED, event_type=EventType.TOMBSTONE,
                               change_type=ChangeType.TOMBSTONED, reason=reason,
                               triggered_by=triggered_by)

    def transition(
        self,
        memory: Memory,
        *,
        event_type: EventType,
        change_type: ChangeType,
        reason: str,
        status: Status | None = None,
        kind: Kind | None = None,
        triggered_by: TriggeredBy = TriggeredBy.MANUAL,
        metadata: Mapping[str, Any] | None = None,
        extra_sets: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Move one memory to a new status and/or kind: the state, a version row and a
        lifecycle event are written in one transaction."""
        now = self.now()
        updates: dict[str, Any] = dict(extra_sets or {})
        from_state = to_state = memory.status.value
        if status is not None:
            updates.update(status=status.value, prev_status=memory.status.value)
            to_state = status.value
        if kind is not None:
            updates.update(kind=kind.value, prev_kind=memory.kind.value)
            from_state, to_state = memory.kind.value, kind.value
        updates["state_changed"] = now
        event = event_row(memory.id, event_type, from_state=from_state, to_state=to_state,
                          reason=reason, at=now, agent_id=self.settings.agent_id,
                          triggered_by=triggered_by, metadata=dict(metadata or {}))
        with self._lock:
            self._graph.apply([self._change(memory, updates, change_type, now, reason=reason,
                                            actor=self.settings.agent_id, event=event)])
            self._changed([memory.id])
        return self._graph.get(memory.id) or memory

    def forget(self, memory_id: str, *, confirm: bool = False, reason: str = "manual",
               owner: str | None = None, purge: bool = True) -> None:
        """Hard delete: the text leaves the node, the full-text index, the vectors, every
        version (hashes stay) and the edges; one ``delete`` event records it.

        With ``purge`` (the default) the database file is then rewritten so the deleted
        bytes leave the disk too (Kuzu keeps old pages until then); to forget many
        memories, pass ``purge=False`` and call ``purge()`` once at the end.
        """
        if confirm is not True:
            raise ConfirmationRequiredError(
                f"forget({memory_id!r}) deletes the memory's text for good; "
                "pass confirm=True (or --yes on the command line)"
            )
        memory = self._visible(memory_id, owner)
        if memory.status is Status.FORGOTTEN:
            return
        now = self.now()
        node: dict[str, Any] = {
            "text": "", "subject": None, "tags": [], "vec": None, "payload": None,
            "context": None, "entities": [],
            "provenance": {"redacted": True}, "ump": {}, "access_times": [],
            "status": Status.FORGOTTEN.value, "prev_status": memory.status.value,
            "hot": False, "state_changed": now, "modified": now,
            "version": memory.version + 1,
        }
        version = {
            "id": f"{memory_id}#v{memory.version + 1}", "memory_id": memory_id,
            "seq": memory.version + 1, "change_type": ChangeType.FORGOTTEN.value, "at": now,
            "reason": None, "actor": self.settings.agent_id, "text": None, "subject": None,
            "text_sha256": memory.text_sha256, "importance": memory.importance,
            "status": Status.FORGOTTEN.value, "kind": memory.kind.value, "redacted": True,
        }
        event = event_row(memory_id, EventType.DELETE, from_state=memory.status.value,
                          to_state=Status.FORGOTTEN.value, reason=reason, at=now,
                          agent_id=self.settings.agent_id,
                          metadata={"textSha256": memory.text_sha256})
        scrubbed = self._scrub_contexts(memory)
        summaries = [(event_id, {**{k: v for k, v in meta.items() if k != "summary"},
                                 "summary": None, "summaryRedacted": True})
                     for event_id, meta in self._graph.summaries_mentioning(memory)]
        with self._lock:
            self._graph.redact(memory_id, node=node, version=version, event=event,
                               changes=scrubbed, summaries=summaries)
            self._changed([memory_id], removed=True)
            if scrubbed:
                self._changed([c.memory_id for c in scrubbed])
        if purge:
            self.purge()

    def _scrub_contexts(self, memory: Memory) -> list[Change]:
        """The forgotten text leaves the contexts of the memories indexed with it; their
        vectors are recomputed (an embedding can give its text away)."""
        rows = self._graph.contexts_containing(memory.text)
        if not rows:
            return []
        contexts = []
        for row in rows:
            lines = [ln for ln in (row["context"] or "").split("\n") if ln != memory.text]
            joined = "\n".join(lines)
            if len(memory.text) >= 12:
                joined = joined.replace(memory.text, "")
            contexts.append(joined.strip() or None)
        vectors = self.embed([embedding_text(row["subject"], row["text"], context)
                              for row, context in zip(rows, contexts, strict=True)])
        return [Change(row["id"], set={"context": context, "vec": encode_vector(vector)})
                for row, context, vector in zip(rows, contexts, vectors, strict=True)]

    def purge(self) -> None:
        """Rewrite the database file from its live data, dropping every byte of what was
        deleted or overwritten (forgotten text, old values). Takes the store for as long
        as an export and an import of the whole database."""
        with self._lock:
            self._graph.rebuild()

    # -- hooks for derived state ---------------------------------------------------
    def _changed(self, ids: Sequence[str], *, removed: bool = False,
                 edges_only: bool = False, bulk: bool = False,
                 rows: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Called after a commit that changed these memories. ``rows`` are their new node
        rows when the caller has them, ``bulk`` means anything may have changed. Layers
        that keep derived state (the recall index) extend it."""


def _merge_changes(current: Memory, incoming: MemoryInput) -> dict[str, Any]:
    """Fields of ``incoming`` that differ from the stored memory."""
    wanted = {
        "text": incoming.text, "subject": incoming.subject, "kind": incoming.kind.value,
        "status": incoming.status.value, "confidence": incoming.confidence,
        "tags": list(incoming.tags), "owner": incoming.owner, "project": incoming.project,
        "visibility": incoming.visibility, "observed": incoming.observed,
        "valid_from": incoming.valid_from, "valid_to": incoming.valid_to,
        "superseded_by": list(incoming.superseded_by), "provenance": incoming.provenance,
        "context": incoming.context,
        "integrity": incoming.integrity, "ump": incoming.extra,
    }
    if incoming.created is not None:
        wanted["created"] = incoming.created
    if incoming.modified is not None:
        wanted["modified"] = incoming.modified
    have = current.model_dump()
    have["ump"] = have.pop("extra")
    out = {}
    for key, value in wanted.items():
        old = have.get(key)
        old = getattr(old, "value", old)
        if isinstance(old, tuple):
            old = list(old)
        if old != value:
            out[key] = value
    return out


def _kind(value: Kind | str) -> Kind:
    try:
        return Kind(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown kind {value!r}; one of {', '.join(k.value for k in Kind)}", field="kind"
        ) from None


def _change_type(value: ChangeType | str) -> ChangeType:
    try:
        return ChangeType(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown change type {value!r}; one of {', '.join(c.value for c in ChangeType)}",
            field="reason",
        ) from None


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _entities(subject: str | None, text: str) -> tuple[str, ...]:
    """What a memory mentions (names, dates, codes, key phrases), for the entity index
    and entity links, when the caller gave none."""
    from ._extract._rules import extract_entities  # the extract layer sits above the store

    return extract_entities(f"{subject or ''} {text}")


def _progress(total: int, label: str, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="mem")
