"""Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["competition_ranks", "reciprocal_rank_fusion", "rrf_from_ranks"]

K = TypeVar("K", bound=Hashable)


def competition_ranks(scored: Sequence[tuple[K, float]]) -> dict[K, int]:
    """Ranks from 1 of a best-first list, equal scores sharing a rank ("1224" ranking), so
    that an arbitrary order among ties does not become a difference in fused scores.

    >>> competition_ranks([("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)])
    {'a': 1, 'b': 2, 'c': 2, 'd': 4}
    """
    ranks: dict[K, int] = {}
    previous: float | None = None
    rank = 0
    for position, (item, score) in enumerate(scored, start=1):
        if score != previous:
            rank, previous = position, score
        ranks[item] = rank
    return ranks


def rrf_from_ranks(
    ranks: Mapping[str, Mapping[K, int]],
    *,
    weights: Mapping[str, float] | None = None,
    k: float = 60.0,
) -> dict[K, float]:
    """``sum_c w_c / (k + rank_c(d))`` from explicit ranks (channel -> item -> rank).

    Items tied in a channel share its rank, so they get the same score from it; a
    channel of weight 0 adds nothing.

    >>> scores = rrf_from_ranks({"fulltext": {"a": 1, "b": 1, "c": 3}, "vector": {"c": 1}},
    ...                         weights={"fulltext": 1.0, "vector": 0.5}, k=60)
    >>> scores["a"] == scores["b"] == 1 / 61
    True
    >>> round(scores["c"], 6) == round(1 / 63 + 0.5 / 61, 6)
    True
    >>> rrf_from_ranks({"graph": {"a": 1}}, weights={"graph": 0.0})
    {}
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[K, float] = {}
    for channel, table in ranks.items():
        weight = 1.0 if weights is None else float(weights.get(channel, 1.0))
        if weight == 0.0:
            continue
        for item, rank in table.items():
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[K]],
    *,
    weights: Mapping[str, float] | None = None,
    k: float = 60.0,
) -> dict[K, float]:
    """Fuse ranked lists: ``score(d) = sum_c w_c / (k + rank_c(d))``, ranks from 1.

    Parameters
    ----------
    rankings : mapping of channel name -> items, best first
    weights : channel name -> weight (1.0 for channels not listed)
    k : the RRF constant; larger k flattens the difference between ranks

    Returns
    -------
    dict of item -> fused score (unsorted). An item missing from a channel gets nothing
    from it.

    Examples
    --------
    >>> scores = reciprocal_rank_fusion({"a": ["x", "y"], "b": ["y"]}, k=60)
    >>> round(scores["y"], 6) == round(1 / 62 + 1 / 61, 6)
    True
    """
    return rrf_from_ranks(
        {channel: {item: rank for rank, item in reversed(list(enumerate(ranking, start=1)))}
         for channel, ranking in rankings.items()},
        weights=weights, k=k)
