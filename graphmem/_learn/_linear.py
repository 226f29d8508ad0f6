"""A logistic model kept as plain numbers: standardisation, coefficients, intercept.

Stored as JSON inside the store, never pickled: a store file from someone else holds
numbers to read, not code to run. Reading checks the format name, the feature names,
the lengths and that every number is finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LinearModel", "ModelFormatError", "check_format", "fit_logistic"]


class ModelFormatError(ValueError):
    """A stored model this graphmem does not read."""


def check_format(data: Any, expected: str, what: str) -> Mapping[str, Any]:
    """``data`` as a mapping when it declares format ``expected``; else
    ``ModelFormatError`` naming ``what`` was expected and what was found."""
    if not isinstance(data, Mapping) or data.get("format") != expected:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise ModelFormatError(f"not a graphmem {what} of format {expected} "
                               f"(found {found!r})")
    return data


@dataclass(frozen=True)
class LinearModel:
    """``p = 1 / (1 + exp(-(coef . (x - mean) / scale + intercept)))``.

    Examples
    --------
    >>> model = LinearModel(("a", "b"), np.zeros(2), np.ones(2), np.array([2.0, -1.0]), 0.5)
    >>> model.logits(np.array([[1.0, 1.0]])).tolist()
    [1.5]
    >>> model.contributions(np.array([1.0, 1.0]), top=1)
    (('a', 2.0),)
    >>> LinearModel.from_dict(model.to_dict(), ("a", "b")) == model
    True
    """

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LinearModel) and self.features == other.features
                and self.intercept == other.intercept
                and all(np.array_equal(a, b) for a, b in
                        ((self.mean, other.mean), (self.scale, other.scale),
                         (self.coef, other.coef))))

    __hash__ = None  # type: ignore[assignment]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(((x - self.mean) / self.scale) @ self.coef + self.intercept)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(self.logits(x), -50, 50))))

    def contributions(self, row: np.ndarray, *, top: int = 3) -> tuple[tuple[str, float], ...]:
        """The ``top`` terms of one row's log-odds, largest magnitude first."""
        terms = self.coef * (row - self.mean) / self.scale
        order = np.argsort(-np.abs(terms), kind="stable")[:top]
        return tuple((self.features[i], round(float(terms[i]), 4)) for i in order
                     if terms[i] != 0)

    def weights(self) -> list[tuple[str, float]]:
        """Standardised coefficients, largest magnitude first (what the model learned)."""
        order = np.argsort(-np.abs(self.coef), kind="stable")
        return [(self.features[i], round(float(self.coef[i]), 4)) for i in order]

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": _floats(self.mean),
                "scale": _floats(self.scale), "coef": _floats(self.coef),
                "intercept": float(self.intercept)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], features: Sequence[str]) -> LinearModel:
        """Read a model, checking it against the ``features`` this graphmem computes."""
        names = data.get("features")
        if list(names or ()) != list(features):
            raise ModelFormatError("the model was trained on other features than this "
                                   "graphmem computes")
        arrays = []
        for key in ("mean", "scale", "coef"):
            values = data.get(key)
            if not isinstance(values, list) or len(values) != len(features) or not all(
                    isinstance(v, int | float) and math.isfinite(v) for v in values):
                raise ModelFormatError(f"the model's {key} is not {len(features)} numbers")
            arrays.append(np.array(values, dtype=np.float64))
        intercept = data.get("intercept")
        if not isinstance(intercept, int | float) or not math.isfinite(intercept):
            raise ModelFormatError("the model's intercept is not a number")
        if np.any(arrays[1] <= 0):
            raise ModelFormatError("the model's scales must be positive")
        return cls(tuple(features), arrays[0], arrays[1], arrays[2], float(intercept))


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], *, c: float = 1.0,
                 balanced: bool = True, sample_weight: np.ndarray | None = None
                 ) -> LinearModel:
    """L2-regularised logistic regression on standardised features (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression  # ~0.5 s to import: only here

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = LogisticRegression(C=c, class_weight="balanced" if balanced else None,
                               max_iter=2000)
    model.fit((x - mean) / scale, y, sample_weight=sample_weight)
    return LinearModel(tuple(features), mean, scale, model.coef_[0].astype(np.float64),
                       float(model.intercept_[0]))


def _floats(values: np.ndarray) -> list[float]:
    return [float(v) for v in values]
