"""Recall: ``recall`` over the index that ``IndexSync`` keeps (the query through the
channels, fusion and ACT-R to hits, their explanations, the accesses they record), and
retrieval feedback."""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import numpy as np

from .._context import Changed, StoreContext
from .._derive import lifecycle_event, patch_of
from .._engine import EdgeRecord, Patch
from .._errors import ConflictError, InvalidInputError, StoreError
from .._input import RecallWindow, check_flag, check_unit, moment, recall_window
from .._learn._features import Candidates, capture
from .._learn._samples import Reranker, SampleLog
from .._models import ChangeType, EventType, Kind, Memory, Status, parse_kind
from .._recall._channels import (
    Query,
    actr_terms,
    corrections_first,
    later_first,
    run_channels,
)
from .._recall._config import RecallConfig, resolve_preset
from .._recall._hits import ActivationInfo, ChannelRank, Explanation, Hit, LearnedInfo
from .._recall._index import RecallIndex
from .._recall._query import asks_about_assistant, asks_about_intent, holds_kind, named_actor
from .._records import patched_memory
from ._access import AccessWriter
from ._memories import Memories
from ._recall_index import IndexSync
from ._row_cache import RowCache
from ._transitions import Transitions

__all__ = ["Recall"]

MAX_QUERY = 10_000
_RECENT_RECALLS = 256


@dataclass
class _RecallRecord:
    query: str
    ids: list[str]
    useful: set[str] = field(default_factory=set)


