"""What ``learn`` reports: each model trained, what it was trained on, how it validated."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._time import format_iso

__all__ = ["ForecastInfo", "LearnReport", "RankerInfo"]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True)


class RankerInfo(_Value):
    """The learned ranker: trained when, on how many recalls (candidates, useful ones),
    its validation on the most recent recalls held back against the ``default`` order,
    whether the ``learned`` preset uses it, and its largest standardised weights."""

    trained: datetime
    recalls: int
    candidates: int
    positives: int
    validation: dict[str, Any]
    validated: bool
    top_features: list[tuple[str, float]]


class ForecastInfo(_Value):
    """The forecast of need: the probability that an active memory is needed (marked
    useful after a recall) within ``horizon_days``; trained on the store's history before a cut,
    validated on what happened after it, beside ACT-R, recency, frequency, the rule, the
    text's length and the times marked useful so far."""

    trained: datetime
    horizon_days: float
    examples: int
    positives: int
    validation: dict[str, Any]
    validated: bool
    top_features: list[tuple[str, float]]


class LearnReport(_Value):
    """The models ``learn`` trained (None: not trained, ``notes`` say why)."""

    ranker: RankerInfo | None = None
    forecast: ForecastInfo | None = None
    notes: list[str] = []

    def lines(self) -> list[str]:
        """A human reading of the report."""
        out: list[str] = []
        if self.ranker is not None:
            r = self.ranker
            v = r.validation
            out += [f"ranker: trained {format_iso(r.trained)} on {r.recalls} recalls "
                    f"({r.candidates} candidates, {r.positives} useful)",
                    f"  validation on the {v.get('held_back')} latest recalls: "
                    f"nDCG@10 {v.get('learned', {}).get('ndcg@10')} learned vs "
                    f"{v.get('default', {}).get('ndcg@10')} default, "
                    f"recall@10 {v.get('learned', {}).get('recall@10')} vs "
                    f"{v.get('default', {}).get('recall@10')} default, MRR "
                    f"{v.get('learned', {}).get('mrr')} vs {v.get('default', {}).get('mrr')}",
                    "  " + ("used by the `learned` preset" if r.validated else
                            "not used: it did not rank the held-back recalls better than "
                            "`default` (the `learned` preset ranks as `default`)"),
                    "  top features: " + ", ".join(f"{n} {w:+.2f}"
                                                   for n, w in r.top_features[:6])]
        if self.forecast is not None:
            f = self.forecast
            v = f.validation
            auc = v.get("auc", {})
            out += [f"forecast: trained {format_iso(f.trained)} on {f.examples} examples "
                    f"({f.positives} needed within {f.horizon_days:g} days)",
                    "  validation AUC: " + ", ".join(f"{k} {val}" for k, val in auc.items()),
                    "  " + ("shown by the lifecycle; strong contradictions go to review"
                            if f.validated else
                            "not used: it did not beat every baseline on the held-back "
                            "period (the lifecycle keeps the rule alone)"),
                    "  top features: " + ", ".join(f"{n} {w:+.2f}"
                                                   for n, w in f.top_features[:6])]
        out += [f"note: {n}" for n in self.notes]
        return out
