"""Recall: the in-process index kept in sync with the store, ``recall`` over it, retrieval
feedback, and switching embedding models (``reembed``)."""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .._arrow import to_pylist
from .._context import Changed, StoreContext, progress
from .._derive import embedding_head, lifecycle_event, patch_of
from .._embed import Embedder, embed_memories
from .._engine import EdgeRecord, Patch, memory_from_fields
from .._errors import ConflictError, InvalidInputError, StoreError
from .._input import RecallWindow, check_unit, recall_window
from .._kg import ROLE_WEIGHTS, asks_for_time, is_temporal_question, query_window
from .._learn._features import Candidates, capture
from .._learn._samples import Reranker, SampleLog
from .._models import ChangeType, EventType, Kind, Memory, Status, parse_kind
from .._recall._access import AccessRow, AccessWriter
from .._recall._actr import activation_s
from .._recall._config import RecallConfig, resolve_preset
from .._recall._entities import EntityIndex
from .._recall._fusion import competition_ranks, rrf_from_ranks
from .._recall._hits import ActivationInfo, ChannelRank, Explanation, Hit, LearnedInfo
from .._recall._index import ACCESS_FIELDS, INDEX_FIELDS, RecallIndex
from .._recall._query import asks_about_assistant
from .._recall._walk import hop_expansion, local_ppr
from .._records import patched_memory
from .._sync import Gate
from .._text import tokenize
from .._time import to_utc
from .._trim import release_freed_memory
from ._memories import Memories
from ._saved_index import SavedIndex

_NO_ROW = (np.zeros(0, dtype=np.int64), np.zeros(0))

__all__ = ["Recall"]

MAX_QUERY = 10_000
#: Edges are refreshed per memory up to this many ids; beyond, all edges are reloaded.
_EDGE_REFRESH_LIMIT = 20
#: an index of this many memories or more gives its build's temporaries back (``_trim``)
_TRIM_FROM = 100_000
_RECENT_RECALLS = 256
#: the longest window length ``time_after`` stretches (31 days, in seconds): an open window
#: ("before March") would otherwise reach everything after it
_MONTH_S = 31 * 86400.0
#: What the index build reads: its own fields and the rest of each memory's (the rows
#: hits are made from), then the vectors.
ROW_FIELDS = [*INDEX_FIELDS, *(f for f in Memory.model_fields if f not in INDEX_FIELDS)]

Ranking = list[tuple[int, float]]


@dataclass
class _RecallRecord:
    query: str
    ids: list[str]
    useful: set[str] = field(default_factory=set)


