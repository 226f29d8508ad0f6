"""Memories: every write path that creates or edits memories and edges (and re-embeds them
all with another model, ``reembed``), and the reads.

Each write validates everything, derives what the texts imply (``_derive``), builds one
``WriteBatch`` and commits it: a call that fails leaves nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

import numpy as np

from .._context import Changed, FactsWritten, StoreContext
from .._derive import (
    Derived,
    TextItem,
    derive_fields,
    embedding_head,
    lifecycle_event,
    message_of,
    new_memory,
    patch_of,
    sentence_vectors,
)
from .._embed import Embedder, embed_memories
from .._engine import (
    EDGE_KINDS,
    EdgeRecord,
    EntityRecord,
    EventQuery,
    Link,
    NewMemory,
    Patch,
    WriteBatch,
)
from .._errors import ConflictError, InvalidInputError, RecordError, short_id
from .._input import (
    MAX_VISIBILITY,
    MemoryInput,
    UpdateFields,
    check_count,
    check_tags,
    check_text,
    check_unit,
    check_validity,
    moment,
    parse_records,
    update_changes,
)
from .._kg._text import named, normalize
from .._models import (
    ChangeType,
    Edge,
    EventType,
    LifecycleEvent,
    Memory,
    MergeResult,
    Stats,
    Status,
    Version,
    parse_change_type,
    parse_kind,
)
from .._progress import progress
from .._records import json_load, patched_memory
from ._knowledge import Knowledge
from ._transitions import Transitions

__all__ = ["Memories"]

#: Past this many changed memories, derived state is rebuilt rather than patched.
_REFRESH_LIMIT = 1000


class Memories:
    """Creating, editing, linking and reading memories."""

    def __init__(self, ctx: StoreContext, transitions: Transitions,
                 knowledge: Knowledge) -> None:
        self._ctx = ctx
        self._transitions = transitions
        self._knowledge = knowledge

    @property
    def knowledge(self) -> Knowledge:
        return self._knowledge

    # -- reads -------------------------------------------------------------------------
    def get(self, memory_id: str, *, owner: str | None = None) -> Memory:
        """The memory with this id; ``NotFoundError`` if absent or another owner's."""
        return self._ctx.visible(memory_id, owner)

    def get_many(self, ids: Iterable[str], *, owner: str | None = None) -> list[Memory]:
        """Memories in the order of ``ids``; unknown or other owners' ids are skipped."""
        self._ctx.before_read()
        found = self._ctx.engine.get_many(list(ids))
        return [m for m in found.values() if owner is None or m.owner == owner]

    def links(self, memory_id: str, *, owner: str | None = None) -> list[Link]:
        """Every edge touching one memory (other ends of another owner are left out)."""
        self._ctx.visible(memory_id, owner)
        links = self._ctx.engine.links_of(memory_id)
        if owner is None:
            return links
        others = self._ctx.engine.get_many([x.other for x in links])
        return [x for x in links if x.other in others and others[x.other].owner == owner]

    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        """Every memory (of ``owner``), ordered by id; or a page: ``limit`` of them after
        the first ``offset`` (only the page is read)."""
        # beyond 2**62 nothing is left to show (PostgreSQL's bigint ends at 2**63)
        offset = min(check_count(offset, "offset"), 2**62)
        limit = None if limit is None else min(check_count(limit, "limit"), 2**62)
        self._ctx.before_read()
        return self._ctx.engine.memories(owner=owner, offset=offset, limit=limit)

    def memory_count(self, *, owner: str | None = None) -> int:
        """How many memories there are (of ``owner``), whatever their status."""
        self._ctx.before_read()
        return self._ctx.engine.memory_count(owner=owner)

    def history(self, memory_id: str, *, owner: str | None = None) -> list[Version]:
        """The append-only version rows of one memory, oldest first."""
        self._ctx.visible(memory_id, owner)
        return self._ctx.engine.history(memory_id)

    def events(self, memory_id: str | None = None, *, event_type: EventType | str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               limit: int | None = None, owner: str | None = None) -> list[LifecycleEvent]:
        """Lifecycle events (of one memory, or of ``owner``'s memories), oldest first."""
        if memory_id is not None:
            self._ctx.visible(memory_id, owner)
        kind = None
        if event_type is not None:
            try:
                kind = EventType(event_type).value
            except ValueError:
                raise InvalidInputError(f"unknown event type {event_type!r}; one of "
                                        + ", ".join(e.value for e in EventType),
                                        field="event_type") from None
        since, until = moment(since, "since"), moment(until, "until")
        return self._ctx.engine.events(EventQuery(
            memory_id=memory_id, owner=owner if memory_id is None else None,
            event_type=kind, since=since, until=until, limit=limit))

    def stats(self) -> Stats:
        """Counts describing the store."""
        self._ctx.before_read()
        counts = self._ctx.engine.counts()
        return Stats(memories=sum(counts.by_kind.values()), by_kind=counts.by_kind,
                     by_status=counts.by_status, hot=counts.hot, superseded=counts.superseded,
                     edges=counts.edges, versions=counts.versions, events=counts.events,
                     owners=counts.owners, embedder=self._ctx.embedder.name,
                     schema_version=self._ctx.engine.schema_version)

    # -- creating ------------------------------------------------------------------------
    def add_many(self, records: Iterable[MemoryInput | Mapping[str, Any] | str], *,
                 batch_size: int = 500, progress_bar: bool = False,
                 actor: str | None = None) -> list[Memory]:
        """Add many memories, all or none: every record is validated, embedded (in
        batches of ``batch_size``) and turned into a new memory first; then everything
        is committed in one transaction. An error leaves the store as it was. ``actor``
        is recorded in each first version row."""
        items = parse_records(records)
        self._check_new_ids(items)
        bar = progress(len(items), "adding", progress_bar)
        batch = WriteBatch()
        size = max(1, batch_size)
        with self._knowledge.unlearning():
            for start in range(0, len(items), size):
                chunk = items[start:start + size]
                self._new(chunk, batch, actor=actor)
                bar.update(len(chunk))
        bar.close()
        self.commit(batch, created=batch.memories)
        return [n.memory for n in batch.memories]

    def _new(self, items: Sequence[MemoryInput], batch: WriteBatch, *,
             reason: str | None = None, actor: str | None = None, source: str | None = None,
             index_of: Mapping[str | None, int] | None = None) -> list[NewMemory]:
        """New memories of ``items`` into ``batch``, with what they add to the graph."""
        self._ctx.sync()  # entities other processes resolved meanwhile
        now = self._ctx.now()
        derived = derive_fields(self._ctx.embed_memories, [
            TextItem(i.subject, i.text, i.context, i.entities or None,
                     at=i.observed or i.created or now, speaker=speaker_of(i.provenance),
                     refers_to=_refers_to(i.provenance),
                     message=message_of(i.payload, i.context, i.provenance))
            for i in items], facts=self._ctx.facts, sentences=self._ctx.embed)
        new = [new_memory(item, d, now=now, reason=reason, actor=self._ctx.actor(actor))
               for item, d in zip(items, derived, strict=True)]
        batch.memories += new
        # in the records' order, the graphs they carry among the texts: a text resolves
        # to the entities the records before it brought, in one chunk as across chunks
        for n, item, d in zip(new, items, derived, strict=True):
            if item.graph:
                self._knowledge.plan_import(batch, n.memory, item.graph, source=source,
                                            index=(index_of or {}).get(n.memory.id))
            else:
                self._knowledge.plan_new(batch, [n.memory], [d.extraction])
        return new

    def _check_new_ids(self, items: Sequence[MemoryInput]) -> None:
        ids = [i.id for i in items if i.id]
        seen: set[str] = set()
        for memory_id in ids:
            if memory_id in seen:
                raise InvalidInputError(f"id {memory_id} appears twice in the input", field="id")
            seen.add(memory_id)
        taken = self._ctx.engine.existing(ids)
        if taken:
            raise ConflictError(f"a memory with id {sorted(taken)[0]} already exists")

    def commit(self, batch: WriteBatch, *, created: Sequence[NewMemory] = (),
               changed: Sequence[str] = (), edges: Sequence[str] = (),
               check: Callable[[], None] | None = None) -> None:
        """Commit one batch, then tell the listeners what it created (``created``),
        changed (``changed``) and linked (``edges``: the ends of new edges). ``check``,
        called under the write lock before anything is written, may raise to refuse a
        batch planned on what another writer has changed meanwhile."""
        ctx = self._ctx
        with ctx.lock:
            with self._knowledge.unlearning():  # it learnt what was planned
                if check is not None:
                    check()
                ctx.engine.commit(batch)
            facts = FactsWritten.of(batch)
            if created:
                ctx.changed(Changed([n.memory.id for n in created],
                                    new=[n.memory for n in created],
                                    vectors={n.memory.id: n.vector for n in created},
                                    sentences={n.memory.id: n.sentences for n in created},
                                    facts=facts))
            if changed:
                patched = batch.patched()
                ctx.changed(Changed(list(changed), patched=patched
                                    if patched is not None and set(changed) <= set(patched)
                                    else None, facts=facts))
            if edges:
                # new edges are handed over as written; strengthened ones are read again
                ctx.changed(Changed(sorted(set(edges)), edges_only=True,
                                    edges=None if batch.merged_edges else batch.new_edges))

    # -- merging (imports) ---------------------------------------------------------------
    def merge(self, records: Sequence[MemoryInput], *, edges: Sequence[Edge] = (),
              reason: str = "import", actor: str | None = None,
              source: str | None = None) -> MergeResult:
        """Create, update or leave each record by id, and add missing edges: all in one
        transaction. Re-merging the same records changes nothing.

        A record whose memory was forgotten is skipped (listed in ``forgotten``) with the
        edges that touch it: nothing brings a forgotten memory back. A record may not move
        a memory to another owner, and supersedes edges may not make a cycle; either is a
        ``RecordError`` naming the record (``source`` names the file) and nothing is
        written.
        """
        batch, result, created = self.plan_merge(records, edges=edges, reason=reason,
                                                 actor=actor, source=source)
        touched = {e.src for e in batch.new_edges} | {e.dst for e in batch.new_edges}
        self.commit(batch, created=created, changed=result.updated, edges=sorted(touched))
        return result

    def merge_chunks(self, chunks: Iterable[Sequence[MemoryInput]], *,
                     edges: Sequence[Edge] = (), index_of: Mapping[str | None, int],
                     reason: str = "import", actor: str | None = None,
                     source: str | None = None) -> MergeResult:
        """``merge`` for more records than fit in memory at once: the chunks (each read
        when its turn comes) are planned and written one after the other into a single
        transaction, then the edges; all of it is committed, or none. ``index_of`` gives
        each record's place in the whole input (for errors); ``edges`` may join any two
        records or stored memories, and are checked for supersede cycles first."""
        ctx = self._ctx
        result = MergeResult()
        known = {i for i in index_of if i}
        gone = ctx.engine.forgotten(list({e.src for e in edges} | {e.dst for e in edges}))
        edges = [e for e in edges if e.src not in gone and e.dst not in gone]
        self.check_supersede_cycles(edges, index_of=index_of, source=source)
        ctx.check_embedder()
        # entities a chunk leaves unmentioned go at the end, unless a chunk mentions them
        # (the store's reads do not show what earlier chunks wrote: a later one may name
        # again what an earlier one left, or leave what an earlier one named)
        leaving: dict[str, None] = {}
        mentioned: set[str] = set()
        owners: dict[str, str | None] = {}
        with self._knowledge.unlearning(), ctx.lock, ctx.engine.writer() as writer:
            for chunk in chunks:
                owners.update({r.id: r.owner for r in chunk if r.id})
                batch, part, _ = self.plan_merge(chunk, reason=reason, actor=actor,
                                                 source=source, index_of=index_of)
                leaving.update(dict.fromkeys(batch.gone_entities))
                mentioned.update(m.entity_id for m in batch.mentions)
                batch.gone_entities = []
                writer.write(batch)
                result.created += part.created
                result.updated += part.updated
                result.unchanged += part.unchanged
                result.forgotten += part.forgotten
            self.check_edge_owners(edges, owners, index_of=index_of, source=source)
            new_edges = self.missing_edges(edges, known=known - set(result.forgotten))
            writer.write(WriteBatch(new_edges=new_edges,
                                    gone_entities=[e for e in leaving
                                                   if e not in mentioned]))
            result.edges_created = len(new_edges)
        touched = [*result.created, *result.updated]
        ctx.changed(Changed(touched, bulk=len(touched) > _REFRESH_LIMIT))
        if new_edges:
            ctx.changed(Changed(sorted({e.src for e in new_edges} | {e.dst for e in new_edges}),
                                edges_only=True))
        return result

    def plan_merge(self, records: Sequence[MemoryInput], *, edges: Sequence[Edge] = (),
                   reason: str = "import", actor: str | None = None, source: str | None = None,
                   index_of: Mapping[str | None, int] | None = None
                   ) -> tuple[WriteBatch, MergeResult, list[NewMemory]]:
        """What ``merge`` would commit, without committing it."""
        ctx = self._ctx
        for n, record in enumerate(records):
            if not isinstance(record, MemoryInput):
                raise RecordError(f"a record is a MemoryInput, not a {type(record).__name__}"
                                  + (" (MemoryInput(**record) checks a dict's fields)"
                                     if isinstance(record, dict) else ""),
                                  source=source, index=n)
        result = MergeResult()
        by_id: dict[str, MemoryInput] = {r.id: r for r in records if r.id}
        if len(by_id) != len(records):
            raise InvalidInputError("merge needs an id on every record", field="id")
        index_of = index_of or {r.id: i for i, r in enumerate(records)}
        existing = ctx.engine.get_many(list(by_id))
        gone = {i for i, m in existing.items() if m.status is Status.FORGOTTEN}
        result.forgotten = sorted(gone)
        existing = {i: m for i, m in existing.items() if i not in gone}
        for memory_id, current in existing.items():
            if current.owner != by_id[memory_id].owner:
                raise RecordError("this memory belongs to a different owner; an import "
                                  "cannot change a memory's owner", source=source,
                                  index=index_of[memory_id], record_id=memory_id,
                                  field="owner")
        gone |= ctx.engine.forgotten(list({e.src for e in edges} | {e.dst for e in edges}))
        edges = [e for e in edges if e.src not in gone and e.dst not in gone]
        self.check_supersede_cycles(edges, index_of=index_of, source=source)
        self.check_edge_owners(edges, {r.id: r.owner for r in records if r.id},
                               index_of=index_of, source=source)
        now = ctx.now()
        updates = {i: _merge_changes(m, by_id[i]) for i, m in existing.items()}
        retext = [i for i, u in updates.items() if _reread(existing[i], u)]
        derived = dict(zip(retext, self._derive_updated(existing, updates, by_id, retext),
                           strict=True))
        batch = WriteBatch()
        with self._knowledge.unlearning():
            for memory_id, update in updates.items():
                if not update:
                    result.unchanged.append(memory_id)
                    continue
                if memory_id in derived:
                    fresh = derived[memory_id]
                    update.update(vector=fresh.vector, sentences=fresh.sentences,
                                  text_sha256=fresh.text_sha256,
                                  entities=list(fresh.entities), **_times(fresh))
                    if fresh.extraction is not None:
                        self._knowledge.plan_retext(batch, existing[memory_id], fresh.extraction)
                update.setdefault("modified",
                                  by_id[memory_id].modified or existing[memory_id].modified)
                batch.patches.append(patch_of(existing[memory_id], update,
                                              ChangeType.MANUAL_EDIT, now, reason=reason,
                                              actor=ctx.actor(actor)))
                result.updated.append(memory_id)
            new_items = [r for r in records if r.id not in existing and r.id not in gone]
            created = self._new(new_items, batch, reason=reason, actor=actor, source=source,
                                index_of=index_of)
        result.created = [n.memory.id for n in created]
        batch.new_edges = self.missing_edges(edges, known=set(by_id) - gone)
        result.edges_created = len(batch.new_edges)
        return batch, result, created

    def _derive_updated(self, existing: Mapping[str, Memory],
                        updates: Mapping[str, dict[str, Any]],
                        by_id: Mapping[str, MemoryInput], ids: Sequence[str]
                        ) -> list[Derived]:
        items = [_reading(existing[i], updates[i], by_id[i].entities or None) for i in ids]
        return derive_fields(self._ctx.embed_memories, items, facts=self._ctx.facts,
                             sentences=self._ctx.embed)

    def check_supersede_cycles(self, edges: Sequence[Edge], *,
                               index_of: Mapping[str | None, int] | None = None,
                               source: str | None = None) -> None:
        """Refuse new supersedes edges that, with the stored ones, make a cycle (a memory
        that replaces itself, directly or through others)."""
        new = [(e.src, e.dst) for e in edges if e.kind == "supersedes"]
        if not new:
            return
        graph: dict[str, set[str]] = {}
        stored = self._ctx.engine.edge_arrays("supersedes")
        for a, b in zip(stored.src, stored.dst, strict=True):
            graph.setdefault(a, set()).add(b)
        for a, b in new:
            graph.setdefault(a, set()).add(b)
        cycle = find_cycle(graph, [a for a, _ in new])
        if cycle:
            where = next((x for x in cycle if index_of and x in index_of), cycle[0])
            raise RecordError("supersedes form a cycle (" + " -> ".join(map(short_id, cycle))
                              + "): a memory "
                              "cannot replace itself", source=source,
                              index=index_of.get(where) if index_of else None,
                              record_id=where, field="superseded_by")

    def check_edge_owners(self, edges: Sequence[Edge], owners: Mapping[str, str | None], *,
                          index_of: Mapping[str | None, int] | None = None,
                          source: str | None = None) -> None:
        """Refuse an imported edge between two owners' memories (``owners``: of the
        records; the store's are read): it would show one owner's memory id, and for
        supersedes make it stale, to another."""
        if not edges:
            return
        ends = {e.src for e in edges} | {e.dst for e in edges}
        stored = self._ctx.engine.get_many([i for i in ends if i not in owners])
        owner_of = {**{i: m.owner for i, m in stored.items()}, **owners}
        for edge in edges:
            if edge.src in owner_of and edge.dst in owner_of \
                    and owner_of[edge.src] != owner_of[edge.dst]:
                # a supersedes edge is the replaced record's superseded_by (new -> old)
                where = edge.dst if not index_of or edge.dst in index_of else edge.src
                raise RecordError(
                    f"a {edge.kind} edge joins {short_id(edge.src)} (owner "
                    f"{owner_of[edge.src]!r}) and {short_id(edge.dst)} (owner "
                    f"{owner_of[edge.dst]!r}): an edge stays within one owner's memories",
                    source=source,
                    index=index_of.get(where) if index_of else None, record_id=where,
                    field="superseded_by" if edge.kind == "supersedes" else "edges")

    def missing_edges(self, edges: Sequence[Edge], *, known: set[str]) -> list[EdgeRecord]:
        """Edges to create: both ends known, not a self-loop, not already in the graph.

        Existing edges are looked up per memory for a few memories, by one scan of the
        edge table for many (a bulk load touches thousands).
        """
        engine = self._ctx.engine
        now = self._ctx.now()
        for edge in edges:
            if edge.kind not in EDGE_KINDS:
                raise InvalidInputError(f"unknown edge kind {edge.kind!r}", field="kind")
            if isinstance(edge.weight, bool) or not isinstance(edge.weight, int | float) \
                    or not np.isfinite(edge.weight) or edge.weight <= 0:
                raise InvalidInputError(f"edge weight must be a positive number, got "
                                        f"{edge.weight!r}", field="weight")
        ends = {e.src for e in edges} | {e.dst for e in edges}
        in_store = engine.existing(list(ends))
        present = known | in_store
        touched = ends & in_store
        current: dict[str, set[tuple[str, str]]] = {}
        if len(touched) > 32:
            for kind in {e.kind for e in edges}:
                arrays = engine.edge_arrays(kind)  # type: ignore[arg-type]
                current[kind] = set(zip(arrays.src, arrays.dst, strict=True))
        else:
            for memory_id in touched:
                for link in engine.links_of(memory_id):
                    pair = (memory_id, link.other) if link.direction == "out" \
                        else (link.other, memory_id)
                    current.setdefault(link.kind, set()).add(pair)
        wanted: dict[tuple[str, str, str], EdgeRecord] = {}
        for edge in edges:
            src, dst = edge.src, edge.dst
            if edge.kind == "co_occurs" and dst < src:
                src, dst = dst, src
            if src == dst or src not in present or dst not in present:
                continue
            if (src, dst) in current.get(edge.kind, set()):
                continue
            wanted[(edge.kind, src, dst)] = EdgeRecord(
                kind=edge.kind, src=src, dst=dst,  # type: ignore[arg-type]
                weight=float(edge.weight), count=1, source=edge.source,
                reason=edge.reason or "", at=now)
        return list(wanted.values())

    def link_many(self, edges: Sequence[Edge]) -> int:
        """Create many edges in one transaction (bulk loads); edges already in the graph,
        self-loops and edges to unknown or forgotten memories are skipped. Returns how
        many were made."""
        edges = list(edges)
        gone = self._ctx.engine.forgotten(list({e.src for e in edges} | {e.dst for e in edges}))
        new = self.missing_edges([e for e in edges if e.src not in gone and e.dst not in gone],
                                 known=set())
        if new:
            self.commit(WriteBatch(new_edges=new),
                         edges=[e.src for e in new] + [e.dst for e in new])
        return len(new)

    def link(self, a: str, b: str, *, kind: str = "references", weight: float = 1.0,
             source: str = "explicit", owner: str | None = None) -> None:
        """Connect two memories: ``references`` (a points at b) or ``co_occurs``
        (undirected; a second link strengthens it)."""
        if kind not in ("references", "co_occurs"):
            raise InvalidInputError("kind must be 'references' or 'co_occurs'", field="kind")
        if isinstance(weight, bool) or not isinstance(weight, int | float) \
                or not np.isfinite(weight) or weight <= 0:
            raise InvalidInputError(f"weight must be a positive number, got {weight!r}",
                                    field="weight")
        ends = [self._ctx.visible(a, owner), self._ctx.visible(b, owner)]
        if a == b:
            raise InvalidInputError("a memory cannot be linked to itself", field="b")
        for end in ends:
            if end.status is Status.FORGOTTEN:
                raise ConflictError(f"memory {end.id} was forgotten; it cannot be linked")
        if kind == "co_occurs" and b < a:
            a, b = b, a
        edge = EdgeRecord(kind=kind, src=a, dst=b, weight=float(weight),  # type: ignore[arg-type]
                          source=check_text(source, field="source", max_len=200),
                          at=self._ctx.now())
        self.commit(WriteBatch(merged_edges=[edge]), edges=[a, b])

    # -- the knowledge graph by hand -----------------------------------------------------
    def split_entity(self, entity_id: str, alias: str, *, owner: str | None = None
                     ) -> EntityRecord:
        """Undo a merge of entity resolution: the form ``alias`` leaves the entity and
        becomes an entity of its own, never merged with it again; the memories that used
        that form mention it. Returns the new entity."""
        batch = WriteBatch()
        try:
            with self._knowledge.unlearning():
                new, moved = self._knowledge.plan_split(batch, entity_id, alias, owner=owner)
                self.commit(batch, changed=moved)
        finally:
            self._knowledge.reset()  # the resolver split before the write committed
        return new

    # -- editing -------------------------------------------------------------------------
    def update(self, memory_id: str, *, reason: ChangeType | str = ChangeType.MANUAL_EDIT,
               actor: str | None = None, owner: str | None = None,
               **fields: Unpack[UpdateFields]) -> Memory:
        """Change fields of a memory (``UpdateFields``: text, subject, importance,
        confidence, tags, kind, project, visibility, valid_from, valid_to, provenance);
        writes one version row with change type ``reason``."""
        memory = self._ctx.current(memory_id, owner)
        if memory.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} was forgotten and cannot be edited")
        change_type = parse_change_type(reason)
        updates = _checked_updates(fields)
        check_validity(updates.get("valid_from", memory.valid_from),
                       updates.get("valid_to", memory.valid_to))
        # (a list given for a tuple held, tags, is the same when its items are)
        updates = {k: v for k, v in updates.items()
                   if _held(getattr(memory, k, None)) != _held(v)
                   and not (k == "kind" and memory.kind.value == v)}
        if not updates:
            return memory
        batch = WriteBatch()
        if _reread(memory, updates):
            fresh = derive_fields(self._ctx.embed_memories, [_reading(memory, updates)],
                                  facts=self._ctx.facts, sentences=self._ctx.embed)[0]
            updates.update(entities=list(fresh.entities), vector=fresh.vector,
                           sentences=fresh.sentences,
                           text_sha256=fresh.text_sha256, **_times(fresh))
            if fresh.extraction is not None:
                with self._knowledge.unlearning():
                    self._knowledge.plan_retext(batch, memory, fresh.extraction)
        if "importance" in updates and change_type is not ChangeType.IMPORTANCE_DECAY:
            # A deliberate new importance is the new baseline that decay starts from.
            updates["original_importance"] = updates["importance"]
        patch = patch_of(memory, updates, change_type, self._ctx.now(),
                         reason=_noted(change_type, memory, updates),
                         actor=self._ctx.actor(actor))
        batch.patches.append(patch)
        self.commit(batch, changed=[memory_id])
        return patched_memory(memory, patch.set)

    def supersede(self, old_id: str, new: Memory | str, *, reason: str = "conflict_update",
                  owner: str | None = None, actor: str | None = None,
                  **fields: Any) -> Memory:
        """Record that ``new`` replaces ``old_id``: a SUPERSEDES edge (new -> old), the old
        memory marked superseded-by (kept, no longer recalled). ``new`` is a memory, the id
        of one, or the text of a new memory that inherits the old one's kind and scope.
        A memory replaced already is replaced at its current version (the newest memory
        of its owner at the end of its chain; a forgotten one ends the chain, as if never
        written), so that one version stays current; a replacement the chain holds
        already changes nothing."""
        ctx = self._ctx
        old = ctx.current(old_id, owner)
        if old.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {old_id} was forgotten")
        known = ctx.engine.get(new) if isinstance(new, str) and new else None
        if known is not None and owner is not None and known.owner != owner:
            known = None  # another owner's id: the text of a new memory, as below
        new_given = new.id if isinstance(new, Memory) else known.id if known else None
        if new_given is not None and new_given in old.superseded_by:
            return ctx.engine.get(new_given)  # type: ignore[return-value]
        chain = self._later_versions(old)
        if new_given is not None and new_given in chain:
            return chain[new_given]  # the chain holds it already: nothing to change
        heads = [m for m in chain.values() if not any(i in chain for i in m.superseded_by)]
        if heads:
            # replaced already: what replaces it now replaces its current version, so
            # that one version stays current (two replacements of one memory were both)
            old = max(heads, key=lambda m: (m.created, m.id))
            old_id = old.id
        now = ctx.now()
        created: list[NewMemory] = []
        batch = WriteBatch()
        if isinstance(new, Memory):
            new_id = ctx.visible(new.id, owner).id
        elif known is not None and (owner is None or known.owner == owner):
            new_id = known.id
        else:
            # Not a memory this caller can see: the text of a new one. Another owner's id
            # is treated exactly as an unknown one, so the answer tells nothing about it.
            inherited = {"kind": old.kind, "subject": old.subject, "owner": old.owner,
                         "project": old.project, "visibility": old.visibility,
                         "tags": old.tags, "importance": old.importance}
            item = MemoryInput.parse({**inherited, **fields, "text": new})
            created = self._new([item], batch, reason=f"supersedes {old_id}", actor=actor)
            new_id = created[0].memory.id
        if new_id == old_id:
            raise ConflictError("a memory cannot supersede itself")
        if new_id in old.superseded_by:
            return ctx.engine.get(new_id)  # type: ignore[return-value]
        if not created:
            if ctx.engine.forgotten([new_id]):
                raise ConflictError(f"memory {new_id} was forgotten; it cannot supersede "
                                    "another")
            try:
                self.check_supersede_cycles([Edge("supersedes", new_id, old_id)])
            except RecordError as exc:
                raise ConflictError(str(exc)) from None
        patch, edge = self.supersede_patch(old, new_id, reason=reason, at=now, actor=actor)
        batch.patches.append(patch)
        batch.new_edges.append(edge)
        new_facts = batch.facts if created else ctx.engine.facts(sources=[new_id])
        self._knowledge.plan_supersede(batch, old, new_facts, at=now, by=new_id)
        self.commit(batch, created=created, changed=[old_id, new_id])
        return ctx.engine.get(new_id)  # type: ignore[return-value]

    def _later_versions(self, memory: Memory) -> dict[str, Memory]:
        """The memories that replaced ``memory``, directly or not, of its owner alone (a
        chain never leads into another owner's memories) and not forgotten (a forgotten
        memory is as if never written: what replaced it replaced nothing of ``memory``)."""
        chain: dict[str, Memory] = {}
        todo = [i for i in memory.superseded_by if i != memory.id]
        while todo:
            found = self._ctx.engine.get_many(list(dict.fromkeys(todo)))
            todo = []
            for later in found.values():
                if later.id in chain or later.owner != memory.owner \
                        or later.status is Status.FORGOTTEN:
                    continue
                chain[later.id] = later
                todo += [i for i in later.superseded_by if i not in chain and i != memory.id]
        return chain

    def supersede_patch(self, old: Memory, new_id: str, *, reason: str, at: datetime,
                        actor: str | None = None,
                        change_type: ChangeType = ChangeType.CONFLICT_UPDATE
                        ) -> tuple[Patch, EdgeRecord]:
        """What recording "``new_id`` replaces ``old``" writes: the old memory's change
        (superseded-by, a version row of ``change_type``, a ``supersede`` event) and the
        SUPERSEDES edge."""
        actor = self._ctx.actor(actor)
        event = lifecycle_event(old.id, EventType.SUPERSEDE, from_state="current",
                                to_state="superseded", reason=reason, at=at, agent_id=actor,
                                metadata={"supersededBy": new_id})
        patch = patch_of(old, {"superseded_by": [*old.superseded_by, new_id]},
                         change_type, at, reason=reason, actor=actor, event=event)
        return patch, EdgeRecord(kind="supersedes", src=new_id, dst=old.id, reason=reason, at=at)

    def patch(self, patches: Sequence[Patch], *, merged_edges: Sequence[EdgeRecord] = ()
              ) -> None:
        """Commit changes built elsewhere (feedback counters, co-occurrences)."""
        ids = list(dict.fromkeys(p.memory_id for p in patches))
        ends = [e.src for e in merged_edges] + [e.dst for e in merged_edges]
        self.commit(WriteBatch(patches=list(patches), merged_edges=list(merged_edges)),
                     changed=ids, edges=ends)

    # -- switching models --------------------------------------------------------------
    def reembed(self, embedder: Embedder | str, *, batch_size: int = 256,
                progress_bar: bool = False) -> int:
        """Re-embed every memory with another model (or the store's own) and make it the
        store's model: each memory's vector and the vectors of its sentences (which the
        memories of a store made before they were kept get this way).

        Returns the number of memories embedded.
        """
        ctx = self._ctx
        chosen = ctx.make_embedder(embedder)
        fields = ["id", "subject", "text", "context", "payload", "provenance", "status",
                  "version"]
        rows = _to_embed(ctx.engine.scan(fields).table.to_pylist(), {})
        bar = progress(len(rows), "re-embedding", progress_bar)
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            vectors = _embedded(chosen, chunk)
            with ctx.lock:
                # a memory forgotten since the scan keeps no vector of its erased text
                gone = ctx.engine.forgotten(list(vectors[0]))
                ctx.engine.set_vectors(*({i: v for i, v in part.items() if i not in gone}
                                         for part in vectors))
            bar.update(len(chunk))
        bar.close()
        with ctx.lock:
            # what other writers added or changed meanwhile was embedded with the old
            # model: embedded again, then the model switches, with no write between
            done = {r["id"]: _embedded_as(r) for r in rows}
            late = _to_embed(ctx.engine.scan(fields).table.to_pylist(), done)
            for start in range(0, len(late), batch_size):
                ctx.engine.set_vectors(*_embedded(chosen, late[start:start + batch_size]))
            ctx.switch_embedder(chosen)
            ctx.changed(Changed([], bulk=True))
        return len({r["id"] for r in (*rows, *late)})


