"""Feedback as training data: recent recalls keep their candidates' features, and a
feedback event on one of them carries what the ranker learns from.

The first feedback on a recall stores the feature rows of all its candidates (the
memories it could have ranked), later ones name the recall and their row. Training
reads the ``feedback`` events back: a recall with a memory marked useful is one
ranking example; its other candidates count as not useful.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .._models import LifecycleEvent
from .._recall._config import RecallConfig
from .._recall._hits import LearnedInfo
from .._time import new_event_id
from ._features import FEATURE_SET, FEATURES, Candidates

__all__ = ["RankingSample", "Reranker", "SampleLog", "ranking_samples"]

#: (candidates, the preset's order, its final scores) -> (order, final scores, per-hit
#: explanations): the learned ranker as recall calls it
Reranker = Callable[[Candidates, list[int], dict[int, float]],
                    tuple[list[int], dict[int, float], Mapping[int, LearnedInfo]]]
#: digits kept of each feature value in an event (features are O(1) numbers)
_DIGITS = 4


@dataclass
class _Recent:
    recall_id: str
    query: str
    preset: str
    channels: tuple[str, ...]
    ids: list[str]
    candidates: Candidates
    stored: bool = False


def channels_of(config: RecallConfig) -> tuple[str, ...]:
    """The channels a configuration runs, in a fixed order."""
    return tuple(sorted(c for c, w in config.weights.items() if w > 0))


class SampleLog:
    """The candidates of the last ``size`` recalls, until feedback names one of them."""

    def __init__(self, size: int) -> None:
        self._recent: collections.deque[_Recent] = collections.deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, query: str, config: RecallConfig, ids: list[str], candidates: Candidates,
            at: datetime) -> None:
        """Keep a recall made at ``at`` (its id is sortable like an event's)."""
        entry = _Recent(new_event_id(at), query, config.name, channels_of(config), ids,
                        candidates)
        with self._lock:
            self._recent.append(entry)

    def last(self) -> tuple[list[str], Candidates] | None:
        """The latest recall's candidates: their memory ids (in the preset's order) and
        features (None before any recall that ran ACT-R)."""
        with self._lock:
            if not self._recent:
                return None
            entry = self._recent[-1]
        return entry.ids, entry.candidates

    def metadata(self, memory_id: str, *, useful: bool, query: str | None) -> dict[str, Any]:
        """The metadata of a feedback event on ``memory_id``: the query, and when a recent
        recall (of ``query``, if given) had it among its candidates, that recall's id,
        the memory's row, and the first time, every candidate's features."""
        out: dict[str, Any] = {"useful": useful}
        if query is not None:
            out["query"] = query
        with self._lock:
            found = next((r for r in reversed(self._recent) if memory_id in r.ids
                          and (query is None or r.query == query)), None)
            if found is None:
                return out
            first, found.stored = not found.stored, True
        out.update(query=found.query, recall=found.recall_id, row=found.ids.index(memory_id),
                   preset=found.preset, channels=list(found.channels))
        if first:
            out["features"] = {
                "set": FEATURE_SET,
                "rows": np.round(found.candidates.features, _DIGITS).tolist(),
                "final": [round(f, 8) for f in found.candidates.final]}
        return out


@dataclass
class RankingSample:
    """One recall as a ranking example: candidates' features in the order recall gave
    them (row 0 first), which were useful, when, and under which channels."""

    recall_id: str
    at: datetime
    features: np.ndarray
    useful: np.ndarray
    channels: tuple[str, ...]
    ignored: set[int] = field(default_factory=set)

    @property
    def positives(self) -> int:
        return int(self.useful.sum())


def ranking_samples(events: Iterable[LifecycleEvent],
                    channels: Sequence[str] | None = None) -> list[RankingSample]:
    """The ranking examples in ``feedback`` events: recalls whose features were stored
    (with this ``FEATURE_SET``, under these ``channels`` when given) and with at least
    one candidate marked useful, oldest first. A memory marked useful and later not
    useful for the same recall counts as useful."""
    matrices: dict[str, tuple[datetime, np.ndarray, tuple[str, ...]]] = {}
    labels: dict[str, dict[int, bool]] = {}
    wanted = tuple(sorted(channels)) if channels is not None else None
    for event in events:
        meta = event.metadata
        recall, row = meta.get("recall"), meta.get("row")
        if not isinstance(recall, str) or not isinstance(row, int):
            continue
        stored = meta.get("features")
        if isinstance(stored, Mapping) and stored.get("set") == FEATURE_SET:
            rows = np.asarray(stored.get("rows"), dtype=np.float64)
            if rows.ndim == 2 and rows.shape[1] == len(FEATURES):
                found = tuple(str(c) for c in meta.get("channels") or ())
                matrices[recall] = (event.timestamp, rows, found)
        good = bool(meta.get("useful"))
        marks = labels.setdefault(recall, {})
        marks[row] = marks.get(row, False) or good
    out = []
    for recall, (at, rows, found) in matrices.items():
        if wanted is not None and found != wanted:
            continue
        marks = labels.get(recall, {})
        flags = np.zeros(len(rows), dtype=bool)
        for row, mark in marks.items():
            if 0 <= row < len(rows) and mark:
                flags[row] = True
        if flags.any():
            ignored = {r for r, mark in marks.items() if not mark and 0 <= r < len(rows)}
            out.append(RankingSample(recall, at, rows, flags, found, ignored))
    out.sort(key=lambda s: (s.at, s.recall_id))
    return out