class Recall:
    """Ranking over the recall index; the index follows every commit (``on_change``)."""

    def __init__(self, ctx: StoreContext, memories: Memories) -> None:
        self._ctx = ctx
        self._memories = memories
        self._index: RecallIndex | None = None
        #: the index kept in a file beside the store (``_saved_index``)
        self._saved = SavedIndex(ctx, ROW_FIELDS)
        self._index_gate = Gate()
        self._index_build = threading.Lock()
        self._cache: collections.OrderedDict[str, Memory] = collections.OrderedDict()
        self._cache_lock = threading.Lock()
        self._recent: collections.deque[_RecallRecord] = collections.deque(
            maxlen=_RECENT_RECALLS)
        self._access = AccessWriter(lambda records: ctx.engine.record_access(records))
        self._workers: ThreadPoolExecutor | None = None
        self._inflight: dict[str, Future[Memory | None]] = {}
        self._epoch = 0
        self._bulk_epoch = 0
        self._changed_at: dict[str, int] = {}
        #: recent recalls' candidates, for the feedback that teaches the learned ranker
        self.samples = SampleLog(_RECENT_RECALLS)
        #: the learned ranker (``graphmem._learn``) for configurations with ``learned``
        self.reranker: Reranker | None = None
        ctx.on_change(self._on_change)
        ctx.on_read(self._flush_pending)

    def _pool(self) -> ThreadPoolExecutor:
        """Two workers: the query embedding overlaps the full-text work, and cold hits are
        fetched two at a time (17.7 -> 9.3 ms for 10 hits at 100k, measured)."""
        if self._workers is None:
            self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="graphmem")
        return self._workers

    # -- keeping derived state in sync -----------------------------------------------
    def _on_change(self, change: Changed) -> None:
        ids = change.ids
        with self._cache_lock:
            self._epoch += 1
            if not self._inflight:  # only fetches under way need to know what changed
                self._changed_at.clear()
            for memory_id in ids:
                self._cache.pop(memory_id, None)
                self._changed_at[memory_id] = self._epoch
            if change.bulk:
                self._cache.clear()
                self._bulk_epoch = self._epoch
        if change.removed:
            for memory_id in ids:
                self._access.discard(memory_id)
            self._saved.discard()
        index = self._index
        if index is None:
            return
        if change.bulk:
            self._index = None
            return
        if change.access_only:
            rows = self._ctx.engine.scan(list(ACCESS_FIELDS), ids=list(ids)).table
            with self._index_gate.exclusive():
                index.set_access(to_pylist(rows))
            return
        with self._index_gate.exclusive():
            if change.patched is not None and not change.foreign:
                # Fields set, nothing said or mentioned anew: the commit hands them over
                # (an importance bump cost 590 ms at 4k memories and 9k facts when it
                # read every fact again, measured by eval.bench_writes).
                for memory_id in ids:
                    if not index.patch(memory_id, change.patched.get(memory_id, {})):
                        scan = self._ctx.engine.scan([*INDEX_FIELDS, "vector"],
                                                     ids=[memory_id])
                        index.upsert(to_pylist(scan.table), scan.vectors, scan.has_vector)
                return
            if not change.edges_only:
                if change.new and len(change.new) == len(ids):
                    vectors = change.vectors or {}
                    index.upsert([{f: getattr(m, f) for f in INDEX_FIELDS} for m in change.new],
                                 [vectors.get(m.id) for m in change.new])
                else:
                    scan = self._ctx.engine.scan([*INDEX_FIELDS, "vector"], ids=list(ids))
                    index.upsert(to_pylist(scan.table), scan.vectors, scan.has_vector)
                self._refresh_graph(index, ids, reread=change.removed)
            if change.edges_only or change.removed:
                self._refresh_edges(index, ids)

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
        with self._index_build:
            if self._index is None:
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
        scan = engine.scan([*ROW_FIELDS, "vector"],
                           vector_dtype=np.float16 if half else np.float32)
        built.load(scan.table.select(list(INDEX_FIELDS)), scan.vectors,
                   scan.has_vector)
        built.set_rows(scan.table)
        del scan
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
                       reread: bool = False) -> None:
        """The mentions of these memories again, entities they bring, facts; with
        ``reread`` (they were forgotten) the entities they mentioned are read again too,
        as forget leaves them their other memories' names alone."""
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
        for entity in before:
            if not graph.memories_of.get(entity):  # no memory mentions it any more
                graph.remove_entity(graph.ids[entity])
        graph.set_facts(engine.facts(all_owners=True))

    def _flush_pending(self) -> None:
        if self._access.pending:
            self.flush()

    def drop_caches(self) -> None:
        """Forget the cached rows of recalled memories (benchmarks measure cold recalls
        this way; the recall index itself stays)."""
        with self._cache_lock:
            self._cache.clear()

    def flush(self) -> None:
        """Wait until recall's access records are written (``close`` does this too)."""
        self._access.flush()
        if self._access.error is not None:
            error, self._access.error = self._access.error, None
            raise StoreError(f"recording accesses failed: {error}") from error

    def close(self) -> None:
        self._access.close()
        index, self._index = self._index, None  # a second close saves nothing
        if index is not None:
            self._saved.close(index, self._index_gate)
        if self._workers is not None:
            self._workers.shutdown(wait=True)
            self._workers = None

    # -- recall ----------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        preset: str | RecallConfig = "default",
        owner: str | None = None,
        kinds: Sequence[Kind | str] | None = None,
        as_of: datetime | None = None,
        include_archived: bool = False,
        record_access: bool = False,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        min_similarity: float | None = None,
        min_relative: float | None = None,
    ) -> list[Hit]:
        """The memories that best answer ``query``, each with its explanation.

        Channels (full text, vectors, graph walks) are fused by reciprocal rank fusion
        and, in the ``default`` preset, re-ranked by ACT-R activation. Only active (and
        hot) memories come back, archived ones too with ``include_archived``; never
        candidates, tombstoned, forgotten or superseded ones (their current version comes
        back instead). ``owner`` and ``kinds`` filter; ``as_of`` returns what was valid
        and current then. A recall changes nothing unless ``record_access`` asks it to
        record an access for each hit (ACT-R's uses, the lifecycle's access counts);
        useful ``feedback`` records one for the memory that helped. Measured on repeated
        questions (eval/results/conversations.md), recording every hit did not help recall.

        ``since`` / ``until`` (datetimes or ISO 8601 strings) keep the memories whose time
        (``created``: when it was said or recorded, the time ``as_of`` and the time channel
        go by) is at or after ``since`` and before ``until``. ``min_similarity`` lets recall
        answer "nothing relevant": when no memory's cosine similarity to the query reaches
        it, the answer is empty (else unchanged). ``min_relative`` drops the hits whose
        score is below that share of the best hit's.
        """
        config = resolve_preset(preset)
        query = _check_query(query)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError(f"k must be an integer in 1..1000, got {k!r}", field="k")
        kind_names = _check_kinds(kinds)
        window = recall_window(since, until)
        if min_similarity is not None:
            min_similarity = check_unit(min_similarity, field="min_similarity")
        if min_relative is not None:
            min_relative = check_unit(min_relative, field="min_relative")
        if min_similarity is not None and not config.active("vector"):
            raise InvalidInputError(f"min_similarity needs a vector channel, which preset "
                                    f"{config.name!r} does not have", field="min_similarity")
        if not query.strip():
            return []
        when = to_utc(as_of) if as_of is not None else None
        self._ctx.sync()  # what other processes committed (a shared engine)
        qvec: Future[np.ndarray] | None = None
        if config.active("vector") and (self._index is None or self._index.size):
            # submitted before the index is built, so a first recall (a one-shot command)
            # loads the model while it scans
            qvec = self._pool().submit(lambda: self._ctx.embed_query([query])[0])
        index = self.ensure_index()
        with self._index_gate.shared():
            hits, positions, candidates = self._rank(index, query, qvec, config, k=k,
                                                     owner=owner, kinds=kind_names,
                                                     as_of=when,
                                                     include_archived=include_archived,
                                                     window=window,
                                                     min_similarity=min_similarity,
                                                     min_relative=min_relative)
            if record_access and hits and not self._ctx.engine.read_only:
                self._record(index, positions)
        self._prefetch([index.ids[pos] for pos, _ in hits])
        snapshot = self._from_snapshot(index, [pos for pos, _ in hits])
        result = [self._hit(index, pos, rank, explanation, snapshot.get(pos))
                  for rank, (pos, explanation) in enumerate(hits, start=1)]
        self._recent.append(_RecallRecord(query, [h.memory.id for h in result]))
        if candidates is not None:
            self.samples.add(query, config, [index.ids[p] for p in candidates.positions],
                             candidates, self._ctx.now())
        return result

    def _rank(self, index: RecallIndex, query: str, qvec: Future[np.ndarray] | None,
              config: RecallConfig, *, k: int, owner: str | None,
              kinds: list[str] | None, as_of: datetime | None, include_archived: bool,
              window: RecallWindow = (None, None), min_similarity: float | None = None,
              min_relative: float | None = None,
              ) -> tuple[list[tuple[int, Explanation]], list[int], Candidates | None]:
        n = index.size
        if n == 0:
            if qvec is not None:
                qvec.result()
            return [], [], None
        statuses = ("active", "archived") if include_archived else ("active",)
        mask = index.mask(owner=owner, kinds=kinds, statuses=statuses, as_of=as_of,
                          now=self._ctx.now(), since=window[0], until=window[1])
        if not mask.any():
            if qvec is not None:
                qvec.result()  # surface embedding errors; never leave work running
            return [], [], None
        redirected: dict[int, set[int]] = {}
        channels: dict[str, Ranking] = {}
        group = index.owner_group(owner) if owner is not None else None
        if config.active("fulltext"):
            channels["fulltext"] = self._resolve(index, self._fulltext(index, query, mask,
                                                                       config, group),
                                                 mask, as_of, redirected, config.candidates)
        similarity: np.ndarray | None = None
        query_vector: np.ndarray | None = None
        if config.active("vector") and qvec is not None:
            query_vector = qvec.result()
            positions, cosines, similarity = index.nearest(query_vector, mask,
                                                           config.candidates * 2)
            channels["vector"] = self._resolve(
                index, list(zip(positions.tolist(), cosines.tolist(), strict=True)), mask,
                as_of, redirected, config.candidates)
            if min_similarity is not None and (
                    not channels["vector"] or channels["vector"][0][1] < min_similarity):
                return [], [], None  # nothing stored is about what the query asks
        paths: dict[int, tuple[str, ...]] = {}
        if config.active("graph"):
            channels["graph"] = self._graph_channel(index, query, channels, mask, as_of,
                                                    redirected, config, group, owner, paths)
        if config.active("time"):
            channels["time"] = self._time_channel(index, query, channels, mask, as_of,
                                                  redirected, config, group)
        if config.active("facts"):
            channels["facts"] = self._fact_channel(index, query, mask, as_of, redirected,
                                                   config, owner)
        if config.active("entities"):
            channels["entities"] = self._entity_channel(index, query, similarity,
                                                        query_vector, mask, as_of,
                                                        redirected, config, group, owner)
        ranks = {name: competition_ranks(ranking) for name, ranking in channels.items()}
        weights = config.weights
        if config.coverage and channels.get("fulltext"):
            # a lexical ranking whose best hit holds little of what the query asks is
            # mostly chance: it counts as much as its best hit holds
            cover = index.bm25.coverage(query, channels["fulltext"][0][0], group=group)
            weights = {**weights, "fulltext": weights["fulltext"] * cover ** config.coverage}
        fused = rrf_from_ranks(ranks, weights=weights, k=config.rrf_k)
        demoted: set[int] = set()
        if config.assistant < 1.0 and not asks_about_assistant(query):
            demoted = {pos for pos in fused if index.assistant[pos]}
            for pos in demoted:
                fused[pos] *= config.assistant
        if not fused:
            return [], [], None
        order = sorted(fused, key=lambda p: (-fused[p], index.ids[p]))
        final = dict(fused)
        activations: dict[int, tuple[Any, int, float]] = {}
        scores = {name: dict(ranking) for name, ranking in channels.items()}
        candidates: Candidates | None = None
        learned: Mapping[int, LearnedInfo] = {}
        if config.actr is not None:
            activations = self._actr(index, order[: config.actr.rerank], fused, config,
                                     as_of or self._ctx.now())
            for pos, (_, _, contribution) in activations.items():
                final[pos] += contribution
            order = sorted(final, key=lambda p: (-final[p], -fused[p], index.ids[p]))
            # what the learned ranker sees, and what feedback on this recall teaches it
            candidates = capture(index, query, order[: config.actr.rerank], ranks=ranks,
                                 scores=scores, fused=fused, final=final,
                                 activations=activations, paths=paths, redirected=redirected,
                                 owner=owner, group=group,
                                 now=(as_of or self._ctx.now()).timestamp())
            if config.learned and self.reranker is not None:
                order, final, learned = self.reranker(candidates, order, final)
        if min_relative is not None and final[order[0]] > 0:
            floor = min_relative * final[order[0]]
            order = [pos for pos in order if final[pos] >= floor]
        out = []
        for pos in order[:k]:
            info = None
            if pos in activations:
                terms, rank, contribution = activations[pos]
                info = ActivationInfo(value=terms.value, formula=terms.formula,
                                      base_level=terms.base_level, age_s=terms.age_s,
                                      frequency=terms.frequency,
                                      confidence_term=terms.confidence_term,
                                      history=terms.history, rank=rank,
                                      contribution=contribution)
            out.append((pos, Explanation(
                channels={name: ChannelRank(rank=r[pos], score=float(scores[name][pos]))
                          for name, r in ranks.items() if pos in r},
                fused=fused[pos], activation=info, final=final[pos],
                redirected_from=tuple(sorted(index.ids[p] for p in redirected.get(pos, ()))),
                graph_path=paths.get(pos, ()), learned=learned.get(pos),
                assistant=config.assistant if pos in demoted else None,
                preset=config.name)))
        return out, [pos for pos, _ in out], candidates

    def _fulltext(self, index: RecallIndex, query: str, mask: np.ndarray,
                  config: RecallConfig, group: int | None) -> Ranking:
        """BM25 with the statistics of the caller's owner alone (``group``): the scores
        an owner sees say nothing about other owners' texts."""
        return _top(index.bm25.scores(query, index.size, group=group), mask,
                    config.candidates * 2, positive=True)

    def _resolve(self, index: RecallIndex, ranking: Ranking, mask: np.ndarray,
                 as_of: datetime | None, redirected: dict[int, set[int]], limit: int
                 ) -> Ranking:
        """Replace superseded memories by their current version; keep what may be shown."""
        out: Ranking = []
        seen: set[int] = set()
        for pos, score in ranking:
            head = index.head(pos, mask, as_of) if index.superseded_by[pos] else pos
            if head != pos:
                if not mask[head]:
                    continue
                redirected.setdefault(head, set()).add(pos)
            elif not mask[pos]:
                continue
            if head in seen:
                continue
            seen.add(head)
            out.append((head, score))
            if len(out) >= limit:
                break
        return out

    def _graph_channel(self, index: RecallIndex, query: str,
                       channels: Mapping[str, Ranking], mask: np.ndarray,
                       as_of: datetime | None, redirected: dict[int, set[int]],
                       config: RecallConfig, group: int | None, owner: str | None,
                       paths: dict[int, tuple[str, ...]]) -> Ranking:
        """Walks from the best text and vector hits, and from the entities the query names,
        over REFERENCES and CO_OCCURS and, with ``graph.entities``, through the entities
        memories mention: memory <-> entity <-> memory (entity positions follow memory
        positions). Hubs (a speaker every turn names) are damped by their
        informativeness. A hit reached through entities says which (``paths``)."""
        params = config.graph
        seeds_fused = rrf_from_ranks(
            {name: competition_ranks(r) for name, r in channels.items()},
            weights=config.weights, k=config.rrf_k)
        top = sorted(seeds_fused, key=lambda p: -seeds_fused[p])[: params.seeds]
        seeds: dict[int, float] = {p: seeds_fused[p] for p in top}
        memory_row = index.adjacency(params.references, params.co_occurs).row
        n = index.size
        graph = index.entities
        walk_entities = params.entities > 0 and graph.size > 0
        named: dict[int, str] = {}
        weight: dict[int, float] = {}
        if walk_entities:
            counts = _owner_sizes(index)
            selves = graph.selves(owner)

            def informative(entity: int) -> float:
                found = weight.get(entity)
                if found is None and entity in selves:
                    found = weight[entity] = 0.0  # every memory of the owner is theirs
                if found is None:
                    code = index.owner_codes.get(graph.owner[entity], -1)
                    found = graph.informativeness(entity, counts.get(code, n))
                    fanout = len(graph.memories_of.get(entity, ()))
                    if found < params.min_informativeness or fanout > params.max_fanout:
                        found = 0.0
                    weight[entity] = found
                return found

            if params.query_entities > 0:
                named = graph.link(query, owner, all_owners=owner is None)
                best = max(seeds.values(), default=1.0)
                for entity in named:
                    strength = informative(entity)
                    if strength > 0:
                        seeds[n + entity] = params.query_entities * strength * best
            memory_row = _with_entities(memory_row, graph, n, params.entities, informative)
        if not seeds:
            return []
        row = memory_row
        if group is not None:
            # walks never cross into other owners (entities are each owner's own)
            row = _within(row, _owners_with_entities(index, graph, n) if walk_entities
                          else index.owner, group)
        if params.method == "ppr":
            scores = local_ppr(seeds, row, depth=params.depth, damping=params.damping,
                               iterations=params.iterations)
        else:
            scores = hop_expansion(seeds, row, depth=params.depth, decay=params.hop_decay)
        if not params.include_seeds:
            scores = {p: s for p, s in scores.items() if p not in seeds}
        if walk_entities:
            entity_scores = {p - n: s for p, s in scores.items() if p >= n}
            scores = {p: s for p, s in scores.items() if p < n}
            for pos in scores:
                path = _path(graph, pos, entity_scores, named)
                if path:
                    paths[pos] = path
        ranking = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return self._resolve(index, ranking, mask, as_of, redirected, config.candidates)

    def _time_channel(self, index: RecallIndex, query: str, channels: Mapping[str, Ranking],
                      mask: np.ndarray, as_of: datetime | None,
                      redirected: dict[int, set[int]], config: RecallConfig,
                      group: int | None) -> Ranking:
        """Memories of the time a query names ("last weekend", "in May 2023"): dated in
        that window or speaking of it, best text matches first. A question about when,
        order or duration, naming no window, favours the text and vector hits that speak
        of a time."""
        now = as_of or self._ctx.now()
        window = query_window(query, now)
        n = index.size
        graph = index.entities
        if window is not None:
            start, end = window.start.timestamp(), window.end.timestamp()
            with np.errstate(invalid="ignore"):
                inside = (index.created[:n] >= start) & (index.created[:n] < end)
            for pos, spans in graph.times.items():
                if pos < n and np.any((spans[:, 0] < end) & (spans[:, 1] > start)):
                    inside[pos] = True
            text = index.bm25.scores(query, n, group=group)
            scores = np.where(inside & mask, text + 1.0, -np.inf)
            ranking = _top(scores, mask, config.candidates * 2, positive=True)
            if config.time_after > 0:
                ranking += self._after_window(index, text, inside, mask, start, end,
                                              config, config.candidates * 2 - len(ranking))
            return self._resolve(index, ranking, mask, as_of, redirected, config.candidates)
        if not is_temporal_question(query):
            return []
        fused = rrf_from_ranks({name: competition_ranks(r) for name, r in channels.items()},
                               weights=config.weights, k=config.rrf_k)
        share = config.time_floor
        if config.time_floor_when is not None and asks_for_time(query):
            share = config.time_floor_when
        floor = share * max(fused.values(), default=0.0)
        dated = [(p, s) for p, s in sorted(fused.items(), key=lambda kv: -kv[1])
                 if p in graph.times and s >= floor]
        return dated[: config.candidates]

    def _after_window(self, index: RecallIndex, text: np.ndarray, inside: np.ndarray,
                      mask: np.ndarray, start: float, end: float, config: RecallConfig,
                      room: int) -> Ranking:
        """The memories dated just after a window (``time_after`` of its length, a month
        at most), best text matches first, to follow the window's own: what is said of a
        time is mostly said soon after it."""
        if room <= 0:
            return []
        n = index.size
        reach = end + config.time_after * min(end - start, _MONTH_S)
        with np.errstate(invalid="ignore"):
            after = (index.created[:n] >= end) & (index.created[:n] < reach)
        after &= mask[:n] & ~inside
        scores = np.where(after, text + 1.0, -np.inf)
        return _top(scores, after, room, positive=True)

    def _fact_channel(self, index: RecallIndex, query: str, mask: np.ndarray,
                      as_of: datetime | None, redirected: dict[int, set[int]],
                      config: RecallConfig, owner: str | None) -> Ranking:
        """The memories that state facts about the entities the query names: facts valid
        at ``as_of`` (or now) first, then by how well the predicate matches the query's
        words, then by confidence."""
        graph = index.entities
        named = graph.link(query, owner, all_owners=owner is None)
        if not named:
            return []
        when = as_of or self._ctx.now()
        words = set(tokenize(query))
        scored: dict[int, float] = {}
        selves = graph.selves(owner)
        for entity in named:
            for fact in graph.facts_of.get(entity, ()):
                valid = (fact.valid_from is None or fact.valid_from <= when) and (
                    fact.valid_to is None or fact.valid_to > when)
                overlap = len(words & set(tokenize(fact.predicate.replace("_", " "))))
                if entity in selves and not overlap:
                    continue  # naming the owner says nothing of which of their facts
                score = (1.0 if valid else 0.5) + overlap + 0.1 * fact.confidence
                for source in fact.sources:
                    pos = index.pos.get(source)
                    if pos is not None:
                        scored[pos] = max(scored.get(pos, 0.0), score)
        ranking = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
        return self._resolve(index, ranking, mask, as_of, redirected, config.candidates)

    def _entity_channel(self, index: RecallIndex, query: str,
                        similarity: np.ndarray | None, query_vector: np.ndarray | None,
                        mask: np.ndarray,
                        as_of: datetime | None, redirected: dict[int, set[int]],
                        config: RecallConfig, group: int | None, owner: str | None
                        ) -> Ranking:
        """The memories that mention (or are spoken by) the entities the query names,
        ranked among themselves by how close they are to the query (the vector score, or
        BM25 without vectors), plus ``graph.named_bonus`` per informative named entity they
        mention: "what does Melanie do to relax?" searches Melanie's own turns."""
        graph = index.entities
        named = graph.link(query, owner, all_owners=owner is None)
        if not named:
            return []
        n = index.size
        bonus = np.zeros(n)
        inside = np.zeros(n, dtype=bool)
        sizes = _owner_sizes(index)
        floor = 0.0 if config.graph.named_speakers else ROLE_WEIGHTS["speaker"]
        selves = graph.selves(owner)
        for entity in named:
            if entity in selves:
                continue  # every memory of the owner is theirs
            memories = graph.memories_of.get(entity)
            if not memories:
                continue
            positions = np.fromiter((p for p, w in memories.items() if p < n and w > floor),
                                    dtype=np.int64)
            inside[positions] = True
            code = index.owner_codes.get(graph.owner[entity], -1)
            bonus[positions] += config.graph.named_bonus * graph.informativeness(
                entity, sizes.get(code, n))
        if not inside.any():
            return []
        if similarity is not None:
            base = similarity
        elif query_vector is not None:  # search did not score them all: these only
            base = np.full(n, -np.inf, dtype=np.float32)
            named_memories = np.flatnonzero(inside & index.has_vector[:n])
            base[named_memories] = index.cosines(named_memories, query_vector)
        else:
            base = index.bm25.scores(query, n, group=group)
        scores = np.where(inside, base + bonus, -np.inf)
        return self._resolve(index, _top(scores, mask & inside, config.candidates * 2,
                                         positive=False), mask, as_of, redirected,
                             config.candidates)

    def _actr(self, index: RecallIndex, candidates: Sequence[int], fused: Mapping[int, float],
              config: RecallConfig, now: datetime) -> dict[int, tuple[Any, int, float]]:
        params = config.actr
        assert params is not None
        now_s = now.timestamp()
        terms = {pos: activation_s(created=float(index.created[pos]),
                                   access_times=index.access_seconds[pos],
                                   access_count=int(index.access_count[pos]),
                                   confidence=float(index.confidence[pos]), now=now_s,
                                   d=params.d, beta=params.beta, epsilon=params.epsilon)
                 for pos in candidates}
        order = sorted(terms, key=lambda p: (-terms[p].value, index.ids[p]))
        ranks = competition_ranks([(p, terms[p].value) for p in order])
        out: dict[int, tuple[Any, int, float]] = {}
        if params.combine == "rrf":
            best = max(fused[p] for p in candidates)
            for pos in order:
                gate = (fused[pos] / best) ** params.relevance if best > 0 else 1.0
                out[pos] = (terms[pos], ranks[pos],
                            gate * params.weight / (config.rrf_k + ranks[pos]))
        else:
            values = [terms[p].value for p in order]
            low, high = min(values), max(values)
            scale = max(fused[p] for p in candidates)
            for pos in order:
                unit = (terms[pos].value - low) / (high - low) if high > low else 0.0
                out[pos] = (terms[pos], ranks[pos], params.weight * unit * scale)
        return out

    def _record(self, index: RecallIndex, positions: Sequence[int]) -> None:
        now = self._ctx.now()
        index.record_access(positions, now, self._ctx.settings.access_history)
        rows: dict[str, AccessRow] = {
            index.ids[p]: (int(index.access_count[p]), now, index.access_times[p])
            for p in positions}
        self._access.submit(rows)

    def _from_snapshot(self, index: RecallIndex, positions: Sequence[int]
                       ) -> dict[int, Memory]:
        """The hits that neither the row cache holds nor a fetch brings, materialised
        from the index snapshot together."""
        with self._cache_lock:
            wanted = [p for p in positions if index.ids[p] not in self._cache
                      and index.ids[p] not in self._inflight]
        return {pos: memory_from_fields(row) for pos, row in index.rows_at(wanted).items()}

    def _hit(self, index: RecallIndex, pos: int, rank: int, explanation: Explanation,
             memory: Memory | None = None) -> Hit:
        if memory is None:
            memory = self._cached(index.ids[pos])
        memory = memory.model_copy(update={
            "access_count": int(index.access_count[pos]),
            "last_accessed": index.last_accessed[pos],
            "access_times": index.access_times[pos],
        })
        return Hit(memory=memory, score=explanation.final, rank=rank, explanation=explanation)

    def _prefetch(self, ids: Sequence[str]) -> None:
        """Start fetching, in parallel, the hits' rows that neither the index snapshot nor
        the cache holds and that are not on their way already."""
        index = self._index
        if index is not None:
            ids = [i for i in ids if not index.has_row(index.pos.get(i, index.size))]
        with self._cache_lock:
            wanted = [i for i in dict.fromkeys(ids)
                      if i not in self._cache and i not in self._inflight]
            for memory_id in wanted:
                self._inflight[memory_id] = self._pool().submit(self._fetch, memory_id)

    def _fetch(self, memory_id: str) -> Memory | None:
        with self._cache_lock:
            started = self._epoch
        memory = self._ctx.engine.get(memory_id)
        with self._cache_lock:
            # A change committed while this row was read makes the row stale: do not cache.
            stale = max(self._changed_at.get(memory_id, 0), self._bulk_epoch) > started
            if memory is not None and not stale:
                self._cache[memory_id] = memory
                while len(self._cache) > self._ctx.settings.row_cache_size:
                    self._cache.pop(next(iter(self._cache)))
            self._inflight.pop(memory_id, None)
        return memory

    def _cached(self, memory_id: str) -> Memory:
        with self._cache_lock:
            memory = self._cache.get(memory_id)
            if memory is not None:
                self._cache.move_to_end(memory_id)
                return memory
            pending = self._inflight.get(memory_id)
        if pending is not None:
            memory = pending.result()
        else:
            index = self._index
            pos = index.pos.get(memory_id) if index is not None else None
            row = index.row(pos) if index is not None and pos is not None else None
            memory = memory_from_fields(row) if row is not None else self._fetch(memory_id)
        if memory is None:
            raise StoreError(f"memory {memory_id} vanished during recall")
        return memory

    # -- feedback ---------------------------------------------------------------------
    def feedback(self, memory_id: str, *, useful: bool, query: str | None = None,
                 owner: str | None = None, actor: str | None = None) -> Memory:
        """Report whether a recalled memory helped (retrieval feedback).

        Useful: the useful count grows, an access is recorded (a use, for ACT-R and the
        lifecycle), and importance rises by ``feedback_boost`` (a version row
        ``importance_boost``); memories of the same recall marked useful gain or
        strengthen a CO_OCCURS edge. Not useful: the ignored count grows. All of it in
        one transaction.
        """
        ctx = self._ctx
        if not isinstance(useful, bool):
            raise InvalidInputError("useful must be true or false", field="useful")
        memory = ctx.visible(memory_id, owner)
        if memory.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} was forgotten")
        now = ctx.now()
        # the feedback itself, with what the learned ranker learns from (``_learn``)
        with self._index_gate.shared():
            sample = self.samples.metadata(memory_id, useful=useful, query=query)
        event = lifecycle_event(memory_id, EventType.FEEDBACK, from_state=memory.status.value,
                                to_state=memory.status.value,
                                reason="useful" if useful else "not useful", at=now,
                                agent_id=ctx.actor(actor), metadata=sample)
        if useful:
            boosted = min(1.0, memory.importance + ctx.settings.feedback_boost)
            history = ctx.settings.access_history
            counts: dict[str, Any] = {
                "useful_count": memory.useful_count + 1,
                "access_count": memory.access_count + 1, "last_accessed": now,
                "access_times": [*memory.access_times, now][-history:]}
            patch = Patch(memory_id, set=counts, event=event)
            if boosted > memory.importance:
                # The boost moves the undecayed baseline too, or decay would undo it.
                baseline = max(memory.original_importance, boosted)
                patch = patch_of(memory, {**counts, "importance": boosted,
                                          "original_importance": baseline},
                                 ChangeType.IMPORTANCE_BOOST, now, reason="useful feedback",
                                 actor=ctx.actor(actor), event=event)
        else:
            patch = Patch(memory_id, set={"ignored_count": memory.ignored_count + 1},
                          event=event)
        partners: list[str] = []
        record = self._find_recall(memory_id, query)
        if useful and record is not None:
            partners = sorted(record.useful - {memory_id})
            record.useful.add(memory_id)
        edges = [EdgeRecord(kind="co_occurs", src=min(memory_id, other),
                            dst=max(memory_id, other), weight=1.0, source="feedback", at=now)
                 for other in partners]
        self._memories.patch([patch], merged_edges=edges)
        return patched_memory(memory, patch.set)

    def _find_recall(self, memory_id: str, query: str | None) -> _RecallRecord | None:
        for record in reversed(self._recent):
            if memory_id in record.ids and (query is None or record.query == query):
                return record
        return None

    def lexical_neighbours(self, text: str, *, owner: str | None, eligible: np.ndarray,
                           limit: int) -> list[str]:
        """Ids of the ``limit`` best full-text matches of ``text`` among the ``eligible``
        positions (scored with ``owner``'s statistics)."""
        index = self.ensure_index()
        n = index.size
        if n == 0:
            return []
        scores = np.where(eligible[:n], index.bm25.scores(text, n,
                                                            group=index.owner_group(owner)), 0.0)
        return [index.ids[int(p)] for p in np.argsort(-scores)[:limit] if scores[p] > 0]

    # -- switching models -------------------------------------------------------------
    def reembed(self, embedder: Embedder | str, *, batch_size: int = 256,
                progress_bar: bool = False) -> int:
        """Re-embed every memory with another model and make it the store's model.

        Returns the number of memories embedded.
        """
        ctx = self._ctx
        chosen = ctx.make_embedder(embedder)
        table = ctx.engine.scan(["id", "subject", "text", "context", "status"]).table
        rows = [r for r in table.to_pylist() if r["status"] != Status.FORGOTTEN.value]
        bar = progress(len(rows), "re-embedding", progress_bar)
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            vectors = embed_memories(chosen, [embedding_head(r["subject"], r["text"])
                                              for r in chunk], [r["context"] for r in chunk])
            with ctx.lock:
                ctx.engine.set_vectors({r["id"]: v for r, v in zip(chunk, vectors, strict=True)})
            bar.update(len(chunk))
        bar.close()
        with ctx.lock:
            ctx.switch_embedder(chosen)
            ctx.changed(Changed([], bulk=True))
        return len(rows)


