"""ACT-R activation of a memory from its history of use (Anderson & Lebiere 1998).

Base-level learning: ``B_i = ln(sum_j (t - t_j) ** -d)`` over the presentations ``t_j``
(creation and every access). When only the latest accesses are kept, the sum cannot be
computed; the approximation of the retrieval sidecar stands in:
``A_i = -d ln(age) + beta log1p(freq) + epsilon conf`` with ``age`` the memory's lifetime.
Times are in seconds; a change of unit only shifts every activation by the same constant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

__all__ = ["ActivationTerms", "activation", "activation_arrays", "activation_s",
           "approx_activation", "base_level"]

#: Ages below one second count as one second (the formula diverges at zero).
_MIN_AGE_S = 1.0


def base_level(ages_s: Sequence[float], *, d: float = 0.5) -> float:
    """``ln(sum_j age_j ** -d)``: the exact base-level activation from presentation ages.

    >>> round(base_level([3600.0], d=0.5), 4) == round(-0.5 * math.log(3600.0), 4)
    True
    """
    if not ages_s:
        raise ValueError("a memory has at least one presentation (its creation)")
    return math.log(sum(max(age, _MIN_AGE_S) ** -d for age in ages_s))


def approx_activation(age_s: float, frequency: int, confidence: float, *, d: float = 0.5,
                      beta: float = 1.0, epsilon: float = 0.5) -> float:
    """The sidecar's ``-d ln(age) + beta log1p(freq) + epsilon conf``.

    Examples
    --------
    A day-old memory used four times, held with confidence 0.8:

    >>> value = approx_activation(86400.0, 4, 0.8)
    >>> round(value, 4) == round(-0.5 * math.log(86400.0) + math.log(5) + 0.4, 4)
    True
    >>> approx_activation(86400.0, 40, 0.8) > value  # more use, more activation
    True
    """
    return -d * math.log(max(age_s, _MIN_AGE_S)) + beta * math.log1p(frequency) \
        + epsilon * confidence


@dataclass(frozen=True)
class ActivationTerms:
    """How one activation was computed, for explanations."""

    value: float
    formula: str  # "exact" or "approx"
    base_level: float
    age_s: float
    frequency: int
    confidence_term: float
    history: int


def activation_s(
    *,
    created: float,
    access_times: np.ndarray,
    access_count: int,
    confidence: float,
    now: float,
    d: float = 0.5,
    beta: float = 1.0,
    epsilon: float = 0.5,
) -> ActivationTerms:
    """``activation`` with times as POSIX seconds (the recall hot path, vectorised)."""
    age = max(now - created, _MIN_AGE_S)
    conf_term = epsilon * confidence
    if access_count <= len(access_times):
        if len(access_times):
            kept = access_times[access_times <= now]
            ages = np.maximum(now - kept, _MIN_AGE_S)
            base = math.log(age ** -d + float(np.sum(ages ** -d)))
        else:  # never accessed (most memories): the same value, without numpy's overhead
            base = math.log(age ** -d)
        formula = "exact"
    else:
        base = -d * math.log(age) + beta * math.log1p(access_count)
        formula = "approx"
    return ActivationTerms(value=base + conf_term, formula=formula, base_level=base, age_s=age,
                           frequency=access_count, confidence_term=conf_term,
                           history=len(access_times))


def activation(
    *,
    created: datetime,
    access_times: Sequence[datetime],
    access_count: int,
    confidence: float,
    now: datetime,
    d: float = 0.5,
    beta: float = 1.0,
    epsilon: float = 0.5,
) -> ActivationTerms:
    """Activation of one memory at ``now``: exact base level when the access history is
    complete (``access_count <= len(access_times)``), the sidecar's approximation when it
    was truncated; plus ``epsilon * confidence`` in both cases.

    Examples
    --------
    >>> from datetime import UTC, datetime, timedelta
    >>> now = datetime(2026, 7, 15, tzinfo=UTC)
    >>> created = now - timedelta(days=10)
    >>> used = (now - timedelta(days=2), now - timedelta(hours=1))
    >>> exact = activation(created=created, access_times=used, access_count=2,
    ...                    confidence=1.0, now=now)
    >>> exact.formula, exact.frequency, exact.confidence_term
    ('exact', 2, 0.5)
    >>> round(exact.base_level, 4) == round(base_level([864000.0, 172800.0, 3600.0]), 4)
    True

    With 40 uses but only two access times kept, the approximation stands in:

    >>> activation(created=created, access_times=used, access_count=40, confidence=1.0,
    ...            now=now).formula
    'approx'
    """
    return activation_s(created=created.timestamp(),
                        access_times=np.array([t.timestamp() for t in access_times]),
                        access_count=access_count, confidence=confidence, now=now.timestamp(),
                        d=d, beta=beta, epsilon=epsilon)


def activation_arrays(
    *,
    now: float,
    created: np.ndarray,
    access_count: np.ndarray,
    confidence: np.ndarray,
    history: np.ndarray,
    history_of: np.ndarray,
    d: float = 0.5,
    beta: float = 1.0,
    epsilon: float = 0.5,
) -> np.ndarray:
    """``activation_s`` for many memories at once (the lifecycle's hot set).

    ``history`` holds every memory's kept access times (POSIX seconds), flattened, and
    ``history_of`` the position of the memory each belongs to. A memory whose kept
    history covers its access count gets the exact base level, the others the
    approximation, as in ``activation_s``.

    >>> now = 1_000_000.0
    >>> values = activation_arrays(now=now, created=np.array([now - 3600.0, now - 7200.0]),
    ...     access_count=np.array([1, 5]), confidence=np.array([1.0, 0.5]),
    ...     history=np.array([now - 60.0]), history_of=np.array([0]))
    >>> one = activation_s(created=now - 3600.0, access_times=np.array([now - 60.0]),
    ...                    access_count=1, confidence=1.0, now=now).value
    >>> two = activation_s(created=now - 7200.0, access_times=np.array([]),
    ...                    access_count=5, confidence=0.5, now=now).value
    >>> bool(np.allclose(values, [one, two]))
    True
    """
    n = len(created)
    age = np.maximum(now - created, _MIN_AGE_S)
    kept = history <= now
    sums = np.bincount(history_of[kept], weights=np.maximum(now - history[kept], _MIN_AGE_S) ** -d,
                       minlength=n)
    lengths = np.bincount(history_of, minlength=n)
    approx = -d * np.log(age) + beta * np.log1p(access_count)
    exact = np.log(age ** -d + sums)
    base = np.where(access_count <= lengths, exact, approx)
    return np.asarray(base + epsilon * confidence)