def _embedded(embedder: Embedder, rows: Sequence[Mapping[str, Any]]
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``embedder``'s memory vectors and sentence vectors of ``rows``, by id."""
    vectors = embed_memories(embedder, [embedding_head(r["subject"], r["text"])
                                        for r in rows], [r["context"] for r in rows])
    sentences = sentence_vectors(embedder.embed, [r["text"] for r in rows], [
        message_of(r["payload"], r["context"], json_load(r["provenance"])) for r in rows])
    return ({r["id"]: v for r, v in zip(rows, vectors, strict=True)},
            {r["id"]: v for r, v in zip(rows, sentences, strict=True)})


def _embedded_as(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a memory's vectors are made of: its version, and the text, context and
    payload (a forget scrubs its neighbours' context and message without a new
    version)."""
    return row["version"], row["subject"], row["text"], row["context"], row["payload"]


def _to_embed(rows: list[dict[str, Any]], done: Mapping[str, tuple[Any, ...]]
              ) -> list[dict[str, Any]]:
    """The scanned memories ``reembed`` embeds: not forgotten, and not already embedded as
    they are now (``done``: id -> ``_embedded_as``)."""
    return [r for r in rows if r["status"] != Status.FORGOTTEN.value
            and done.get(r["id"]) != _embedded_as(r)]


#: The fields ``update`` changes that a version row does not hold (it holds the text,
#: subject, importance, status and kind each version had): its reason says what they were.
_NOTED = ("confidence", "tags", "project", "visibility", "valid_from", "valid_to",
          "provenance")


def _noted(change_type: ChangeType, memory: Memory, updates: Mapping[str, Any]) -> str:
    """A version row's reason: the change type, and the old and new values of the fields
    the row does not hold ("manual_edit: tags [alpha, beta] -> [gamma]"); forget erases
    it with the row's text."""
    def shown(value: Any) -> str:
        if isinstance(value, list | tuple):
            text = "[" + ", ".join(map(str, value)) + "]"
        elif isinstance(value, dict):
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        else:
            text = "none" if value is None else str(value)
        return text if len(text) <= 200 else f"{text[:200]}…"

    notes = [f"{name} {shown(getattr(memory, name))} -> {shown(updates[name])}"
             for name in _NOTED if name in updates]
    return change_type.value + (": " + "; ".join(notes) if notes else "")


def _held(value: Any) -> Any:
    """A field's value as compared for a change: a list as the tuple a memory holds."""
    return tuple(value) if isinstance(value, list) else value


def _checked_updates(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``update``'s fields checked and normalised (what each sets), before they are
    compared with the memory; unknown names are refused."""
    given = update_changes(fields)
    updates: dict[str, Any] = {}
    if "text" in given:
        updates["text"] = check_text(given["text"], field="text")
    if "subject" in given:
        subject = given["subject"]
        updates["subject"] = None if subject is None else check_text(
            subject, field="subject", max_len=2000)
    for name in ("importance", "confidence"):
        if name in given:
            updates[name] = check_unit(given[name], field=name)
    if "tags" in given:
        updates["tags"] = check_tags(given["tags"])
    if "kind" in given:
        updates["kind"] = parse_kind(given["kind"]).value
    if "visibility" in given:
        updates["visibility"] = check_text(given["visibility"], field="visibility",
                                           max_len=MAX_VISIBILITY)
    for name in ("project", "provenance", "valid_from", "valid_to"):  # as a new memory's
        if name in given:
            updates[name] = getattr(MemoryInput.parse({"text": "x", name: given[name]}), name)
    return updates


def _times(derived: Derived) -> dict[str, list[datetime]]:
    """The time-window fields of a new text (none when nothing was extracted)."""
    times = derived.extraction.times if derived.extraction is not None else ()
    return {"times_from": [t.window.start for t in times],
            "times_to": [t.window.end for t in times]}


def _reread(memory: Memory, changes: Mapping[str, Any]) -> bool:
    """Whether ``changes`` give ``memory`` another reading: other words, or another
    speaker (who said it decides whom "I" and a leading "she" name)."""
    def voice(provenance: Mapping[str, Any]) -> tuple[str, str]:  # as the resolver reads
        return normalize(speaker_of(provenance) or ""), normalize(_refers_to(provenance) or "")

    return bool({"text", "subject", "context"} & set(changes)) or voice(
        changes.get("provenance", memory.provenance)) != voice(memory.provenance)


def _reading(memory: Memory, changes: Mapping[str, Any],
             entities: Sequence[str] | None = None) -> TextItem:
    """What ``memory`` reads as once ``changes`` are made (``entities``: given by hand)."""
    provenance = changes.get("provenance", memory.provenance)
    context = changes.get("context", memory.context)
    return TextItem(changes.get("subject", memory.subject), changes.get("text", memory.text),
                    context, entities,
                    at=memory.observed or memory.created, speaker=speaker_of(provenance),
                    refers_to=_refers_to(provenance),
                    message=message_of(changes.get("payload", memory.payload), context,
                                       provenance))


def speaker_of(provenance: Mapping[str, Any]) -> str | None:
    """Who said a memory's text (conversations record it), for first-person facts."""
    return _named_in(provenance, "speaker")


def _refers_to(provenance: Mapping[str, Any]) -> str | None:
    """Whom a leading "she" / "he" of a memory's text means (conversations record it)."""
    return _named_in(provenance, "refers_to")


def _named_in(provenance: Mapping[str, Any], key: str) -> str | None:
    """A name the provenance gives, when it names someone (a speaker "." names no one: it
    is left out, as the entity resolver would refuse it)."""
    return named(provenance.get(key))


def find_cycle(graph: Mapping[str, set[str]], starts: Iterable[str]) -> list[str]:
    """A cycle reachable from ``starts`` in a directed graph, as a path that ends where
    it began ([] when there is none); iterative depth-first search.

    >>> find_cycle({"a": {"b"}, "b": {"a"}}, ["a"])
    ['a', 'b', 'a']
    >>> find_cycle({"a": {"b"}}, ["a"])
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
        "context": incoming.context, "integrity": incoming.integrity, "extra": incoming.extra,
    }
    if incoming.created is not None:
        wanted["created"] = incoming.created
    # ``modified`` is not compared: use moves it (feedback, access), and a file that says
    # nothing new must not roll it back. It follows the other changes (``plan_merge``).
    have = current.model_dump()
    out = {}
    for key, value in wanted.items():
        old = have.get(key)
        old = getattr(old, "value", old)
        if isinstance(old, tuple):
            old = list(old)
        if old != value:
            out[key] = value
    return out