def _with_entities(row: Any, graph: EntityIndex, n: int, weight: float,
                   informative: Any) -> Any:
    """A row function over memories (positions below ``n``) and entities (``n + e``):
    a memory's neighbours gain its entities, an entity's are its memories; each edge
    weighs ``weight`` times the mention's weight times the entity's informativeness."""

    def both(node: int) -> tuple[np.ndarray, np.ndarray]:
        if node < n:
            others, weights = row(node)
            mentioned = graph.mentioned(node)
            if not mentioned:
                return others, weights
            entities = [(e, w * informative(e)) for e, w in mentioned.items()]
            entities = [(e, w) for e, w in entities if w > 0]
            if not entities:
                return others, weights
            extra = np.fromiter((n + e for e, _ in entities), dtype=np.int64,
                                count=len(entities))
            strength = np.fromiter((weight * w for _, w in entities), dtype=np.float64,
                                   count=len(entities))
            return np.concatenate([others, extra]), np.concatenate([weights, strength])
        entity = node - n
        scale = informative(entity)
        if scale <= 0:
            return _NO_ROW
        memories, weights = graph.row(entity)
        return memories, weights * (weight * scale)

    return both


def _owner_sizes(index: RecallIndex) -> dict[int, int]:
    """How many memories each owner (by code) has in the index."""
    codes, counts = np.unique(index.owner[: index.size], return_counts=True)
    return {int(code): int(c) for code, c in zip(codes, counts, strict=True)}