class Recall:
    """Ranking over the recall index (``IndexSync``'s), and feedback on what it found."""

    def __init__(self, ctx: StoreContext, memories: Memories, transitions: Transitions,
                 index: IndexSync, rows: RowCache) -> None:
        self._ctx = ctx
        self._memories = memories
        self._transitions = transitions
        self._index = index
        self._rows = rows
        self._recent: collections.deque[_RecallRecord] = collections.deque(
            maxlen=_RECENT_RECALLS)
        self._access = AccessWriter(lambda records: ctx.engine.record_access(records))
        self._counting = threading.Lock()
        self._workers: _Workers | None = None
        self._closed = False
        #: recent recalls' candidates, for the feedback that teaches the learned ranker
        self.samples = SampleLog(_RECENT_RECALLS)
        #: the learned ranker (``graphmem._learn``) for configurations with ``learned``
        self.reranker: Reranker | None = None
        ctx.on_change(self._on_change)
        ctx.on_read(self._flush_pending)

    def _pool(self) -> ThreadPoolExecutor:
        """Two workers: the query embedding overlaps the full-text work, and cold hits are
        fetched two at a time (17.7 -> 9.3 ms for 10 hits at 100k, measured)."""
        if self._closed:  # a recall in another thread as the store closes
            raise StoreError("the store is closed")
        if self._workers is None:
            self._workers = _Workers(max_workers=2, thread_name_prefix="graphmem")
        return self._workers

    # -- accesses ---------------------------------------------------------------------
    def _on_change(self, change: Changed) -> None:
        if change.removed:
            for memory_id in change.ids:
                self._access.discard(memory_id)

    def _flush_pending(self) -> None:
        if self._access.pending:
            self.flush()

    def flush(self) -> None:
        """Wait until recall's access records are written (``close`` does this too)."""
        self._access.flush()
        if self._access.error is not None:
            error, self._access.error = self._access.error, None
            raise StoreError(f"recording accesses failed: {error}") from error

    def close(self) -> None:
        self._closed = True
        self._access.close()
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
        hot) memories come back, archived ones too with ``include_archived``, and
        candidates (hedges the gate kept as uncertain, ``status`` candidate) only for a
        question about what someone may do ("which club is she thinking of joining?");
        never tombstoned, forgotten or superseded ones (their current version comes back
        instead). ``owner`` and ``kinds`` filter; ``as_of`` returns what was valid
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
        when = moment(as_of, "as_of")
        self._ctx.sync()  # what other processes committed (a shared engine)
        qvec: Future[np.ndarray] | None = None
        svec: Future[np.ndarray] | None = None
        current = self._index.current
        # the vector channel reads the query as the owner would say it (``Query.spoken``),
        # and sentence vectors are searched with it without the names of people
        spoken = (current.entities.in_first_person(query, owner) if current is not None
                  else query)
        plain = _plain(current, spoken, owner, config)
        if config.active("vector") and (current is None or current.size):
            # submitted before the index is built, so a first recall (a one-shot command)
            # loads the model while it scans
            qvec, svec = self._embed_queries(spoken, plain)
        index = self._index.ensure_index()
        if qvec is not None and index is not current:
            # the index brought up to date (or built) may know the owner's names otherwise
            again = index.entities.in_first_person(query, owner)
            again_plain = _plain(index, again, owner, config)
            if (again, again_plain) != (spoken, plain):
                qvec, svec = self._embed_queries(again, again_plain)
        with self._index.gate.shared():
            hits, positions, candidates = self._rank(index, query, qvec, config, k=k,
                                                     sentence_vector=svec,
                                                     owner=owner, kinds=kind_names,
                                                     as_of=when,
                                                     include_archived=include_archived,
                                                     window=window,
                                                     min_similarity=min_similarity,
                                                     min_relative=min_relative)
            if record_access and hits and not self._ctx.engine.read_only:
                self._record(index, positions)
        self._rows.prefetch([index.ids[pos] for pos, _ in hits], self._index.current,
                           self._pool())
        snapshot = self._rows.from_snapshot(index, [pos for pos, _ in hits])
        result = [self._hit(index, pos, rank, explanation, snapshot.get(pos))
                  for rank, (pos, explanation) in enumerate(hits, start=1)]
        self._recent.append(_RecallRecord(query, [h.memory.id for h in result]))
        if candidates is not None:
            self.samples.add(query, config, [index.ids[p] for p in candidates.positions],
                             candidates, self._ctx.now())
        return result

    def _embed_queries(self, text: str, plain: str | None
                       ) -> tuple[Future[np.ndarray], Future[np.ndarray] | None]:
        """The embeddings of the query and, when given and another text, of the query as
        sentence vectors are searched with it (``plain``), in one batch."""
        if plain is None or plain == text:
            found = self._pool().submit(lambda: self._ctx.embed_query([text])[0])
            return found, found if plain is not None else None
        both = self._pool().submit(lambda: self._ctx.embed_query([text, plain]))
        first: Future[np.ndarray] = Future()
        second: Future[np.ndarray] = Future()

        def split(done: Future[np.ndarray]) -> None:
            error = done.exception()
            for n, part in enumerate((first, second)):
                if error is not None:
                    part.set_exception(error)
                else:
                    part.set_result(done.result()[n])

        both.add_done_callback(split)
        return first, second

    def _rank(self, index: RecallIndex, query: str, qvec: Future[np.ndarray] | None,
              config: RecallConfig, *, k: int, owner: str | None,
              kinds: list[str] | None, as_of: datetime | None, include_archived: bool,
              window: RecallWindow = (None, None), min_similarity: float | None = None,
              min_relative: float | None = None,
              sentence_vector: Future[np.ndarray] | None = None,
              ) -> tuple[list[tuple[int, Explanation]], list[int], Candidates | None]:
        n = index.size
        if n == 0:
            if qvec is not None:
                qvec.result()
            return [], [], None
        now = self._ctx.now()
        statuses: tuple[str, ...] = ("active", "archived") if include_archived else ("active",)
        if asks_about_intent(query):  # what someone may do: hedges kept as candidates too
            statuses += ("candidate",)
        mask = index.mask(owner=owner, kinds=kinds, statuses=statuses, as_of=as_of,
                          now=now, since=window[0], until=window[1])
        if not mask.any():
            if qvec is not None:
                qvec.result()  # surface embedding errors; never leave work running
            return [], [], None
        q = Query(index, query, mask, now, owner=owner, as_of=as_of,
                  vector_future=qvec if config.active("vector") else None,
                  sentence_future=sentence_vector, sentence_weight=config.sentences)
        found = run_channels(q, config, min_similarity=min_similarity)
        if found is None:
            return [], [], None
        channels, ranks = found.rankings, found.fusion.ranks
        redirected, paths = found.redirected, found.paths
        weights = config.weights
        if config.coverage and channels.get("fulltext"):
            # a lexical ranking whose best hit holds little of what the query asks is
            # mostly chance: it counts as much as its best hit holds (of the whole
            # question: without an idiom's words, as the channel searches, "what does
            # Abena do for a living?" fell from 1 to 3 on everyday_dev, nothing rose)
            cover = index.bm25.coverage(q.spoken, channels["fulltext"][0][0], group=q.group)
            weights = {**weights, "fulltext": weights["fulltext"] * cover ** config.coverage}
        if config.time_window is not None and q.window is not None \
                and weights.get("time", 0.0) > 0:
            # the question names its time: what was said then is most of the answer
            weights = {**weights, "time": config.time_window}
        fused = found.fusion.with_weights(weights)
        demoted: set[int] = set()
        users = False  # whether ``demoted`` holds what the user said
        if config.assistant < 1.0:
            theirs = {pos for pos in fused if index.assistant[pos]}
            if not asks_about_assistant(query):
                demoted = theirs
            elif theirs and not self._asks_a_friend(index, query, owner):
                # "what did the assistant advise?": what it said comes before the user's
                demoted, users = set(fused) - theirs, True
            for pos in demoted:
                fused[pos] *= config.assistant
        asking = {pos for pos in fused if index.asks[pos]} if config.asking < 1.0 else set()
        for pos in asking:
            fused[pos] *= config.asking
        if config.speaker > 0 and index.entities.size:
            # a question about one of a conversation's people is mostly about what they said
            for pos in index.entities.spoken_by(q.named, owner, fused):
                fused[pos] *= 1.0 + config.speaker
        kind = q.asks
        lift = config.advice if kind == "advice" else config.answer
        answering: set[int] = set()
        if kind is not None and lift > 0:
            # "which days does she work?": what names a day of the week comes first;
            # "what did the assistant suggest?": what says it recommends
            answering = index.bm25.holding(kind, partial(holds_kind, kind), fused)
            for pos in answering:
                fused[pos] *= 1.0 + lift
        if not fused:
            return [], [], None
        scores = {name: dict(ranking) for name, ranking in channels.items()}
        before = corrections_first(index, fused, ranks.get("vector", {}))
        later: dict[int, int] = {}
        if config.later > 0 and "vector" in scores:
            later = later_first(index, fused, scores["vector"], self._text_of(index),
                                similar=config.later)
        order = sorted(fused, key=lambda p: (-fused[p], index.ids[p]))
        final = dict(fused)
        activations: dict[int, tuple[Any, int, float]] = {}
        candidates: Candidates | None = None
        learned: Mapping[int, LearnedInfo] = {}
        if config.actr is not None:
            activations = actr_terms(index, order[: config.actr.rerank], fused, config,
                                     q.when)
            for pos, (_, _, contribution) in activations.items():
                final[pos] += contribution
            order = sorted(final, key=lambda p: (-final[p], -fused[p], index.ids[p]))
            # what the learned ranker sees, and what feedback on this recall teaches it
            candidates = capture(index, query, order[: config.actr.rerank], ranks=ranks,
                                 scores=scores, fused=fused, final=final,
                                 activations=activations, paths=paths, redirected=redirected,
                                 owner=owner, group=q.group, now=q.when.timestamp(),
                                 named=q.named if index.entities.size else {})
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
                assistant=config.assistant if pos in demoted and not users else None,
                user=config.assistant if pos in demoted and users else None,
                asks=config.asking if pos in asking else None,
                corrects_before=index.ids[before[pos]] if pos in before else None,
                said_after=index.ids[later[pos]] if pos in later else None,
                answers=kind if pos in answering else None,
                preset=config.name)))
        return out, [pos for pos, _ in out], candidates

    def _text_of(self, index: RecallIndex) -> Callable[[int], str]:
        return lambda pos: self._rows.get(index.ids[pos], self._index.current).text

    @staticmethod
    def _asks_a_friend(index: RecallIndex, query: str, owner: str | None) -> bool:
        """Whether the one a query says suggested or booked something is a person of the
        owner's world ("which café did Maria recommend?"), not the assistant's name."""
        actor = named_actor(query)
        return actor is not None and index.entities.is_person(actor, owner)

    def _record(self, index: RecallIndex, positions: Sequence[int],
                now: datetime | None = None) -> None:
        """Count an access of ``positions`` in ``index`` (held shared) and hand their new
        counters to the writer: one at a time, or a count taken before another thread's
        would be written after it."""
        now = self._ctx.now() if now is None else now
        with self._counting:
            index.record_access(positions, now, self._ctx.settings.access_history)
            self._access.submit({
                index.ids[p]: (int(index.access_count[p]), now, index.access_times[p])
                for p in positions})

    def _hit(self, index: RecallIndex, pos: int, rank: int, explanation: Explanation,
             memory: Memory | None = None) -> Hit:
        if memory is None:
            memory = self._rows.get(index.ids[pos], self._index.current)
        return Hit(memory=_counted(index, pos, memory), score=explanation.final, rank=rank,
                   explanation=explanation)

    def held(self, memory_id: str) -> Memory | None:
        """The memory as the store holds it now (None: no such memory): once the recall
        index is loaded, the row held current here (``RowCache.held``) with the index's
        counters over it; else read."""
        index = self._index.current
        if index is None:
            self._flush_pending()
            return self._ctx.engine.get(memory_id)
        with self._index.gate.shared():
            memory = self._rows.held(memory_id, index)
            pos = index.pos.get(memory_id)
            return memory if memory is None or pos is None else _counted(index, pos, memory)

    # -- feedback ---------------------------------------------------------------------
    def feedback(self, memory_id: str, *, useful: bool, query: str | None = None,
                 owner: str | None = None, actor: str | None = None) -> Memory:
        """Report whether a recalled memory helped (retrieval feedback).

        Useful: the useful count grows, an access is recorded (a use, for ACT-R and the
        lifecycle), and importance rises by ``feedback_boost`` (a version row
        ``importance_boost``); memories of the same recall marked useful gain or
        strengthen a CO_OCCURS edge; a weak candidate is confirmed (it becomes active).
        Not useful: the ignored count grows. All of it in one transaction, but for the
        access once the recall index is loaded: it is counted there, as a recall's, and
        written with them.
        """
        ctx = self._ctx
        check_flag(useful, "useful")
        memory = ctx.current(memory_id, owner)
        if memory.status is Status.FORGOTTEN:
            raise ConflictError(f"memory {memory_id} was forgotten")
        now = ctx.now()
        # the feedback itself, with what the learned ranker learns from (``_learn``)
        with self._index.gate.shared():
            sample = self.samples.metadata(memory_id, useful=useful, query=query)
        event = lifecycle_event(memory_id, EventType.FEEDBACK, from_state=memory.status.value,
                                to_state=memory.status.value,
                                reason="useful" if useful else "not useful", at=now,
                                agent_id=ctx.actor(actor), metadata=sample)
        if useful:
            boosted = min(1.0, memory.importance + ctx.settings.feedback_boost)
            counts: dict[str, Any] = {"useful_count": memory.useful_count + 1}
            index = self._index.current
            counted_later = index is not None and memory_id in index.pos
            if not counted_later:
                counts.update(_one_access(memory, now, ctx.settings.access_history))
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
        patches = [patch]
        after = patched_memory(memory, patch.set)
        if useful and memory.status is Status.CANDIDATE:
            patches.append(self._transitions.transition_patch(
                after, status=Status.ACTIVE, event_type=EventType.ACTIVATE,
                change_type=ChangeType.PROMOTED, reason="confirmed by useful feedback",
                actor=actor))
            after = patched_memory(after, patches[-1].set)
        self._memories.patch(patches, merged_edges=edges)
        return self._count_use(after, now) if useful and counted_later else after

    def _count_use(self, memory: Memory, now: datetime) -> Memory:
        """Count a committed useful feedback's access as a recall's (``_record``), and
        return the memory with the new counters. Counting one counter in two places lost
        accesses: a feedback wrote the count it read, and the index took it, over a count
        a recall in another thread had made meanwhile. (An index dropped meanwhile: the
        access goes to the writer from the row.)"""
        index = self._index.current
        with self._index.gate.shared():
            pos = None if index is None else index.pos.get(memory.id)
            if index is not None and pos is not None:
                self._record(index, [pos], now)
                return _counted(index, pos, memory)
        counts = _one_access(memory, now, self._ctx.settings.access_history)
        with self._counting:
            self._access.submit({memory.id: (counts["access_count"], now,
                                             counts["access_times"])})
        return memory.model_copy(update=counts)

    def _find_recall(self, memory_id: str, query: str | None) -> _RecallRecord | None:
        for record in reversed(self._recent):
            if memory_id in record.ids and (query is None or record.query == query):
                return record
        return None


