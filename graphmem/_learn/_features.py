"""What the learned ranker sees of a recall candidate: features built from what recall
already computed (each channel's rank and score, the fused score, the ACT-R activation),
the memory's use (accesses, useful / ignored feedback), its kind and state, and how it
meets the query (shared terms, the entities the query names, the graph walk's path).

Features are relative within a query where a raw value means little across queries
(a BM25 score, an activation): ``*_rel`` is 1 for the channel's best candidate.

Recall captures its candidates on every query that runs ACT-R, but the feature matrix
is only built when something asks for it (the ``learned`` preset at once, feedback
later): the memories' use is copied at recall time (~30 µs for 50 candidates), the
rest is read from what that recall computed.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._models import KIND_CODE, STATUS_CODE, Kind
from .._recall._actr import ActivationTerms
from .._recall._config import CHANNELS
from .._recall._index import RecallIndex
from .._text import tokenize

__all__ = ["FEATURES", "FEATURE_SET", "Candidates", "capture"]

#: The version of the feature list: a model or a stored sample of another version is
#: not mixed with this one.
FEATURE_SET = "f2"
_KINDS = tuple(k.value for k in Kind)
FEATURES: tuple[str, ...] = (
    *(f"{c}_{part}" for c in CHANNELS for part in ("rr", "rel")),
    "vector_cos", "channels", "fused_rr", "fused_rel",
    "act_rr", "act_rel", "act_exact",
    "log_age_days", "log_idle_days", "log_accesses", "log_useful", "log_ignored",
    "useful_rate", "importance", "confidence", "hot", "archived",
    *(f"kind_{k}" for k in _KINDS),
    "term_overlap", "all_terms", "entity_match", "graph_path", "redirected", "session_share",
    "session_first", "session_size", "session_best",
)  # fmt: skip
_COL = {name: i for i, name in enumerate(FEATURES)}
_DAY = 86400.0
_ARCHIVED = STATUS_CODE["archived"]
#: how many of the best candidates ``session_share`` looks at
_SESSION_TOP = 10


@dataclass
class _Inputs:
    """What one recall computed, kept (by reference) until the features are built."""

    index: RecallIndex
    query: str
    ranks: Mapping[str, Mapping[int, int]]
    scores: Mapping[str, Mapping[int, float]]
    fused: Mapping[int, float]
    activations: Mapping[int, tuple[ActivationTerms, int, float]]
    paths: Mapping[int, tuple[str, ...]]
    redirected: Mapping[int, object]
    owner: str | None
    group: int | None
    sessions: list[str | None]
    named: Mapping[int, str] | None = None


class Candidates:
    """A recall's best fused candidates in the order of its own preset (``positions``),
    that order's final scores, and their features (``features``: one row each, in the
    order of ``FEATURES``), built on first use."""

    def __init__(self, positions: list[int], final: list[float], state: np.ndarray,
                 inputs: _Inputs | None) -> None:
        self.positions = positions
        self.final = final
        self._matrix = state
        self._inputs = inputs

    @property
    def size(self) -> int:
        return len(self.positions)

    @property
    def features(self) -> np.ndarray:
        """The feature matrix (built from the recall's inputs on first use; call it under
        the recall index's read gate)."""
        inputs = self._inputs
        if inputs is not None:
            _finish(self._matrix, self.positions, inputs)
            self._inputs = None
        return self._matrix


def capture(index: RecallIndex, query: str, order: Sequence[int], *,
            ranks: Mapping[str, Mapping[int, int]], scores: Mapping[str, Mapping[int, float]],
            fused: Mapping[int, float], final: Mapping[int, float],
            activations: Mapping[int, tuple[ActivationTerms, int, float]],
            paths: Mapping[int, tuple[str, ...]], redirected: Mapping[int, object],
            owner: str | None, group: int | None, now: float,
            named: Mapping[int, str] | None = None) -> Candidates:
    """The candidates ``order`` (best first) with what recall computed about them.

    ``owner`` is the recall's owner filter, ``group`` the owner group whose BM25
    statistics the query used, ``now`` the time of the recall (POSIX seconds). What
    later writes change (the memories' use) is copied now. ``named``: the entities the
    query names, when recall linked them already.
    """
    positions = list(order)
    n = len(positions)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return Candidates(positions, [], x, None)
    pos = np.asarray(positions, dtype=np.int64)
    created = index.created[pos]
    x[:, _COL["log_age_days"]] = np.log1p(np.maximum(now - created, 0.0) / _DAY)
    last = created.copy()  # never accessed: idle since created
    for row, p in enumerate(positions):
        at = index.last_accessed[p]
        if at is not None:
            last[row] = at.timestamp()
    x[:, _COL["log_idle_days"]] = np.log1p(np.maximum(now - last, 0.0) / _DAY)
    useful, ignored = index.useful[pos], index.ignored[pos]
    x[:, _COL["log_accesses"]] = np.log1p(index.access_count[pos])
    x[:, _COL["log_useful"]] = np.log1p(useful)
    x[:, _COL["log_ignored"]] = np.log1p(ignored)
    x[:, _COL["useful_rate"]] = (useful + 1.0) / (useful + ignored + 2.0)
    x[:, _COL["importance"]] = index.importance[pos]
    x[:, _COL["confidence"]] = index.confidence[pos]
    x[:, _COL["hot"]] = index.hot[pos]
    x[:, _COL["archived"]] = index.status[pos] == _ARCHIVED
    kinds = index.kind[pos]
    for kind in _KINDS:
        x[:, _COL[f"kind_{kind}"]] = kinds == KIND_CODE[kind]
    inputs = _Inputs(index, query, ranks, scores, fused, activations, paths, redirected,
                     owner, group, [index.session[p] for p in positions], named)
    return Candidates(positions, [float(final.get(p, 0.0)) for p in positions], x, inputs)


def _finish(x: np.ndarray, positions: Sequence[int], inputs: _Inputs) -> None:
    """The features that come from the recall itself: channels, fusion, activation,
    the query's terms and entities, the graph path, the session."""
    n = len(positions)
    for channel in CHANNELS:
        channel_ranks = inputs.ranks.get(channel)
        if not channel_ranks:
            continue
        channel_scores = inputs.scores[channel]
        best, worst = max(channel_scores.values()), min(channel_scores.values())
        spread = best - worst
        rr, rel = _COL[f"{channel}_rr"], _COL[f"{channel}_rel"]
        for row, p in enumerate(positions):
            rank = channel_ranks.get(p)
            if rank is None:
                continue
            x[row, rr] = 1.0 / rank
            x[row, rel] = (channel_scores[p] - worst) / spread if spread > 0 else 1.0
            if channel == "vector":
                x[row, _COL["vector_cos"]] = channel_scores[p]
    hit = np.column_stack([x[:, _COL[f"{c}_rr"]] > 0 for c in CHANNELS])
    x[:, _COL["channels"]] = hit.sum(axis=1)
    x[:, _COL["fused_rr"]] = 1.0 / np.arange(1, n + 1)
    fused = np.array([inputs.fused.get(p, 0.0) for p in positions])
    x[:, _COL["fused_rel"]] = fused / max(float(fused.max()), 1e-12)
    known = [(row, inputs.activations[p]) for row, p in enumerate(positions)
             if p in inputs.activations]
    best_a = max((terms.value for _, (terms, _, _) in known), default=0.0)
    for row, (terms, rank, _) in known:
        x[row, _COL["act_rr"]] = 1.0 / rank
        x[row, _COL["act_rel"]] = terms.value - best_a
        x[row, _COL["act_exact"]] = terms.formula == "exact"
    _query_terms(x, inputs, positions)
    graph = inputs.index.entities
    owner = inputs.owner
    named = inputs.named
    if named is None:
        named = graph.link(inputs.query, owner, all_owners=owner is None) if graph.size else {}
    if named:
        wanted = set(named)
        for row, p in enumerate(positions):
            x[row, _COL["entity_match"]] = len(wanted.intersection(graph.mentioned(p))) \
                / len(wanted)
    for row, p in enumerate(positions):
        path = inputs.paths.get(p)
        if path:
            x[row, _COL["graph_path"]] = len(path)
        if p in inputs.redirected:
            x[row, _COL["redirected"]] = 1.0
    _session_features(x, inputs.sessions)


def _session_features(x: np.ndarray, sessions: Sequence[str | None]) -> None:
    """What the candidate's session says as a whole (a memory without a session is a
    session of its own): ``session_share``, how many of the best ``_SESSION_TOP`` others
    share it; ``session_first``, no better-placed candidate does; ``session_size``, the
    share of the other candidates in it; ``session_best``, its best ``fused_rel``."""
    n = len(sessions)
    top = [s for s in sessions[:_SESSION_TOP] if s is not None]
    size = collections.Counter(s for s in sessions if s is not None)
    best: dict[str, float] = {}
    for row, session in enumerate(sessions):
        if session is not None:
            best[session] = max(best.get(session, 0.0), float(x[row, _COL["fused_rel"]]))
    seen: set[str] = set()
    for row, session in enumerate(sessions):
        if session is None:
            x[row, _COL["session_first"]] = 1.0
            x[row, _COL["session_best"]] = x[row, _COL["fused_rel"]]
            continue
        others = top.count(session) - (1 if row < _SESSION_TOP else 0)
        x[row, _COL["session_share"]] = others / (_SESSION_TOP - 1)
        x[row, _COL["session_first"]] = session not in seen
        seen.add(session)
        x[row, _COL["session_size"]] = (size[session] - 1) / max(n - 1, 1)
        x[row, _COL["session_best"]] = best[session]


def _query_terms(x: np.ndarray, inputs: _Inputs, positions: Sequence[int]) -> None:
    """``term_overlap``: the share of the query's IDF mass a memory's text holds;
    ``all_terms``: it holds every query term."""
    terms = set(tokenize(inputs.query))
    if not terms:
        return
    bm25 = inputs.index.bm25
    weights = [(bm25.idf(t, group=inputs.group), bm25.posting(t)) for t in terms]
    total = sum(w for w, _ in weights) or 1.0
    for row, p in enumerate(positions):
        held = [w for w, posting in weights if p in posting]
        x[row, _COL["term_overlap"]] = sum(held) / total
        x[row, _COL["all_terms"]] = len(held) == len(weights)