def _owners_with_entities(index: RecallIndex, graph: EntityIndex, n: int) -> np.ndarray:
    """The owner group of every memory and entity position (entities after memories)."""
    codes = np.array([index.owner_codes.get(o, -2) for o in graph.owner], dtype=np.int64)
    return np.concatenate([index.owner[:n].astype(np.int64), codes])


def _path(graph: EntityIndex, pos: int, entity_scores: Mapping[int, float],
          named: Mapping[int, str]) -> tuple[str, ...]:
    """How the walk reached a memory: the query's entity, then the entity of this memory
    that carried the most of the walk (one name when they are the same)."""
    mentioned = [e for e in graph.mentioned(pos) if entity_scores.get(e, 0.0) > 0]
    if not mentioned:
        return ()
    best = max(mentioned, key=lambda e: (entity_scores[e], -e))
    start = next((e for e in named if e in mentioned), None)
    if start is not None:
        return (graph.names[start],)
    source = max(named, key=lambda e: entity_scores.get(e, 0.0), default=None)
    if source is not None and entity_scores.get(source, 0.0) > 0 and source != best:
        return (graph.names[source], graph.names[best])
    return (graph.names[best],)


def _within(row: Any, owners: np.ndarray, group: int) -> Any:
    """A row function that keeps only the neighbours of one owner group."""

    def inside(node: int) -> tuple[np.ndarray, np.ndarray]:
        others, weights = row(node)
        keep = owners[others] == group
        return others[keep], weights[keep]

    return inside


def _top(scores: np.ndarray, mask: np.ndarray, n: int, *, positive: bool) -> Ranking:
    """The ``n`` best masked positions with a finite score, best first, ties by position
    (``positive``: scores above zero only). Only the scored positions are sorted: text
    and time channels score few of a million memories."""
    kept = np.isfinite(scores) & mask
    if positive:
        kept &= scores > 0
    best = np.flatnonzero(kept)
    if n <= 0 or best.size == 0:
        return []
    if best.size > n:
        best = best[np.argpartition(-scores[best], n - 1)[:n]]
    best = best[np.lexsort((best, -scores[best]))]
    return [(int(p), float(scores[p])) for p in best.tolist()]


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}",
                                field="query")
    if len(query) > MAX_QUERY:
        raise InvalidInputError(f"query is {len(query)} characters; the limit is {MAX_QUERY}",
                                field="query")
    return query.replace("\x00", " ")


def _check_kinds(kinds: Sequence[Kind | str] | None) -> list[str] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    out = []
    for kind in kinds:
        try:
            out.append(parse_kind(kind).value)
        except InvalidInputError as exc:
            raise InvalidInputError(str(exc), field="kinds") from None
    return out

