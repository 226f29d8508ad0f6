"""The recall index kept in sync with the store: built from one scan or read from its
file (``_saved_index``) on first use, then patched by every commit (``on_change``): the
memories' fields and vectors, their edges and the knowledge graph beside them; written
back to its file when the store closes."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from .._arrow import column_values, to_pylist
from .._context import Changed, FactsWritten, StoreContext
from .._models import Memory
from .._recall._entities import EntityIndex
from .._recall._index import ACCESS_FIELDS, INDEX_FIELDS, RecallIndex
from .._records import sentences_matrix
from .._sync import Gate
from .._trim import release_freed_memory
from ._saved_index import SavedIndex

__all__ = ["ROW_FIELDS", "IndexSync"]

#: Edges are refreshed per memory up to this many ids; beyond, all edges are reloaded.
_EDGE_REFRESH_LIMIT = 20
#: an index of this many memories or more gives its build's temporaries back (``_trim``)
_TRIM_FROM = 100_000
#: What the index build reads: its own fields and the rest of each memory's (the rows
#: hits are made from), then the vectors.
ROW_FIELDS = [*INDEX_FIELDS, *(f for f in Memory.model_fields if f not in INDEX_FIELDS)]


class IndexSync:
    """The store's one ``RecallIndex``, following every commit. Readers hold ``gate``
    shared while they use it; a commit's changes go in holding it exclusively."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._index: RecallIndex | None = None
        #: the index kept in a file beside the store (``_saved_index``)
        self._saved = SavedIndex(ctx, ROW_FIELDS)
        self.gate = Gate()
        self._build_lock = threading.Lock()
        ctx.on_change(self._on_change)

    @property
    def current(self) -> RecallIndex | None:
        """The index if it is built (or read) and no bulk change has dropped it since."""
        return self._index

    def _on_change(self, change: Changed) -> None:
        ids = change.ids
        if change.removed:
            self._saved.discard()
        index = self._index
        if index is None:
            return
        if change.bulk:
            self._index = None
            return
        if change.access_only:
            rows = self._ctx.engine.scan(list(ACCESS_FIELDS), ids=list(ids)).table
            with self.gate.exclusive():
                index.set_access(to_pylist(rows))
            return
        with self.gate.exclusive():
            if change.patched is not None and not change.foreign:
                # Fields set, nothing said or mentioned anew: the commit hands them over
                # (an importance bump cost 590 ms at 4k memories and 9k facts when it
                # read every fact again, measured by eval.bench_writes).
                for memory_id in ids:
                    if not index.patch(memory_id, change.patched.get(memory_id, {})):
                        self._reread(index, [memory_id])
                return
            if not change.edges_only:
                if change.new and len(change.new) == len(ids):
                    vectors = change.vectors or {}
                    sentences = change.sentences or {}
                    index.upsert([{f: getattr(m, f) for f in INDEX_FIELDS} for m in change.new],
                                 [vectors.get(m.id) for m in change.new],
                                 sentences=[sentences.get(m.id) for m in change.new])
                else:
                    self._reread(index, ids)
                self._refresh_graph(index, ids, reread=change.removed, facts=change.facts)
            if change.edges_only and change.edges is not None and not change.foreign:
                # the edges the commit created, as it wrote them (reading each end's
                # edges again cost 13 ms a memory, a sixth of a conversation's ingest)
                index.add_edges([(e.kind, e.src, e.dst, e.weight) for e in change.edges
                                 if e.kind in ("references", "co_occurs")])
            elif change.edges_only or change.removed:
                self._refresh_edges(index, ids)

    def _reread(self, index: RecallIndex, ids: Sequence[str]) -> None:
        """These memories into the index as the store holds them, sentence vectors too."""
        scan = self._ctx.engine.scan([*INDEX_FIELDS, "vector", "sentences"], ids=list(ids))
        rows = to_pylist(scan.table)
        for row in rows:  # accesses counted here and not written yet stay counted
            pos = index.pos.get(row["id"])
            if pos is not None and index.access_count[pos] > (row.get("access_count") or 0):
                row.update(index.access(pos))
        index.upsert(rows, scan.vectors, scan.has_vector,
                     sentences=[_sentences(r.get("sentences"), index.dim) for r in rows])

    def _load_edges(self, index: RecallIndex) -> None:
        for kind in ("references", "co_occurs"):
            arrays = self._ctx.engine.edge_arrays(kind)
            index.set_edges(kind, arrays.src, arrays.dst, arrays.weight)

    def _refresh_edges(self, index: RecallIndex, ids: Sequence[str]) -> None:
        if len(ids) > _EDGE_REFRESH_LIMIT:
            self._load_edges(index)
            return
        for memory_id in ids:
            links = self._ctx.engine.links_of(memory_id) if memory_id in index.pos else []
            for kind in ("references", "co_occurs"):
                index.replace_edges_of(kind, memory_id,
                                       [(x.other, x.weight) for x in links if x.kind == kind])

    def ensure_index(self) -> RecallIndex:
        """The index: on first use read from its file and caught up with the store, or
        built from one scan (``_saved_index``)."""
        index = self._index
        if index is not None:
            return index
        with self._build_lock:
            if self._index is None:
                # accesses counted in an index a bulk change dropped (a reembed), and not
                # written yet, are written first: a new one read without them, and its
                # first count was written over them
                self._ctx.flush_pending()
                self._saved.open(self._build, self._adopt, self._on_change)
            assert self._index is not None
            return self._index

    def _adopt(self, index: RecallIndex | None) -> None:
        self._index = index

    def _build(self) -> RecallIndex:
        """The index, built from one scan of the store."""
        engine = self._ctx.engine
        # Where sign bits pick the candidates, the vectors are kept at half
        # precision (bfloat16) and read from the store at half (float16): at 1M
        # memories 0.7 GB instead of 1.5 GB, and never both at once.
        half = RecallIndex.uses_sign_bits_at(engine.memory_count(),
                                             self._ctx.settings.sign_bits_from)
        built = RecallIndex(self._ctx.vector_dim(), half=half)
        built.sign_bits_from = self._ctx.settings.sign_bits_from
        scan = engine.scan([*ROW_FIELDS, "vector", "sentences"],
                           vector_dtype=np.float16 if half else np.float32)
        built.load(scan.table.select(list(INDEX_FIELDS)), scan.vectors,
                   scan.has_vector)
        # the sentence vectors made when each text was written (none re-embedded here)
        statuses = column_values(scan.table.column("status"))
        pos = 0
        for chunk in scan.table.column("sentences").chunks:  # as text: ~4 GB at 1M
            for text in column_values(chunk):
                if text is not None and statuses[pos] != "forgotten":
                    built.set_sentences(pos, _sentences(text, built.dim))
                pos += 1
        built.set_rows(scan.table.drop_columns(["sentences"]))
        del scan, statuses
        self._load_edges(built)
        self._load_graph(built)
        if built.size >= _TRIM_FROM:
            release_freed_memory()  # the build's temporaries
        return built

    def _load_graph(self, index: RecallIndex) -> None:
        """Entities, who mentions them, and facts: the knowledge graph beside the index."""
        engine = self._ctx.engine
        graph = index.entities
        graph.add_entities(engine.entities(all_owners=True))
        graph.add_mentions(engine.mentions(), index.pos)
        graph.set_facts(engine.facts(all_owners=True))

    def _refresh_graph(self, index: RecallIndex, ids: Sequence[str], *,
                       reread: bool = False, facts: FactsWritten | None = None) -> None:
        """The mentions of these memories again, entities they bring, facts; with
        ``reread`` (they were forgotten) the entities they mentioned are read again too,
        as forget leaves them their other memories' names alone. Given the ``facts`` the
        commit wrote, only those change (and the facts of the entities that came or
        went are read): reading every fact again cost 2 s a text update at 100k
        memories and 160k facts, measured by eval.bench_writes."""
        engine = self._ctx.engine
        graph = index.entities
        if len(ids) > _EDGE_REFRESH_LIMIT:  # many changed: load it all again
            fresh = EntityIndex()
            fresh.times = graph.times  # kept by ``upsert``
            index.entities = fresh
            self._load_graph(index)
            return
        mentions = engine.mentions(memory_ids=list(ids))
        named = sorted({m.entity_id for m in mentions})
        known = graph.size
        if named:  # new entities, and known ones a commit renamed or gave an alias
            graph.add_entities([e for e in engine.entities(ids=named) if graph.differs(e)])
        before = {e for memory_id in ids if memory_id in index.pos
                  for e in graph.mentioned(index.pos[memory_id])}
        for memory_id in ids:
            pos = index.pos.get(memory_id)
            if pos is not None:
                graph.set_mentions(pos, [(graph.pos[m.entity_id], m.weight) for m in mentions
                                         if m.memory_id == memory_id and m.entity_id in graph.pos])
        if reread and before:
            graph.add_entities(engine.entities(ids=[graph.ids[e] for e in sorted(before)]))
        left = {e for e in before if not graph.memories_of.get(e)}
        for entity in left:  # no memory mentions it any more
            graph.remove_entity(graph.ids[entity])
        if facts is None:
            graph.set_facts(engine.facts(all_owners=True))
            return
        came_or_went = left | set(range(known, graph.size))
        if came_or_went:
            graph.set_facts_of(came_or_went, engine.facts(
                entity_ids=[graph.ids[e] for e in sorted(came_or_went)]))
        graph.change_facts(facts.live, facts.gone, skip=came_or_went)

    def close(self) -> None:
        """Write the index to its file (``_saved_index``); a second close writes nothing."""
        index, self._index = self._index, None
        if index is not None:
            self._saved.close(index, self.gate)


def _sentences(text: str | None, dim: int) -> np.ndarray | None:
    """The sentence vectors a ``sentences`` value holds (none when it holds none of the
    index's width: the memory's own vector still serves)."""
    try:
        return sentences_matrix(text, dim)
    except ValueError:
        return None
