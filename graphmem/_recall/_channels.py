"""Recall's channels as pure functions over one query (``Query``): what a recall asks,
with what every channel reads of it (its BM25 scores, the entities it names, its time
window, its vector search) computed once, on first use, and kept.

Each channel takes the query and the configuration and returns its ranking
(``Channel``): positions and scores, best first, superseded memories replaced by their
current version (``redirected`` says which), and, for the graph walk, how it reached
each hit (``paths``). ``run_channels`` runs the active ones in order; the graph walk
seeds from the fusion of the text and vector channels, and the time channel, for a
question about time that names no window, from the fusion of those and the graph:
``Fusion`` adds each channel's ranks once, as it comes, so no fusion is computed again.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np

from .._kg import (
    ASKED_AS,
    ROLE_WEIGHTS,
    asks_for_time,
    asks_now,
    is_temporal_question,
    query_window,
)
from .._kg._calendar import TimeWindow
from .._text import tokenize
from .._time import still_id
from ._actr import activation_s
from ._config import GraphParams, RecallConfig
from ._entities import EntityIndex
from ._fusion import competition_ranks
from ._index import RecallIndex
from ._query import answer_kind, holds_kind
from ._vectors import as_float32
from ._walk import FlatRows, hop_expansion, local_ppr

__all__ = ["Channel", "Fusion", "Query", "Ranking", "corrections_first", "later_first",
           "lexical_neighbours", "run_channels", "top"]

Ranking = list[tuple[int, float]]

_NO_ROW = (np.zeros(0, dtype=np.int64), np.zeros(0))
#: the longest window length ``time_after`` stretches (31 days, in seconds): an open window
#: ("before March") would otherwise reach everything after it
_MONTH_S = 31 * 86400.0
#: what "said on the day of the latest" spans (``_latest``), in seconds
_DAY_S = 86400.0


@dataclass
class Query:
    """One recall's query over one index: the text, who asks (``owner``, its BM25
    ``group``), what may be shown (``mask``), the time it is asked at (``as_of`` when
    given, ``now`` otherwise); the rest is computed once, when a channel first asks."""

    index: RecallIndex
    text: str
    mask: np.ndarray
    now: datetime
    owner: str | None = None
    as_of: datetime | None = None
    #: the query's embedding, on its way (None: no vector channel)
    vector_future: Future[np.ndarray] | None = None
    #: the embedding of the query as sentence vectors are searched with it
    #: (``EntityIndex.without_people``), and their share of the vector score
    #: (``RecallConfig.sentences``; None: the memories' own vectors alone)
    sentence_future: Future[np.ndarray] | None = None
    sentence_weight: float = 0.0
    _nearest: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = field(
        default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        return self.index.size

    @property
    def when(self) -> datetime:
        """The time the query is asked at: ``as_of``, or now."""
        return self.as_of or self.now

    @cached_property
    def group(self) -> int | None:
        """The owner group whose BM25 statistics the query uses (None: all owners')."""
        return self.index.owner_group(self.owner) if self.owner is not None else None

    @cached_property
    def spoken(self) -> str:
        """The text as the owner would say it (``EntityIndex.in_first_person``): what
        the full-text and vector channels read."""
        return self.index.entities.in_first_person(self.text, self.owner)

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(tokenize(self.spoken))

    @cached_property
    def bm25(self) -> np.ndarray:
        """The BM25 score of every memory, with the owner's statistics; an idiom's words
        are not searched for ("what does she do for a living?" asks for no "live")."""
        return self.index.bm25.scores(_IDIOM.sub("", self.spoken), self.size,
                                      group=self.group)

    @cached_property
    def asks(self) -> str | None:
        """The kind of value the query asks for (``answer_kind``: "weekday", "clock",
        "amount", "advice"), or None."""
        return answer_kind(self.text)

    @cached_property
    def named(self) -> dict[int, str]:
        """The entities the query names (entity position -> the form)."""
        return self.index.entities.link(self.text, self.owner,
                                        all_owners=self.owner is None)

    @cached_property
    def window(self) -> TimeWindow | None:
        """The time window the query names ("last weekend"), if any."""
        return query_window(self.text, self.when)

    @cached_property
    def vector(self) -> np.ndarray | None:
        return self.vector_future.result() if self.vector_future is not None else None

    def nearest(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The vector search for ``k`` (``RecallIndex.nearest``), run once."""
        found = self._nearest.get(k)
        if found is None:
            assert self.vector is not None
            sentence = self.sentence_future.result() if self.sentence_future else None
            found = self._nearest[k] = self.index.nearest(
                self.vector, self.mask, k, sentence, self.sentence_weight)
        return found


@dataclass
class Channel:
    """One channel's ranking, the superseded memories it replaced (current version ->
    the positions it stands for), and how a graph walk reached its hits."""

    ranking: Ranking
    redirected: dict[int, set[int]] = field(default_factory=dict)
    paths: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class Fusion:
    """Reciprocal rank fusion kept up as channels come: each channel's competition ranks
    are computed once and its ``weight / (k + rank)`` added to ``scores`` in channel
    order (so the sums are those of ``rrf_from_ranks`` over the channels so far)."""

    weights: Mapping[str, float]
    k: float
    ranks: dict[str, dict[int, int]] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)

    def add(self, name: str, ranking: Ranking) -> None:
        ranks = self.ranks[name] = competition_ranks(ranking)
        weight = float(self.weights.get(name, 1.0))
        if weight == 0.0:
            return
        scores = self.scores
        for item, rank in ranks.items():
            scores[item] = scores.get(item, 0.0) + weight / (self.k + rank)

    def with_weights(self, weights: Mapping[str, float]) -> dict[int, float]:
        """The fusion of the same ranks with other weights (computed again only when
        they differ)."""
        if weights == self.weights:
            return dict(self.scores)
        scores: dict[int, float] = {}
        for name, ranks in self.ranks.items():
            weight = float(weights.get(name, 1.0))
            if weight == 0.0:
                continue
            for item, rank in ranks.items():
                scores[item] = scores.get(item, 0.0) + weight / (self.k + rank)
        return scores


def resolve(q: Query, ranking: Ranking, limit: int,
            paths: Mapping[int, tuple[str, ...]] | None = None) -> Channel:
    """Replace superseded memories by their current version; keep what may be shown."""
    index, mask, as_of = q.index, q.mask, q.as_of
    out: Ranking = []
    redirected: dict[int, set[int]] = {}
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
    return Channel(out, redirected, {} if paths is None else paths)


def fulltext(q: Query, config: RecallConfig) -> Channel:
    """BM25 with the statistics of the caller's owner alone (``group``): the scores
    an owner sees say nothing about other owners' texts."""
    return resolve(q, top(q.bm25, q.mask, config.candidates * 2, positive=True),
                   config.candidates)


def vector(q: Query, config: RecallConfig) -> Channel:
    """The memories nearest to the query's embedding."""
    positions, cosines, _ = q.nearest(config.candidates * 2)
    return resolve(q, list(zip(positions.tolist(), cosines.tolist(), strict=True)),
                   config.candidates)


def graph(q: Query, config: RecallConfig, seeds_fused: Mapping[int, float]) -> Channel:
    """Walks from the best text and vector hits (``seeds_fused``: their fusion), and from
    the entities the query names, over REFERENCES and CO_OCCURS and, with
    ``graph.entities``, through the entities memories mention: memory <-> entity <->
    memory (entity positions follow memory positions). Hubs (a speaker every turn
    names) are damped by their informativeness. A hit reached through entities says
    which (``paths``)."""
    index, params = q.index, config.graph
    top_seeds = sorted(seeds_fused, key=lambda p: -seeds_fused[p])[: params.seeds]
    seeds: dict[int, float] = {p: seeds_fused[p] for p in top_seeds}
    n = index.size
    walk = index.derived(("walk", params, q.owner), lambda: WalkRows(index, params, q.owner))
    named: dict[int, str] = {}
    if walk.entities and params.query_entities > 0:
        named = q.named
        best = max(seeds.values(), default=1.0)
        for entity in named:
            strength = walk.informative(entity)
            if strength > 0:
                seeds[n + entity] = params.query_entities * strength * best
    if not seeds:
        return Channel([])
    if params.method == "ppr":
        scores = local_ppr(seeds, walk.rows, depth=params.depth, damping=params.damping,
                           iterations=params.iterations)
    else:
        scores = hop_expansion(seeds, walk.rows, depth=params.depth, decay=params.hop_decay)
    if not params.include_seeds:
        scores = {p: s for p, s in scores.items() if p not in seeds}
    paths: Mapping[int, tuple[str, ...]] = {}
    if walk.entities:
        entity_scores = {p - n: s for p, s in scores.items() if p >= n}
        scores = {p: s for p, s in scores.items() if p < n}
        paths = _Paths(index.entities, scores, entity_scores, named)
    return resolve(q, _best_first(scores), config.candidates, paths)


def _best_first(scores: Mapping[int, float]) -> Ranking:
    """``scores`` as a ranking: best first, ties by position (sorted by numpy: a walk
    scores hundreds of memories)."""
    positions = np.fromiter(scores, dtype=np.int64, count=len(scores))
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    order = np.lexsort((positions, -values))
    return list(zip(positions[order].tolist(), values[order].tolist(), strict=True))


class WalkRows:
    """What a graph walk reads for one owner and one ``GraphParams``: each node's row
    (memories, then entities at ``n + e``; within the owner's group when an owner asks)
    and each entity's weight (``informative``), made on first use and kept with the index
    (``RecallIndex.derived``) until it changes: a walk of LoCoMo's first conversation
    reads ~470 rows, which took ~10 ms a query to make again (``rows``)."""

    #: rows kept at most (then all are made again as walks ask)
    LIMIT = 50_000

    def __init__(self, index: RecallIndex, params: GraphParams, owner: str | None) -> None:
        self._index, self._params, self._owner = index, params, owner
        n = index.size
        graph = index.entities
        #: whether walks go through the entities memories mention
        self.entities = params.entities > 0 and graph.size > 0
        self._weight: dict[int, float] = {}
        self._counts = owner_sizes(index) if self.entities else {}
        self._selves = graph.selves(owner) if self.entities else frozenset()
        row = index.adjacency(params.references, params.co_occurs).row
        if self.entities:
            row = _with_entities(row, graph, n, params.entities, self.informative)
        group = index.owner_group(owner) if owner is not None else None
        if group is not None:
            # walks never cross into other owners (entities are each owner's own)
            row = _within(row, _owners_with_entities(index, graph, n) if self.entities
                          else index.owner, group)
        #: each node's row (memories, then entities at ``n + e``), made when first read
        self.rows = FlatRows(row, self.LIMIT)

    def informative(self, entity: int) -> float:
        """How much walking through ``entity`` counts (0: not walked through): its
        informativeness within its owner's memories, 0 for the owner themselves, for one
        below ``min_informativeness`` and for one of more than ``max_fanout`` memories."""
        found = self._weight.get(entity)
        if found is None:
            if entity in self._selves:
                found = 0.0  # every memory of the owner is theirs
            else:
                index, params, graph = self._index, self._params, self._index.entities
                code = index.owner_codes.get(graph.owner[entity], -1)
                found = graph.informativeness(entity, self._counts.get(code, index.size))
                fanout = len(graph.memories_of.get(entity, ()))
                if found < params.min_informativeness or fanout > params.max_fanout:
                    found = 0.0
            self._weight[entity] = found
        return found


class _Paths(Mapping[int, tuple[str, ...]]):
    """How the walk reached each memory it scored (``_path``), found when asked: a recall
    reads the paths of its few hits and candidates, not of the hundreds walked."""

    def __init__(self, graph: EntityIndex, scores: Mapping[int, float],
                 entity_scores: Mapping[int, float], named: Mapping[int, str]) -> None:
        self._graph, self._scores = graph, scores
        self._entity_scores, self._named = entity_scores, named
        self._found: dict[int, tuple[str, ...]] = {}

    def __getitem__(self, pos: int) -> tuple[str, ...]:
        found = self._found.get(pos)
        if found is None:
            found = ()
            if pos in self._scores:
                found = _path(self._graph, pos, self._entity_scores, self._named)
            self._found[pos] = found
        if not found:
            raise KeyError(pos)
        return found

    def __iter__(self) -> Iterator[int]:
        return (pos for pos in self._scores if pos in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def time(q: Query, config: RecallConfig, fused: Mapping[int, float]) -> Channel:
    """Memories of the time a query names ("last weekend", "in May 2023"): dated in
    that window or speaking of it, those the channels before it matched first
    (``_window_order``). A question about when,
    order or duration, naming no window, favours the hits of the channels before it
    (``fused``: their fusion) that speak of a time."""
    window = q.window
    index, mask, n = q.index, q.mask, q.size
    times = index.entities.times
    if window is not None:
        start, end = window.start.timestamp(), window.end.timestamp()
        with np.errstate(invalid="ignore"):
            inside = (index.created[:n] >= start) & (index.created[:n] < end)
        where, starts, ends = index.derived("time spans", lambda: _time_spans(times))
        inside[where[(where < n) & (starts < end) & (ends > start)]] = True
        text = q.bm25
        scores = np.where(inside & mask, _window_order(text, _with_replaced(index, fused), n),
                          -np.inf)
        ranking = top(scores, mask, config.candidates * 2, positive=True)
        if config.time_after > 0:
            ranking += _after_window(q, text, inside, start, end, config,
                                     config.candidates * 2 - len(ranking))
        return resolve(q, ranking, config.candidates)
    if not is_temporal_question(q.text):
        if config.time_floor_now > 0 and asks_now(q.text):
            return _latest(q, config, fused)
        return Channel([])
    share = config.time_floor
    if config.time_floor_when is not None and asks_for_time(q.text):
        share = config.time_floor_when
    floor = share * max(fused.values(), default=0.0)
    # "on which day does she come?": a day of the week is the time asked for, and what
    # names one ("she comes on Wednesdays") speaks of it, though no date is parsed from it
    weekly = (index.bm25.holding("weekday", functools.partial(holds_kind, "weekday"), fused)
              if q.asks == "weekday" else set())
    dated = [(p, s) for p, s in sorted(fused.items(), key=lambda kv: -kv[1])
             if (p in times or p in weekly) and s >= floor]
    return Channel(dated[: config.candidates])


def _with_replaced(index: RecallIndex, fused: Mapping[int, float]) -> dict[int, float]:
    """``fused``, and for each of its memories the older versions it replaced, at its
    score: the fused channels rank current versions, and a window may hold the version
    a later one replaced (what was said then) rather than the later one itself."""
    out = dict(fused)
    todo = list(fused.items())
    while todo:
        pos, score = todo.pop()
        for older in index.replaced(index.ids[pos]):
            if older not in out:
                out[older] = score
                todo.append((older, score))
    return out


def _window_order(text: np.ndarray, fused: Mapping[int, float], n: int) -> np.ndarray:
    """How the memories of a window are ordered: those the channels before matched first,
    by their fused score, then the others by their full-text score (a window holds many
    memories that match none of the question's words, a greeting or a goodbye among them,
    and a name's faint full-text score says little)."""
    text_order = text[:n] / max(float(np.max(text[:n], initial=0.0)), 1e-9)
    order = 1.0 + 0.5 * text_order
    before = [(p, s) for p, s in fused.items() if p < n and s > 0]
    if before:
        where = np.fromiter((p for p, _ in before), dtype=np.int64, count=len(before))
        score = np.fromiter((s for _, s in before), dtype=np.float64, count=len(before))
        # equal fused scores (mirrored ranks) go by text, not by where a memory is held
        order[where] = 2.0 + score / score.max() + 1e-6 * text_order[where]
    return order


def _time_spans(times: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """Every time span memories speak of as flat arrays (the memory's position, the
    span's start and end): a window's memories are found without a loop over the
    memories (at 1M memories, ~10 ms a query for ~2,400 memories with times)."""
    if not times:
        empty = np.zeros(0)
        return np.zeros(0, dtype=np.int64), empty, empty
    spans = [np.reshape(s, (-1, 2)) for s in times.values()]
    where = np.repeat(np.fromiter(times, dtype=np.int64, count=len(times)),
                      [len(s) for s in spans])
    flat = np.concatenate(spans)
    return where, flat[:, 0], flat[:, 1]


def _latest(q: Query, config: RecallConfig, fused: Mapping[int, float]) -> Channel:
    """For a question about now: of the fused hits scoring at least ``time_floor_now``
    of the best, those said on the day of the latest of them, all first alike (the other
    channels order them)."""
    floor = config.time_floor_now * max(fused.values(), default=0.0)
    near = np.fromiter((p for p, s in fused.items() if s >= floor and s > 0), dtype=np.int64)
    dates = q.index.created[near]
    if not np.isfinite(dates).any():
        return Channel([])
    latest = sorted(near[dates >= np.nanmax(dates) - _DAY_S].tolist(),
                    key=lambda p: (-fused[p], p))
    return Channel([(p, 1.0) for p in latest[: config.candidates]])


def _after_window(q: Query, text: np.ndarray, inside: np.ndarray, start: float, end: float,
                  config: RecallConfig, room: int) -> Ranking:
    """The memories dated just after a window (``time_after`` of its length, a month
    at most), best text matches first, to follow the window's own: what is said of a
    time is mostly said soon after it."""
    if room <= 0:
        return []
    index, n = q.index, q.size
    reach = end + config.time_after * min(end - start, _MONTH_S)
    with np.errstate(invalid="ignore"):
        after = (index.created[:n] >= end) & (index.created[:n] < reach)
    after &= q.mask[:n] & ~inside
    scores = np.where(after, text + 1.0, -np.inf)
    return top(scores, after, room, positive=True)


#: "what does she do for a living?" asks what she does for work, not where she lives
_IDIOM = re.compile(r"\s+for\s+a\s+living\b", re.IGNORECASE)


@functools.cache
def _asked_as(predicate: str) -> frozenset[str]:
    """The query terms that ask for ``predicate``: its own words and ``ASKED_AS``'s."""
    words = [predicate.replace("_", " "), *ASKED_AS.get(predicate, ())]
    return frozenset(tokenize(" ".join(words)))


def facts(q: Query, config: RecallConfig) -> Channel:
    """The memories that state facts about the entities the query names: facts valid
    at ``as_of`` (or now) first, then by how well the predicate matches the query's
    words, then by confidence; an ended fact only when its predicate matches."""
    named = q.named
    if not named:
        return Channel([])
    index = q.index
    entities = index.entities
    when = q.when
    words = q.words if _IDIOM.search(q.spoken) is None else frozenset(
        tokenize(_IDIOM.sub(" work", q.spoken)))
    scored: dict[int, float] = {}
    selves = entities.selves(q.owner)
    for entity in named:
        for fact in entities.facts_of.get(entity, ()):
            valid = (fact.valid_from is None or fact.valid_from <= when) and (
                fact.valid_to is None or fact.valid_to > when)
            overlap = len(words & _asked_as(fact.predicate))
            if not overlap and (entity in selves or not valid):
                # naming the owner says nothing of which of their facts; an ended fact
                # the question does not ask about says nothing either (it came first
                # for every question naming its person: everyday dev2/dev3 hit@1 -1/+2)
                continue
            score = (1.0 if valid else 0.5) + overlap + 0.1 * fact.confidence
            for source in fact.sources:
                pos = index.pos.get(source)
                if pos is not None:
                    scored[pos] = max(scored.get(pos, 0.0), score)
    ranking = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    return resolve(q, ranking, config.candidates)


def entities(q: Query, config: RecallConfig) -> Channel:
    """The memories that mention (or are spoken by) the entities the query names,
    ranked among themselves by how close they are to the query (the vector score, or
    BM25 without vectors), plus ``graph.named_bonus`` per informative named entity they
    mention: "what does Melanie do to relax?" searches Melanie's own turns."""
    named = q.named
    if not named:
        return Channel([])
    index, n = q.index, q.size
    graph_index = index.entities
    bonus = np.zeros(n)
    inside = np.zeros(n, dtype=bool)
    sizes = owner_sizes(index)
    floor = 0.0 if config.graph.named_speakers else ROLE_WEIGHTS["speaker"]
    selves = graph_index.selves(q.owner)
    for entity in named:
        if entity in selves:
            continue  # every memory of the owner is theirs
        memories = graph_index.memories_of.get(entity)
        if not memories:
            continue
        positions = np.fromiter((p for p, w in memories.items() if p < n and w > floor),
                                dtype=np.int64)
        inside[positions] = True
        code = index.owner_codes.get(graph_index.owner[entity], -1)
        bonus[positions] += config.graph.named_bonus * graph_index.informativeness(
            entity, sizes.get(code, n))
    if not inside.any():
        return Channel([])
    similarity = q.nearest(config.candidates * 2)[2] if q.vector is not None else None
    if similarity is not None:
        base = similarity
    elif q.vector is not None:  # search did not score them all: these only
        base = np.full(n, -np.inf, dtype=np.float32)
        named_memories = np.flatnonzero(inside & index.has_vector[:n])
        base[named_memories] = index.cosines(named_memories, q.vector)
    else:
        base = q.bm25
    scores = np.where(inside, base + bonus, -np.inf)
    return resolve(q, top(scores, q.mask & inside, config.candidates * 2, positive=False),
                   config.candidates)


@dataclass
class Channels:
    """What the channels of one recall found: each one's ranking, scores and ranks, the
    fusion of them all (``fusion``), the superseded memories replaced, the graph paths."""

    rankings: dict[str, Ranking]
    fusion: Fusion
    redirected: dict[int, set[int]]
    paths: Mapping[int, tuple[str, ...]]


class _Chain(Mapping[int, tuple[str, ...]]):
    """Several channels' paths as one mapping, the first of ``maps`` first, each read
    only when asked (``_Paths`` finds a path when it is read)."""

    def __init__(self) -> None:
        self.maps: list[Mapping[int, tuple[str, ...]]] = []

    def __getitem__(self, pos: int) -> tuple[str, ...]:
        for found in self.maps:
            if pos in found:
                return found[pos]
        raise KeyError(pos)

    def __iter__(self) -> Iterator[int]:
        return iter(dict.fromkeys(pos for found in self.maps for pos in found))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def run_channels(q: Query, config: RecallConfig, *,
                 min_similarity: float | None = None) -> Channels | None:
    """Run the active channels in order, fusing each as it comes; None when
    ``min_similarity`` finds nothing close enough to the query."""
    rankings: dict[str, Ranking] = {}
    fusion = Fusion(config.weights, config.rrf_k)
    redirected: dict[int, set[int]] = {}
    paths = _Chain()

    def keep(name: str, channel: Channel) -> None:
        rankings[name] = channel.ranking
        for head, moved in channel.redirected.items():
            redirected.setdefault(head, set()).update(moved)
        paths.maps.insert(0, channel.paths)  # a later channel's path first (not read yet)
        fusion.add(name, channel.ranking)

    steps: list[tuple[str, Callable[[], Channel]]] = [
        ("fulltext", lambda: fulltext(q, config)),
        ("vector", lambda: vector(q, config)),
        ("graph", lambda: graph(q, config, fusion.scores)),
        ("time", lambda: time(q, config, fusion.scores)),
        ("facts", lambda: facts(q, config)),
        ("entities", lambda: entities(q, config)),
    ]
    for name, run in steps:
        if not config.active(name) or (name == "vector" and q.vector_future is None):
            continue
        keep(name, run())
        if name == "vector" and min_similarity is not None and (
                not rankings["vector"] or rankings["vector"][0][1] < min_similarity):
            return None  # nothing stored is about what the query asks
    return Channels(rankings, fusion, redirected, paths)


def corrections_first(index: RecallIndex, fused: dict[int, float],
                      vector_ranks: Mapping[int, int]) -> dict[int, int]:
    """A memory that replaced a statement of an earlier message (a correction) comes
    before the other statements of that message it is at least as close to the query as
    (its vector rank as good or better): what matched there is most likely what it
    corrects ("the move is on the 14th" corrected, "we got the flat" beside it).
    ``fused`` is changed in place; returns each memory moved -> the statement it now
    comes before. Costs a look-up per fused candidate (``RecallIndex.replaced``)."""
    messages = index.message
    moved: dict[int, int] = {}
    by_message: dict[int, list[int]] | None = None
    for pos in fused:  # values change below, never keys
        old = index.replaced(index.ids[pos])
        mine = vector_ranks.get(pos)
        if not old or mine is None:
            continue
        corrected = {int(messages[p]) for p in old} - {0, int(messages[pos])}
        if not corrected:
            continue
        if by_message is None:
            by_message = {}
            for p in fused:
                by_message.setdefault(int(messages[p]), []).append(p)
        # what the correction left true of the statement it replaced is not what it
        # corrects (``still_true``)
        left = {still_id(index.ids[p]) for p in old}
        beside = [p for m in corrected for p in by_message.get(m, ())
                  if fused[p] > fused[pos] and vector_ranks.get(p, math.inf) >= mine
                  and index.ids[p] not in left]
        if beside:
            best = max(beside, key=lambda p: (fused[p], -p))
            fused[pos] = math.nextafter(fused[best], math.inf)
            moved[pos] = best
    return moved


#: words by which a statement says that something changed: "now" ending a clause or after
#: "is" ("we move on 4 July now", "his dose is now at 7"; not "doing the review now with
#: her"), "instead", "anymore", "no longer", "switched", "changed", "moved"
_CHANGE_CUE = re.compile(r"\bnow(?=\s*(?:[.,;:!?)]|$))|\b(?:is|are|'s|'re|am|'m) now\b"
                         r"|\b(?:instead|anymore|any more|no longer|these days|switched|"
                         r"changed|moved)\b", re.IGNORECASE)
#: ``later_first`` looks at this many of the best fused candidates; the later statement
#: must score at least ``_LATER_SHARE`` of the earlier one's fused score and a vector
#: score at most ``_LATER_GAP`` below the earlier one's (it answers the question about
#: as well: "the semester is busy now" is not what "which degree is she doing?" asks)
_LATER_AMONG, _LATER_SHARE, _LATER_GAP = 10, 0.5, 0.1


def later_first(index: RecallIndex, fused: dict[int, float], vector: Mapping[int, float],
                text_of: Callable[[int], str], *, similar: float) -> dict[int, int]:
    """A later word on a subject comes before the earlier one: of the best fused
    candidates, a memory that says something changed (``_CHANGE_CUE``), said after
    another of the same owner by the same side of the conversation (both the user's, or
    both the assistant's) in another message, whose own vector is at least ``similar`` close to
    the other's (cosine), and that answers the question about as well (``_LATER_SHARE``,
    ``_LATER_GAP`` of its ``vector`` score), is moved just before it and before what
    else of that message scores above it ("I do Sundays at the hospital now" after "a
    bank role at the hospital, on Saturdays"). ``text_of`` gives a position's text, read
    only for a memory that has such an earlier one. ``fused`` is changed in place;
    returns each memory moved -> the statement it now comes before."""
    top = sorted(fused, key=lambda p: (-fused[p], index.ids[p]))[:_LATER_AMONG]
    dated = [p for p in top if index.has_vector[p] and math.isfinite(index.created[p])]
    if len(dated) < 2:
        return {}
    rows = as_float32(index.vectors[dated])
    rows /= np.maximum(np.linalg.norm(rows, axis=1), 1e-12)[:, None]
    close = rows @ rows.T >= similar
    messages, created, theirs, owners = (index.message, index.created, index.assistant,
                                         index.owner)
    moved: dict[int, int] = {}
    for i in sorted(range(len(dated)), key=lambda n: created[dated[n]]):
        later = dated[i]
        if later not in vector:
            continue
        earlier = [e for e in (dated[j] for j in np.flatnonzero(close[i]))
                   if created[e] < created[later] and theirs[e] == theirs[later]
                   and owners[e] == owners[later]
                   and (messages[later] == 0 or messages[e] != messages[later])
                   and fused[later] >= _LATER_SHARE * fused[e]
                   and vector[later] >= vector.get(e, math.inf) - _LATER_GAP]
        if not earlier or not _CHANGE_CUE.search(text_of(later)):
            continue
        above = [p for p in top for e in earlier if fused[p] > fused[later]
                 and (p == e or (messages[e] != 0 and messages[p] == messages[e]))]
        if above:
            best = max(above, key=lambda p: (fused[p], -p))
            fused[later] = math.nextafter(fused[best], math.inf)
            moved[later] = best
    return moved


def actr_terms(index: RecallIndex, candidates: list[int], fused: Mapping[int, float],
               config: RecallConfig, now: datetime) -> dict[int, tuple[Any, int, float]]:
    """ACT-R activation of the ``candidates``: per position its terms, its rank by
    activation and its contribution to the final score (gated by relevance for ``rrf``,
    min-max scaled for ``minmax``)."""
    params = config.actr
    assert params is not None
    now_s = now.timestamp()
    terms = {pos: activation_s(created=float(index.created[pos]),
                               access_times=index.access_seconds[pos],
                               access_count=int(index.access_count[pos]),
                               confidence=float(index.confidence[pos]), now=now_s,
                               d=params.d, beta=params.beta, epsilon=params.epsilon)
             for pos in candidates}
    # without ``by_age`` a memory never accessed ranks last, with every other such one
    key = {p: t.value if params.by_age or t.frequency or t.history else -math.inf
           for p, t in terms.items()}
    order = sorted(terms, key=lambda p: (-key[p], index.ids[p]))
    ranks = competition_ranks([(p, key[p]) for p in order])
    out: dict[int, tuple[Any, int, float]] = {}
    if params.combine == "rrf":
        best = max(fused[p] for p in candidates)
        for pos in order:
            gate = (fused[pos] / best) ** params.relevance if best > 0 else 1.0
            out[pos] = (terms[pos], ranks[pos],
                        gate * params.weight / (config.rrf_k + ranks[pos]))
    else:
        values = [key[p] for p in order if key[p] > -math.inf]
        low, high = min(values, default=0.0), max(values, default=0.0)
        scale = max(fused[p] for p in candidates)
        for pos in order:
            unit = ((key[pos] - low) / (high - low) if high > low and key[pos] > -math.inf
                    else 0.0)
            out[pos] = (terms[pos], ranks[pos], params.weight * unit * scale)
    return out


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


def owner_sizes(index: RecallIndex) -> dict[int, int]:
    """How many memories each owner (by code) has in the index (counted once until it
    changes; the caller does not change the answer)."""

    def count() -> dict[int, int]:
        codes, counts = np.unique(index.owner[: index.size], return_counts=True)
        return {int(code): int(c) for code, c in zip(codes, counts, strict=True)}

    return index.derived("owner sizes", count)


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


def top(scores: np.ndarray, mask: np.ndarray, n: int, *, positive: bool) -> Ranking:
    """The ``n`` best masked positions with a finite score, best first, ties by position
    (``positive``: scores above zero only). Only the scored positions are sorted: text
    and time channels score few of a million memories."""
    if positive:
        # the few scored first, then the mask and finiteness on them alone (at 1M
        # memories four passes over every score took ~1.5 ms)
        best = np.flatnonzero(scores > 0)
        best = best[mask[best] & np.isfinite(scores[best])]
    else:
        best = np.flatnonzero(np.isfinite(scores) & mask)
    if n <= 0 or best.size == 0:
        return []
    if best.size > n:
        best = best[np.argpartition(-scores[best], n - 1)[:n]]
    best = best[np.lexsort((best, -scores[best]))]
    return [(int(p), float(scores[p])) for p in best.tolist()]


def lexical_neighbours(index: RecallIndex, text: str, *, owner: str | None,
                       eligible: np.ndarray, limit: int) -> list[str]:
    """Ids of the ``limit`` best full-text matches of ``text`` among the ``eligible``
    positions (scored with ``owner``'s statistics)."""
    n = index.size
    if n == 0:
        return []
    scores = np.where(eligible[:n], index.bm25.scores(text, n,
                                                        group=index.owner_group(owner)), 0.0)
    return [index.ids[int(p)] for p in np.argsort(-scores)[:limit] if scores[p] > 0]