def _plain(index: RecallIndex | None, spoken: str, owner: str | None,
           config: RecallConfig) -> str | None:
    """The query as the sentence vectors of ``index`` are searched with it
    (``EntityIndex.without_people``), when the configuration and the index use them."""
    if not config.sentences or index is None or not index.sentence_rows:
        return None
    return index.entities.without_people(spoken, owner)


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


_T = TypeVar("_T")


class _Workers(ThreadPoolExecutor):
    """Recall's workers: work handed to them after the store closed is refused as such."""

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        try:
            return super().submit(fn, *args, **kwargs)
        except RuntimeError as exc:  # "cannot schedule new futures after shutdown"
            raise StoreError("the store is closed") from exc


def _one_access(memory: Memory, at: datetime, history: int) -> dict[str, Any]:
    """``memory``'s access counters after one more access ``at``."""
    return {"access_count": memory.access_count + 1, "last_accessed": at,
            "access_times": (*memory.access_times, at)[-history:]}


def _counted(index: RecallIndex, pos: int, memory: Memory) -> Memory:
    """``memory`` with what the index keeps newer than any row: the access counters (a
    recall counts at once, and writes them later), centrality and cross-references."""
    centrality = float(index.centrality[pos])  # NaN: no lifecycle run stored one
    return memory.model_copy(update={
        **index.access(pos),
        "centrality": None if math.isnan(centrality) else centrality,
        "xref_count": int(index.xrefs[pos]),
    })
