"""Graph signals of the lifecycle, computed within each owner: PageRank centrality and
cross-reference counts.

A memory's cross-reference count is the number of distinct other memories of its owner
with a REFERENCES edge to it (explicit links and the ones ingest derives from a rare
shared entity, an id or a subject). Mentioning the same knowledge-graph entity is not a
reference by itself: a speaker named by every turn would make every turn "referenced".

Every owner's memories form their own graph: an edge between two owners counts for
neither, the random walk restarts only among the owner's memories, and a dead end
hands its mass back to them alone. So nothing one owner can observe (a centrality, an
archivist decision, the hot set) depends on another owner's memories. The ranks of one
owner sum to 1 and equal networkx's ``pagerank`` over that owner's subgraph (checked in
the tests).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["grouped_pagerank", "grouped_reference_counts"]


def grouped_pagerank(
    groups: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    damping: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> np.ndarray:
    """PageRank of every node within its group (nodes are ``0..len(groups)-1``).

    ``groups`` holds an integer group code per node; ``src -> dst`` are directed edges
    (a repeated edge counts once more, as in a networkx ``MultiDiGraph``); edges between
    groups are ignored.

    >>> groups = np.array([0, 0, 1, 1])
    >>> ranks = grouped_pagerank(groups, np.array([0, 2, 0]), np.array([1, 3, 3]))
    >>> [round(float(r), 4) for r in ranks]
    [0.3509, 0.6491, 0.3509, 0.6491]
    """
    n = len(groups)
    if n == 0:
        return np.zeros(0)
    _, code = np.unique(groups, return_inverse=True)
    code = code.astype(np.int64)
    size = np.bincount(code).astype(float)
    keep = code[src] == code[dst] if len(src) else np.zeros(0, dtype=bool)
    src, dst = np.asarray(src)[keep], np.asarray(dst)[keep]
    out_degree = np.bincount(src, minlength=n).astype(float)
    weight = 1.0 / out_degree[src] if len(src) else np.zeros(0)
    # column-stochastic transition: rank flows from src to dst
    moves = sp.csr_matrix((weight, (dst, src)), shape=(n, n))
    dangling = out_degree == 0
    share = 1.0 / size[code]  # the uniform restart within each node's group
    ranks = share.copy()
    # Each group stops on its own convergence: how long one iterates never depends on
    # another group, so a group's ranks are the same whatever else the store holds.
    running = np.ones(len(size), dtype=bool)
    for _ in range(max_iter):
        lost = np.bincount(code, weights=np.where(dangling, ranks, 0.0), minlength=len(size))
        new = damping * (moves @ ranks + lost[code] * share) + (1.0 - damping) * share
        change = np.bincount(code, weights=np.abs(new - ranks), minlength=len(size))
        ranks = np.where(running[code], new, ranks)
        running &= change >= tol
        if not running.any():
            break
    return np.asarray(ranks / np.bincount(code, weights=ranks)[code])


def grouped_reference_counts(groups: np.ndarray, src: np.ndarray,
                             dst: np.ndarray) -> np.ndarray:
    """For every node, how many distinct other nodes of its group reference it.

    >>> grouped_reference_counts(np.array([0, 0, 1]), np.array([0, 2, 0, 0]),
    ...                          np.array([1, 1, 1, 1]))
    array([0, 1, 0])
    """
    n = len(groups)
    out = np.zeros(n, dtype=np.int64)
    if n == 0 or len(src) == 0:
        return out
    same = (groups[src] == groups[dst]) & (src != dst)
    pairs = np.unique(np.stack([src[same], dst[same]]), axis=1) if same.any() else None
    if pairs is not None:
        out += np.bincount(pairs[1], minlength=n)
    return out
