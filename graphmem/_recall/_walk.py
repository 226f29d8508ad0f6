"""Graph walks from seed memories: personalized PageRank on the seeds' neighbourhood, or
weighted hop expansion. Free functions over a row function (networkx style): ``row(n)``
returns the neighbours of ``n`` and the edge weights as two numpy arrays."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["hop_expansion", "local_ppr", "neighbour_arrays", "rows_of"]

Row = Callable[[int], tuple[np.ndarray, np.ndarray]]


def neighbour_arrays(neighbours: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """One row as a walk reads it: the neighbours and the weights, as two arrays."""
    return (np.fromiter(neighbours, dtype=np.int64, count=len(neighbours)),
            np.fromiter(neighbours.values(), dtype=np.float64, count=len(neighbours)))


def rows_of(graph: Mapping[int, Mapping[int, float]]) -> Row:
    """A row function over a dict of dicts (for tests and small graphs).

    >>> row = rows_of({0: {1: 2.0, 2: 0.5}})
    >>> [a.tolist() for a in row(0)], [a.tolist() for a in row(7)]
    ([[1, 2], [2.0, 0.5]], [[], []])
    """

    def row(node: int) -> tuple[np.ndarray, np.ndarray]:
        return neighbour_arrays(graph.get(node, {}))

    return row


def _subgraph(seeds: np.ndarray, row: Row, depth: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes within ``depth`` hops (sorted) and the edges among them (local indices)."""
    nodes = np.unique(seeds)
    frontier = nodes
    rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for _ in range(depth):
        frontier_nodes = frontier.tolist()
        if not frontier_nodes:
            break
        found = [row(node) for node in frontier_nodes]
        rows.update(zip(frontier_nodes, found, strict=True))
        fresh = np.setdiff1d(np.concatenate([others for others, _ in found]), nodes)
        if fresh.size == 0:
            break
        nodes = np.union1d(nodes, fresh)
        frontier = fresh
    known = rows.get
    gathered = [known(node) or row(node) for node in nodes.tolist()]
    lengths = np.array([len(others) for others, _ in gathered], dtype=np.int64)
    if not lengths.any():
        empty = np.zeros(0, dtype=np.int64)
        return nodes, empty, empty, np.zeros(0)
    # every row at once: the edges of node i, in node order, kept when they end inside
    others = np.concatenate([o for o, _ in gathered]).astype(np.int64, copy=False)
    weights = np.concatenate([w for _, w in gathered]).astype(np.float64, copy=False)
    src = np.repeat(np.arange(len(nodes), dtype=np.int64), lengths)
    local = np.minimum(np.searchsorted(nodes, others), len(nodes) - 1)
    inside = nodes[local] == others
    return nodes, src[inside], local[inside], weights[inside]


def local_ppr(
    seeds: Mapping[int, float],
    row: Row,
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
    nodes, src, dst, weight = _subgraph(np.fromiter(positive, dtype=np.int64), row, depth)
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
