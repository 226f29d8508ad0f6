"""Retrieval metrics as pure functions over a ranking and a set of relevant ids.

Inputs are never mutated. Relevance is binary.

* ``recall_at_k``: the fraction of relevant ids in the top k (LoCoMo's official measure).
* ``recall_any_at_k``: 1 if any relevant id is in the top k.
* ``recall_all_at_k``: 1 if every relevant id is in the top k (LongMemEval's Recall).
* ``mrr``: 1 / rank of the first relevant id (0 when none is retrieved).
* ``ndcg_at_k``: DCG of the top k over the ideal DCG, gains 1 / log2(rank + 1).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

__all__ = ["average", "dedupe", "mean", "mrr", "ndcg_at_k", "recall_all_at_k", "recall_any_at_k",
           "recall_at_k", "score_run"]


def _check(k: int) -> None:
    if k < 1:
        raise ValueError("k must be >= 1")


def recall_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """The fraction of ``relevant`` found in the top ``k``.

    >>> recall_at_k(["a", "b", "c"], {"b", "z"}, 2)
    0.5
    """
    _check(k)
    if not relevant:
        raise ValueError("a query needs at least one relevant id")
    top = set(ranking[:k])
    return sum(1 for r in set(relevant) if r in top) / len(set(relevant))


def recall_any_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if any relevant id is in the top ``k``.

    >>> recall_any_at_k(["a", "b", "c"], {"c", "z"}, 2), recall_any_at_k(["a", "c"], {"c"}, 2)
    (0.0, 1.0)
    """
    _check(k)
    return 1.0 if set(ranking[:k]) & set(relevant) else 0.0


def recall_all_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if every relevant id is in the top ``k`` (LongMemEval's Recall@k).

    >>> recall_all_at_k(["a", "b", "c"], {"a", "c"}, 2), recall_all_at_k(["a", "c"], {"a", "c"}, 2)
    (0.0, 1.0)
    """
    _check(k)
    return 1.0 if set(relevant) <= set(ranking[:k]) else 0.0


def mrr(ranking: Sequence[str], relevant: Collection[str]) -> float:
    """The reciprocal rank of the first relevant id (0.0 when none is retrieved).

    >>> mrr(["x", "y", "a", "b"], {"a", "b"}), mrr(["x"], {"a"})
    (0.3333333333333333, 0.0)
    """
    wanted = set(relevant)
    for rank, item in enumerate(ranking, start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain of the top ``k`` (binary gains).

    >>> round(ndcg_at_k(["x", "a"], {"a"}, 10), 4)
    0.6309
    """
    _check(k)
    wanted = set(relevant)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranking[:k], start=1)
              if item in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal if ideal else 0.0


def dedupe(ranking: Sequence[str]) -> list[str]:
    """First occurrences only, order kept (for session-level rankings built from turns).

    >>> dedupe(["s2", "s1", "s2", "s3", "s1"])
    ['s2', 's1', 's3']
    """
    return list(dict.fromkeys(ranking))


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def score_run(ranking: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    """Every metric of the experiment table for one query.

    >>> scores = score_run(["x", "a", "y", "b"], {"a", "b", "c"})
    >>> scores["recall@5"], scores["recall_any@5"], scores["recall_all@10"], scores["mrr"]
    (0.6666666666666666, 1.0, 0.0, 0.5)
    """
    return {
        "recall@5": recall_at_k(ranking, relevant, 5),
        "recall@10": recall_at_k(ranking, relevant, 10),
        "recall@20": recall_at_k(ranking, relevant, 20),
        "recall_any@5": recall_any_at_k(ranking, relevant, 5),
        "recall_any@10": recall_any_at_k(ranking, relevant, 10),
        "recall_all@5": recall_all_at_k(ranking, relevant, 5),
        "recall_all@10": recall_all_at_k(ranking, relevant, 10),
        "mrr": mrr(ranking, relevant),
        "ndcg@10": ndcg_at_k(ranking, relevant, 10),
    }


def average(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of each metric over queries.

    >>> average([{"mrr": 1.0, "recall@5": 0.5}, {"mrr": 0.5, "recall@5": 0.0}])
    {'mrr': 0.75, 'recall@5': 0.25}
    >>> average([])
    {}
    """
    if not rows:
        return {}
    return {key: mean([row[key] for row in rows]) for key in rows[0]}

