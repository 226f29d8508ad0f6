"""Graph walks from seed memories: personalized PageRank on the seeds' neighbourhood, or
weighted hop expansion. Free functions over a row function (networkx style): ``row(n)``
returns the neighbours of ``n`` and the edge weights as two numpy arrays."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["FlatRows", "hop_expansion", "local_ppr", "neighbour_arrays", "rows_of"]

Row = Callable[[int], tuple[np.ndarray, np.ndarray]]


def neighbour_arrays(neighbours: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """One row as a walk reads it: the neighbours and the weights, as two arrays."""
    return (np.fromiter(neighbours, dtype=np.int64, count=len(neighbours)),
            np.fromiter(neighbours.values(), dtype=np.float64, count=len(neighbours)))


class FlatRows:
    """Rows made once by a row function and kept in two flat arrays, so that a walk
    gathers the rows of hundreds of nodes with a few numpy operations instead of one
    Python call and one small array per node (a walk of LoCoMo's first conversation
    reads ~470 rows: gathering them one by one took ~1.5 ms a query). Callable as a row
    function. Up to ``limit`` rows are kept, then all are made again as walks ask; safe
    for concurrent walks (a lock around the gathering)."""

    def __init__(self, row: Row, limit: int = 50_000) -> None:
        self._row, self._limit = row, limit
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        #: node -> its slot (a dict: an array over all node ids would cost megabytes per
        #: owner's walk at a million memories)
        self._slot: dict[int, int] = {}
        self._starts = np.zeros(64, dtype=np.int64)
        self._lengths = np.zeros(64, dtype=np.int64)
        self._others = np.zeros(256, dtype=np.int64)
        self._weights = np.zeros(256, dtype=np.float64)
        self._used = 0

    def _add(self, node: int) -> int:
        """Make ``node``'s row and keep it; its slot."""
        others, weights = self._row(node)
        slot, size, end = len(self._slot), len(others), self._used + len(others)
        if slot == len(self._starts):
            self._starts = np.resize(self._starts, 2 * slot)
            self._lengths = np.resize(self._lengths, 2 * slot)
        if end > len(self._others):
            grown = max(end, 2 * len(self._others))
            self._others = np.resize(self._others, grown)
            self._weights = np.resize(self._weights, grown)
        self._others[self._used:end] = others
        self._weights[self._used:end] = weights
        self._starts[slot], self._lengths[slot] = self._used, size
        self._used = end
        self._slot[node] = slot
        return slot

    def _slots(self, nodes: np.ndarray) -> np.ndarray:
        """The slots of ``nodes``, their rows made first where they are not yet."""
        listed = nodes.tolist()
        slots = list(map(self._slot.get, listed, itertools.repeat(-1)))
        if -1 in slots:
            for at, node in enumerate(listed):
                if slots[at] < 0:
                    found = self._slot.get(node)  # a node asked for twice is made once
                    slots[at] = self._add(node) if found is None else found
        return np.array(slots, dtype=np.int64)

    def gather(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of ``nodes`` one after another: each node's number of neighbours,
        and all the neighbours and weights (new arrays), in the order of ``nodes``."""
        with self._lock:
            if len(self._slot) + len(nodes) > self._limit:
                self._clear()
            slots = self._slots(nodes)
            lengths = self._lengths[slots]
            total = int(lengths.sum())
            # the index of every edge: each row's start, then counting on within the row
            first = np.cumsum(lengths) - lengths
            at = np.repeat(self._starts[slots] - first, lengths) + np.arange(total)
            return lengths, self._others[at], self._weights[at]

    def __call__(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """One row: the neighbours of ``node`` and the weights (arrays the caller does
        not change)."""
        with self._lock:
            if len(self._slot) >= self._limit:
                self._clear()
            slot = int(self._slots(np.array([node], dtype=np.int64))[0])
            start, end = self._starts[slot], self._starts[slot] + self._lengths[slot]
            return self._others[start:end], self._weights[start:end]


def rows_of(graph: Mapping[int, Mapping[int, float]]) -> FlatRows:
    """Rows over a dict of dicts (for tests and small graphs).

    >>> row = rows_of({0: {1: 2.0, 2: 0.5}})
    >>> [a.tolist() for a in row(0)], [a.tolist() for a in row(7)]
    ([[1, 2], [2.0, 0.5]], [[], []])
    """
    return FlatRows(lambda node: neighbour_arrays(graph.get(node, {})))


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (a sort and a comparison: ``np.unique`` hashes, which
    took ~0.1 ms a call on a walk's few thousand edges)."""
    values = np.sort(values)
    keep = np.ones(len(values), dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]


def _places(nodes: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in the sorted ``nodes`` (an index), and whether it is
    there at all."""
    at = np.minimum(np.searchsorted(nodes, values), len(nodes) - 1)
    return at, nodes[at] == values


def _subgraph(seeds: np.ndarray, rows: FlatRows, depth: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes within ``depth`` hops (sorted) and the edges among them (local indices)."""
    nodes = _distinct(seeds)
    frontier = nodes
    for _ in range(depth):
        if not frontier.size:
            break
        _, reached, _ = rows.gather(frontier)
        reached = _distinct(reached)
        fresh = reached[~_places(nodes, reached)[1]]
        if fresh.size == 0:
            break
        nodes = np.sort(np.concatenate([nodes, fresh]))
        frontier = fresh
    lengths, others, weights = rows.gather(nodes)
    if not lengths.any():
        empty = np.zeros(0, dtype=np.int64)
        return nodes, empty, empty, np.zeros(0)
    # every row at once: the edges of node i, in node order, kept when they end inside
    src = np.repeat(np.arange(len(nodes), dtype=np.int64), lengths)
    local, inside = _places(nodes, others)
    return nodes, src[inside], local[inside], weights[inside]


def local_ppr(
    seeds: Mapping[int, float],
    row: Row | FlatRows,
    *,
    depth: int = 2,
    damping: float = 0.7,
    iterations: int = 20,
) -> dict[int, float]:
    """Personalized PageRank restricted to the ``depth``-hop neighbourhood of the seeds.

    The walk restarts at the seeds (in proportion to their weights) with probability
    ``1 - damping``; edges are followed in proportion to their weight. Mass that reaches
    a node with no edge inside the neighbourhood returns to the seeds. Checked against
    networkx's pagerank in the tests.

    >>> line = {0: {1: 1.0}, 1: {0: 1.0, 2: 1.0}, 2: {1: 1.0}}
    >>> scores = local_ppr({0: 1.0}, rows_of(line), depth=2)
    >>> scores[0] > scores[1] > scores[2] > 0
    True
    """
    positive = {n: w for n, w in seeds.items() if w > 0}
    total = sum(positive.values())
    if total <= 0:
        return {}
    rows = row if isinstance(row, FlatRows) else FlatRows(row)
    nodes, src, dst, weight = _subgraph(np.fromiter(positive, dtype=np.int64), rows, depth)
    size = len(nodes)
    restart = np.zeros(size)
    restart[np.searchsorted(nodes, list(positive))] = [w / total for w in positive.values()]
    out_weight = np.bincount(src, weights=weight, minlength=size)
    share = weight / out_weight[src] if weight.size else weight
    dangling = out_weight == 0
    scores = restart.copy()
    for _ in range(iterations):
        moved = np.bincount(dst, weights=scores[src] * share, minlength=size)
        scores = (1.0 - damping) * restart + damping * moved \
            + damping * scores[dangling].sum() * restart
    return dict(zip(nodes.tolist(), scores.tolist(), strict=True))


def hop_expansion(
    seeds: Mapping[int, float],
    row: Row,
    *,
    depth: int = 2,
    decay: float = 0.5,
) -> dict[int, float]:
    """Score each node by its strongest path from a seed: seed weight times edge weights
    normalised by the strongest edge of the node they leave, times ``decay`` per hop.

    >>> line = {0: {1: 1.0}, 1: {0: 1.0, 2: 1.0}, 2: {1: 1.0}}
    >>> hop_expansion({0: 1.0}, rows_of(line), depth=2, decay=0.5)
    {0: 1.0, 1: 0.5, 2: 0.25}
    """
    scores = {n: w for n, w in seeds.items() if w > 0}
    frontier = dict(scores)
    for _ in range(depth):
        reached: dict[int, float] = {}
        for node, score in frontier.items():
            others, weights = row(node)
            if others.size == 0 or weights.max() <= 0:
                continue
            values = score * decay * weights / weights.max()
            for other, value in zip(others.tolist(), values.tolist(), strict=True):
                if value > max(scores.get(other, 0.0), reached.get(other, 0.0)):
                    reached[other] = value
        for node, value in reached.items():
            scores[node] = max(scores.get(node, 0.0), value)
        frontier = reached
        if not frontier:
            break
    return scores
