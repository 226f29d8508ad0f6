"""The learned ranker: a logistic model over recall's candidate features, trained on the
store's feedback, checked on the most recent feedback held back from training, and
applied by the ``learned`` preset only when it ranked that feedback better than the
preset's own order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .._recall._hits import LearnedInfo
from .._time import format_iso, parse_iso
from ._features import FEATURE_SET, FEATURES, Candidates
from ._linear import LinearModel, ModelFormatError, check_format, fit_logistic
from ._samples import RankingSample

__all__ = ["RANKER_FORMAT", "RankerModel", "fit_ranker", "rank_metrics", "rerank"]

RANKER_FORMAT = "graphmem.ranker/1"
#: fewer recalls with useful feedback than this: nothing to learn from
MIN_RECALLS = 20
#: the share of recalls (the most recent) held back to validate on, and its minimum
HELD_BACK = 0.25
MIN_HELD_BACK = 5
#: the cut-off of the validation metric (recall@K among the candidates)
K = 10
#: L2 strengths tried (scikit-learn's C: smaller is stronger); the one that ranks the
#: held-back feedback best is kept: one fixed C does not suit every amount of feedback
#: (C=0.01 left a store of 36 recalls too weak to learn a plain rule, while C=1 can
#: over-fit a hundred recalls of many candidates each).
CS = (1.0, 0.1, 0.01, 0.001)


@dataclass(frozen=True)
class RankerModel:
    """A trained ranker with what it was trained on and how it validated."""

    model: LinearModel
    trained: datetime
    recalls: int
    candidates: int
    positives: int
    channels: tuple[str, ...]
    validation: Mapping[str, Any] = field(default_factory=dict)
    validated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"format": RANKER_FORMAT, "feature_set": FEATURE_SET,
                **self.model.to_dict(), "trained": format_iso(self.trained),
                "recalls": self.recalls, "candidates": self.candidates,
                "positives": self.positives, "channels": list(self.channels),
                "validation": dict(self.validation), "validated": self.validated}

    @classmethod
    def from_dict(cls, data: Any) -> RankerModel:
        """Read a stored ranker; ``ModelFormatError`` for anything else."""
        data = check_format(data, RANKER_FORMAT, "ranker")
        if data.get("feature_set") != FEATURE_SET:
            raise ModelFormatError(f"the ranker uses feature set {data.get('feature_set')!r}; "
                                   f"this graphmem computes {FEATURE_SET!r}")
        try:
            trained = parse_iso(str(data["trained"]))
            recalls, candidates, positives = (int(data[k]) for k in
                                              ("recalls", "candidates", "positives"))
            channels = tuple(str(c) for c in data.get("channels") or ())
            validation = dict(data.get("validation") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"the ranker's description is malformed: {exc}") from None
        return cls(LinearModel.from_dict(data, FEATURES), trained, recalls, candidates,
                   positives, channels, validation, bool(data.get("validated")))


def rank_metrics(samples: Sequence[RankingSample], scores: Sequence[np.ndarray] | None
                 ) -> dict[str, float]:
    """Mean nDCG@K, recall@K and MRR of the useful candidates, ranked by ``scores``
    (higher first, ties in recall's order), or in recall's own order when ``scores`` is
    None."""
    ndcgs, recalls, rrs = [], [], []
    gains = 1.0 / np.log2(np.arange(2, K + 2))
    for n, sample in enumerate(samples):
        if scores is None:
            order = np.arange(len(sample.useful))
        else:
            order = np.argsort(-scores[n], kind="stable")
        useful = sample.useful[order].astype(bool)
        total = int(useful.sum())
        top = useful[:K]
        ndcgs.append(float(gains[: len(top)][top].sum()) / float(gains[: min(total, K)].sum()))
        recalls.append(float(top.sum()) / float(total))
        rrs.append(1.0 / (int(np.argmax(useful)) + 1))
    def mean(values: list[float]) -> float:
        return round(float(np.mean(values)), 4) if values else 0.0

    return {f"ndcg@{K}": mean(ndcgs), f"recall@{K}": mean(recalls), "mrr": mean(rrs),
            "recalls": len(samples)}


def _fit(samples: Sequence[RankingSample], *, c: float) -> LinearModel:
    x = np.vstack([s.features for s in samples])
    y = np.concatenate([s.useful for s in samples]).astype(int)
    # every recall weighs the same, however many candidates it had
    weight = np.concatenate([np.full(len(s.useful), 1.0 / len(s.useful)) for s in samples])
    return fit_logistic(x, y, FEATURES, c=c, sample_weight=weight * len(samples))


def fit_ranker(samples: Sequence[RankingSample], *, now: datetime, c: float | None = None
               ) -> RankerModel:
    """Train on all but the most recent recalls (with each of ``CS``, or with ``c``),
    validate on those against recall's own order, then train again on everything with
    the C that validated best. Raises ``ValueError`` with too few samples."""
    if len(samples) < MIN_RECALLS:
        raise ValueError(f"{len(samples)} recalls with a memory marked useful; the learned "
                         f"ranker needs at least {MIN_RECALLS}")
    ordered = sorted(samples, key=lambda s: (s.at, s.recall_id))
    held = max(MIN_HELD_BACK, math.ceil(HELD_BACK * len(ordered)))
    train, test = ordered[:-held], ordered[-held:]
    default = rank_metrics(test, None)
    tried = []
    for strength in (c,) if c is not None else CS:
        first = _fit(train, c=strength)
        found = rank_metrics(test, [first.logits(s.features) for s in test])
        tried.append(((found[f"ndcg@{K}"], found[f"recall@{K}"], strength), found))
    (_, _, c), learned = max(tried, key=lambda t: t[0])
    # nDCG@K weighs both what reaches the top K and how high: recall@K alone let a
    # model that lifted every useful memory by a few places, but moved one out of the
    # top K, count as worse
    better = (learned[f"ndcg@{K}"], learned[f"recall@{K}"]) > (default[f"ndcg@{K}"],
                                                                default[f"recall@{K}"])
    final = _fit(ordered, c=c)
    return RankerModel(
        model=final, trained=now, recalls=len(ordered),
        candidates=int(sum(len(s.useful) for s in ordered)),
        positives=int(sum(s.positives for s in ordered)), channels=ordered[0].channels,
        validation={"held_back": len(test), "trained_on": len(train), "default": default,
                    "learned": learned,
                    "metric": f"nDCG@{K} of useful candidates, then recall@{K}", "c": c},
        validated=bool(better))


def rerank(ranker: RankerModel, candidates: Candidates, order: list[int],
           final: dict[int, float]) -> tuple[list[int], dict[int, float], dict[int, LearnedInfo]]:
    """The candidates in the model's order (its probability as their final score), then
    the rest of ``order`` as it was (scores scaled below the last candidate's)."""
    if candidates.size == 0:
        return order, final, {}
    x = candidates.features
    logits = ranker.model.logits(x)
    probability = 1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50)))
    ranked = np.argsort(-logits, kind="stable")
    scored = set(candidates.positions)
    rest = [p for p in order if p not in scored]
    new_final = dict(final)
    info: dict[int, LearnedInfo] = {}
    for rank, row in enumerate(ranked, start=1):
        pos = candidates.positions[row]
        new_final[pos] = float(probability[row])
        info[pos] = LearnedInfo(probability=round(float(probability[row]), 6), rank=rank,
                                contributions=ranker.model.contributions(x[row]))
    if rest:
        floor = float(probability.min()) * 0.5
        top = max(final[p] for p in rest) or 1.0
        for pos in rest:
            new_final[pos] = floor * final[pos] / top
    return [candidates.positions[r] for r in ranked] + rest, new_final, info
