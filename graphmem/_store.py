"""The core of ``MemoryStore``: open, validate, embed, write and read memories through the graph.

Recall, lifecycle and the analyst views are layered on this core in their own modules.
"""

from __future__ import annotations

import hmac
import os
import secrets
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
    RecordError,
)
from ._input import (
    MAX_VISIBILITY,
    MemoryInput,
    check_tags,
    check_text,
    check_unit,
    check_validity,
)
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
from ._redact import Mentions, keyed_digest
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
    #: records whose memory was forgotten: skipped, never brought back
    forgotten: list[str] = field(default_factory=list)
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
        """Add many memories, all or none: every record is validated, embedded (in
        batches of ``batch_size``) and turned into its rows first; then everything is
        committed in one transaction. An error leaves the store as it was."""
        items = [MemoryInput.parse(r, where=f"record {i}: ") for i, r in enumerate(records)]
        self._check_new_ids(items)
        bar = _progress(len(items), "adding", progress)
        rows: list[dict[str, Any]] = []
        for start in range(0, len(items), max(1, batch_size)):
            chunk = items[start:start + max(1, batch_size)]
            rows += self._new_rows(chunk)
            bar.update(len(chunk))
        bar.close()
        out = [memory_from_row(r) for r in rows]  # a row that cannot be read back fails here
        versions = [version_row(r, seq=1, change_type=ChangeType.CREATED, at=r["created"])
                    for r in rows]
        with self._lock:
            self._graph.insert(rows, versions)
            self._changed([r["id"] for r in rows], rows=rows)
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
        source: str | None = None,
    ) -> MergeResult:
        """Create, update or leave each record by id, and add missing edges: all in one
        transaction. Re-merging the same records changes nothing.

        A record whose memory was forgotten is skipped (listed in ``forgotten``) with the
        edges that touch it: nothing brings a forgotten memory back. A record may not move
        a memory to another owner, and supersedes edges may not make a cycle; either is a
        ``RecordError`` naming the record (``source`` names the file) and nothing is
        written.
        """
        result = MergeResult()
        by_id = {r.id: r for r in records if r.id}
        if len(by_id) != len(records):
            raise InvalidInputError("merge needs an id on every record", field="id")
        index_of = {r.id: i for i, r in enumerate(records)}
        existing = self._graph.get_many(by_id)
        gone = {i for i, m in existing.items() if m.status is Status.FORGOTTEN}
        result.forgotten = sorted(gone)
        existing = {i: m for i, m in existing.items() if i not in gone}
        for memory_id, current in existing.items():
            if current.owner != by_id[memory_id].owner:
                raise RecordError("this memory belongs to a different owner; an import "
                                  "cannot change a memory's owner", source=source,
                                  index=index_of[memory_id], record_id=memory_id,
                                  field="owner")
        gone |= self._graph.forgotten({e.src for e in edges} | {e.dst for e in edges})
        edges = [e for e in edges if e.src not in gone and e.dst not in gone]
        self._check_supersede_cycles(edges, index_of=index_of, source=source)
        new_items = [r for r in records if r.id not in existing and r.id not in gone]
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

    def _check_supersede_cycles(self, edges: Sequence[Edge], *,
                                index_of: Mapping[str | None, int] | None = None,
                                source: str | None = None) -> None:
        """Refuse new supersedes edges that, with the stored ones, make a cycle (a memory
        that replaces itself, directly or through others)."""
        new = [(e.src, e.dst) for e in edges if e.kind == "supersedes"]
        if not new:
            return
        graph: dict[str, set[str]] = {}
        stored = self._graph.edge_table("supersedes")
        for a, b in zip(stored.column("src").to_pylist(), stored.column("dst").to_pylist(),
                        strict=True):
            graph.setdefault(a, set()).add(b)
        for a, b in new:
            graph.setdefault(a, set()).add(b)
        cycle = _find_cycle(graph, [a for a, _ in new])
        if cycle:
            where = next((x for x in cycle if index_of and x in index_of), cycle[0])
            raise RecordError("supersedes form a cycle (" + " -> ".join(cycle) + "): a memory "
                              "cannot replace itself", source=source,
                              index=index_of.get(where) if index_of else None,
                              record_id=where, field="superseded_by")

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
        gone = self._graph.forgotten({e.src for e in edges} | {e.dst for e in edges})
        rows = self._missing_edges([e for e in edges if e.src not in gone
                                    and e.dst not in gone], known=set())
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
            updates["tags"] = check_tags(tags)
        if kind is not None:
            updates["kind"] = _kind(kind).value
        if project is not _DEFAULT:
            updates["project"] = project
        if visibility is not None:
            updates["visibility"] = check_text(visibility, field="visibility",
                                               max_len=MAX_VISIBILITY)
        if provenance is not None:
            updates["provenance"] = MemoryInput.parse({"text": "x",
                                                       "provenance": provenance}).provenance
        for name, value in (("valid_from", valid_from), ("valid_to", valid_to)):
            if value is not _DEFAULT:
                updates[name] = MemoryInput.parse({"text": "x", name: value}).__dict__[name]
        check_validity(updates.get("valid_from", memory.valid_from),
                       updates.get("valid_to", memory.valid_to))
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
        known = self._graph.get(new) if isinstance(new, str) and new else None
        if isinstance(new, Memory):
            new_id = self._visible(new.id, owner).id
        elif known is not None and (owner is None or known.owner == owner):
            new_id = known.id
        else:
            # Not a memory this caller can see: the text of a new one. Another owner's id
            # is treated exactly as an unknown one, so the answer tells nothing about it.
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
        if not rows and self._graph.forgotten([new_id]):
            raise ConflictError(f"memory {new_id} was forgotten; it cannot supersede another")
        try:
            self._check_supersede_cycles([Edge("supersedes", new_id, old_id)])
        except RecordError as exc:
            raise ConflictError(str(exc)) from None
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
        ends = [self._visible(a, owner), self._visible(b, owner)]
        if a == b:
            raise InvalidInputError("a memory cannot be linked to itself", field="b")
        for end in ends:
            if end.status is Status.FORGOTTEN:
                raise ConflictError(f"memory {end.id} was forgotten; it cannot be linked")
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
        version, the edges, the contexts of the memories indexed with it and the metadata
        of events that quoted it; one ``delete`` event records it. Its id stays taken for
        good (nothing can bring it back, not a re-import), and only a keyed digest of each
        text it had remains (``verify_forgotten`` checks a text against it).

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
        key = self._forget_key()
        history = self._graph.history(memory_id)
        digest = keyed_digest(key, memory.text)
        node: dict[str, Any] = {
            "text": "", "subject": None, "tags": [], "vec": None, "payload": None,
            "payload_hash": None, "context": None, "entities": [],
            "provenance": {"redacted": True}, "ump": {}, "integrity": {}, "access_times": [],
            "status": Status.FORGOTTEN.value, "prev_status": memory.status.value,
            "hot": False, "state_changed": now, "modified": now, "text_sha256": digest,
            "version": memory.version + 1,
        }
        version = {
            "id": f"{memory_id}#v{memory.version + 1}", "memory_id": memory_id,
            "seq": memory.version + 1, "change_type": ChangeType.FORGOTTEN.value, "at": now,
            "reason": None, "actor": self.settings.agent_id, "text": None, "subject": None,
            "text_sha256": digest, "importance": memory.importance,
            "status": Status.FORGOTTEN.value, "kind": memory.kind.value, "redacted": True,
        }
        event = event_row(memory_id, EventType.DELETE, from_state=memory.status.value,
                          to_state=Status.FORGOTTEN.value, reason=reason, at=now,
                          agent_id=self.settings.agent_id, metadata={"textDigest": digest})
        texts = {memory.text, memory.payload, *(v.text for v in history)} - {None, ""}
        mentions = Mentions(sorted(t for t in texts if t))
        # a summary quotes a neighbour by its subject or the start of its text
        quoted = Mentions([t for t in (memory.subject, memory.text[:40]) if t and len(t) >= 8])
        scrubbed = self._scrub_contexts(mentions)
        metadata = self._scrub_events(memory_id, mentions, quoted)
        with self._lock:
            self._graph.redact(memory_id, node=node, version=version, event=event,
                               changes=scrubbed, event_metadata=metadata,
                               version_digests={v.id: keyed_digest(key, v.text)
                                                for v in history})
            self._changed([memory_id], removed=True)
            if scrubbed:
                self._changed([c.memory_id for c in scrubbed])
        if purge:
            self.purge()

    def verify_forgotten(self, memory_id: str, text: str) -> bool:
        """Whether ``text`` is what the forgotten memory ``memory_id`` said (its keyed
        digest matches): proof of a deletion without keeping what was deleted."""
        memory = self._visible(memory_id, None)
        if memory.status is not Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} is not forgotten")
        return hmac.compare_digest(memory.text_sha256, keyed_digest(self._forget_key(), text))

    def _forget_key(self) -> str:
        """The store's secret for digests of forgotten texts (made on first use)."""
        key = self._graph.meta().get("forget_key")
        if key is None:
            key = secrets.token_hex(32)
            self._graph.set_meta({"forget_key": key})
        return key

    def _scrub_contexts(self, mentions: Mentions) -> list[Change]:
        """The forgotten texts leave the contexts of the memories indexed with them
        (matched up to whitespace); their vectors are recomputed (an embedding can give
        its text away)."""
        rows = [r for r in self._graph.contexts_with(mentions.probe)
                if mentions.found_in(r["context"])]
        if not rows:
            return []
        contexts = [mentions.scrub(row["context"]).strip() or None for row in rows]
        vectors = self.embed([embedding_text(row["subject"], row["text"], context)
                              for row, context in zip(rows, contexts, strict=True)])
        return [Change(row["id"], set={"context": context, "vec": encode_vector(vector)})
                for row, context, vector in zip(rows, contexts, vectors, strict=True)]

    def _scrub_events(self, memory_id: str, mentions: Mentions, quoted: Mentions
                      ) -> list[tuple[str, dict[str, Any]]]:
        """New metadata for other events that quoted the forgotten memory: an archive
        summary built from it (``summaryFrom``) goes whole, and any other string that
        holds its text (or subject) is blanked, the blanked fields listed."""
        out = []
        probes = [p for p in (mentions.probe, quoted.probe) if p]
        found = {event_id: meta for probe in probes or [""]
                 for event_id, meta in self._graph.events_mentioning(memory_id, probe)}
        for event_id, meta in found.items():
            new = dict(meta)
            if memory_id in (meta.get("summaryFrom") or []) or quoted.found_in(
                    str(meta.get("summary") or "")):
                new.update(summary=None, summaryRedacted=True)
            cleaned, blanked = mentions.scrub_json(new)
            if blanked:
                cleaned["redactedFields"] = sorted(set(cleaned.get("redactedFields", []))
                                                   | set(blanked))
            if cleaned != meta:
                out.append((event_id, cleaned))
        return out

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


def _find_cycle(graph: Mapping[str, set[str]], starts: Iterable[str]) -> list[str]:
    """A cycle reachable from ``starts`` in a directed graph, as a path that ends where
    it began ([] when there is none); iterative depth-first search.

    >>> _find_cycle({"a": {"b"}, "b": {"a"}}, ["a"])
    ['a', 'b', 'a']
    >>> _find_cycle({"a": {"b"}}, ["a"])
    []
    """
    done: set[str] = set()
    for start in starts:
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(sorted(graph.get(start, ())))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                continue
            if nxt in on_path:
                return [*path[path.index(nxt):], nxt]
            if nxt in done:
                continue
            path.append(nxt)
            on_path.add(nxt)
            stack.append(iter(sorted(graph.get(nxt, ()))))
    return []


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
