"""Forecasts of need: the probability that an active memory is needed (marked useful after
a recall) within the next ``horizon`` days, learned from the store's own history.

Everything is computed as of a cut ``t`` from what happened before it (accesses,
feedback, the version rows that say what a memory's importance, kind and status were),
and labelled by what happened in ``(t, t + horizon]``: a strict time split. The
baselines are scored on the same examples: ACT-R activation at ``t``, recency (time
since last use), frequency (uses so far), the archivist's rule (archive < maintain
or review < promote), the text's length (longer turns hold more to need), and the times
marked useful so far (what was needed tends to be needed again).

Access history is bounded (the latest ``access_history`` times per memory): where the
dropped accesses could fall in a label window of "use" the example is left out (feedback
events are all kept), and counts before a cut are the stored count less the accesses
kept after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from .._lifecycle._rules import ARCHIVE_TAGS, PROMOTE_TAGS, evaluate_arrays
from .._models import STATUS_CODE, Kind, LifecycleEvent, Status, Version
from .._recall._actr import activation_arrays
from .._settings import Settings
from .._text import tokenize
from .._time import format_iso, parse_iso
from ._linear import LinearModel, ModelFormatError, check_format, fit_logistic

__all__ = [
    "BASELINES",
    "FORECAST_FEATURES",
    "FORECAST_FORMAT",
    "Examples",
    "ForecastModel",
    "History",
    "examples_at",
    "fit_forecast",
    "forecast_now",
    "score_baselines",
]

FORECAST_FORMAT = "graphmem.forecast/1"
_DAY = 86400.0
_KINDS = tuple(k.value for k in Kind)
_KIND_CODE = {k: i for i, k in enumerate(_KINDS)}
_ACTIVE = STATUS_CODE["active"]
FORECAST_FEATURES: tuple[str, ...] = (
    "log_age_days", "log_idle_days", "never_used", "log_accesses", "log_accesses_7d",
    "log_accesses_30d", "log_useful", "log_ignored", "useful_rate", "activation",
    "importance", "confidence", *(f"kind_{k}" for k in _KINDS), "log_session_uses_30d",
    "log_session_idle_days", "log_words", "access_rate", "entity_recent", "query_recent",
)  # fmt: skip
_COL = {name: i for i, name in enumerate(FORECAST_FEATURES)}
Label = Literal["need", "use"]
#: the trivial scores a forecast must beat; "length" and "useful_so_far" need no model
#: and came close to it on a LoCoMo replay (eval/results/learning.md)
BASELINES = ("actr", "recency", "frequency", "rule", "length", "useful_so_far")
#: fewest examples (and of each class) a forecast is trained or validated on
MIN_EXAMPLES = 40
MIN_CLASS = 8


@dataclass
class History:
    """A store's memories and what happened to them, column-wise (times in seconds).

    Per memory: ``created``, the current ``status``, ``kind``, ``importance``,
    ``confidence``, access count, useful / ignored counts, ``tags``, ``session``. Flat
    arrays, each with the memory position it belongs to (``*_of``): kept access times,
    feedback times (useful / not), and version rows (time, importance, status, kind).
    """

    ids: list[str]
    created: np.ndarray
    status: np.ndarray
    kind: np.ndarray
    importance: np.ndarray
    confidence: np.ndarray
    access_count: np.ndarray
    useful_count: np.ndarray
    ignored_count: np.ndarray
    tags: list[tuple[str, ...]]
    session: np.ndarray
    access_t: np.ndarray
    access_of: np.ndarray
    useful_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    useful_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ignored_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ignored_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    version_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    version_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    version_importance: np.ndarray = field(default_factory=lambda: np.zeros(0))
    version_status: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    version_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: the words of each text (log), its terms (BM25 tokens), what it mentions (flat:
    #: memory position, entity code), and the queries feedback was given on (time, terms)
    words: np.ndarray = field(default_factory=lambda: np.zeros(0))
    postings: dict[str, np.ndarray] = field(default_factory=dict)
    mention_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    mention_entity: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    query_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    query_terms: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, rows: Iterable[Mapping[str, Any]], events: Iterable[LifecycleEvent] = (),
              versions: Iterable[Version] = (),
              mentions: Iterable[tuple[str, str]] = ()) -> History:
        """From memory rows (``Memory`` fields by name), ``feedback`` events, version
        rows and mentions (memory id, entity id). Forgotten memories are left out."""
        rows = [r for r in rows if _value(r["status"]) != Status.FORGOTTEN.value]
        ids = [str(r["id"]) for r in rows]
        pos = {memory_id: i for i, memory_id in enumerate(ids)}
        sessions: dict[Any, int] = {}
        access_t: list[float] = []
        access_of: list[int] = []
        for i, r in enumerate(rows):
            for at in r.get("access_times") or ():
                access_t.append(_seconds(at))
                access_of.append(i)
        h = cls(
            ids=ids,
            created=np.array([_seconds(r["created"]) for r in rows], dtype=float),
            status=np.array([STATUS_CODE[_value(r["status"])] for r in rows], dtype=np.int64),
            kind=np.array([_KIND_CODE[_value(r["kind"])] for r in rows], dtype=np.int64),
            importance=np.array([float(r.get("importance") or 0.0) for r in rows]),
            confidence=np.array([float(r.get("confidence") or 0.0) for r in rows]),
            access_count=np.array([int(r.get("access_count") or 0) for r in rows]),
            useful_count=np.array([int(r.get("useful_count") or 0) for r in rows]),
            ignored_count=np.array([int(r.get("ignored_count") or 0) for r in rows]),
            tags=[tuple(r.get("tags") or ()) for r in rows],
            session=np.array([sessions.setdefault(r.get("session"), len(sessions))
                              if r.get("session") is not None else -1 for r in rows],
                             dtype=np.int64),
            access_t=np.array(access_t, dtype=float),
            access_of=np.array(access_of, dtype=np.int64))
        good: list[tuple[float, int]] = []
        bad: list[tuple[float, int]] = []
        queries: dict[tuple[float, str], None] = {}
        for event in events:
            found = pos.get(event.memory_id)
            if found is None or event.event_type.value != "feedback":
                continue
            at = event.timestamp.timestamp()
            (good if event.metadata.get("useful") else bad).append((at, found))
            query = event.metadata.get("query")
            if isinstance(query, str) and query:
                queries[(at, query)] = None
        h.query_t = np.array([at for at, _ in queries], dtype=float)
        h.query_terms = [tuple(set(tokenize(q))) for _, q in queries]
        texts = [str(r.get("text") or "") for r in rows]
        h.words = np.log1p(np.array([len(t.split()) for t in texts], dtype=float))
        if queries:
            index: dict[str, list[int]] = {}
            for i, text in enumerate(texts):
                for term in set(tokenize(text)):
                    index.setdefault(term, []).append(i)
            h.postings = {t: np.array(p, dtype=np.int64) for t, p in index.items()}
        codes: dict[str, int] = {}
        pairs = [(pos[m], codes.setdefault(e, len(codes))) for m, e in mentions if m in pos]
        h.mention_of = np.array([p[0] for p in pairs], dtype=np.int64)
        h.mention_entity = np.array([p[1] for p in pairs], dtype=np.int64)
        h.useful_t, h.useful_of = _flat(good)
        h.ignored_t, h.ignored_of = _flat(bad)
        rows_v = sorted(((pos[v.memory_id], v.at.timestamp(), v) for v in versions
                         if v.memory_id in pos), key=lambda x: (x[0], x[1]))
        h.version_of = np.array([f[0] for f in rows_v], dtype=np.int64)
        h.version_t = np.array([f[1] for f in rows_v], dtype=float)
        h.version_importance = np.array([f[2].importance if f[2].importance is not None
                                         else math.nan for f in rows_v], dtype=float)
        h.version_status = np.array([STATUS_CODE[f[2].status.value] if f[2].status else -1
                                     for f in rows_v], dtype=np.int64)
        h.version_kind = np.array([_KIND_CODE[f[2].kind.value] if f[2].kind else -1
                                   for f in rows_v], dtype=np.int64)
        return h

    def first_use(self) -> float:
        """When the store's history starts (its first memory)."""
        return float(np.nanmin(self.created)) if self.n else math.nan


@dataclass
class Examples:
    """Memories active at cut ``t``: their positions, features, baseline scores and
    (for past cuts) whether each was used within the horizon."""

    t: float
    positions: np.ndarray
    features: np.ndarray
    baselines: dict[str, np.ndarray]
    used: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.positions)


def examples_at(h: History, t: float, *, horizon_days: float, settings: Settings,
                current: bool = False, label: Label = "need") -> Examples:
    """Features and baselines of the memories active at ``t``; labels when ``t`` is
    in the past (``current``: ``t`` is now, the memories' own fields are their state).

    ``label`` "need": marked useful within the horizon (the forecast's target);
    "use": recalled or marked useful (an access is not evidence of need, but the eval
    reports this target too)."""
    n = h.n
    horizon = horizon_days * _DAY
    if current:
        status, kind, importance = h.status, h.kind, h.importance
        useful, ignored = h.useful_count.astype(float), h.ignored_count.astype(float)
    else:
        status, kind, importance = _state_at(h, t)
        useful = np.bincount(h.useful_of[h.useful_t <= t], minlength=n).astype(float)
        ignored = np.bincount(h.ignored_of[h.ignored_t <= t], minlength=n).astype(float)
    eligible = (h.created <= t) & (status == _ACTIVE)
    before = h.access_t <= t
    kept_after = np.bincount(h.access_of[~before], minlength=n)
    kept = np.bincount(h.access_of, minlength=n)
    accesses = np.maximum(h.access_count - kept_after, 0)
    last = np.full(n, -np.inf)
    np.maximum.at(last, h.access_of[before], h.access_t[before])
    never = ~np.isfinite(last)
    last = np.where(never, h.created, last)
    recent7 = np.bincount(h.access_of[before & (h.access_t > t - 7 * _DAY)], minlength=n)
    recent30 = np.bincount(h.access_of[before & (h.access_t > t - 30 * _DAY)], minlength=n)
    activation = activation_arrays(now=t, created=h.created, access_count=accesses,
                                   confidence=h.confidence, history=h.access_t[before],
                                   history_of=h.access_of[before])
    x = np.zeros((n, len(FORECAST_FEATURES)))
    x[:, _COL["log_age_days"]] = np.log1p(np.maximum(t - h.created, 0.0) / _DAY)
    idle = np.maximum(t - last, 0.0) / _DAY
    x[:, _COL["log_idle_days"]] = np.log1p(idle)
    x[:, _COL["never_used"]] = never & (accesses == 0)
    x[:, _COL["log_accesses"]] = np.log1p(accesses)
    x[:, _COL["log_accesses_7d"]] = np.log1p(recent7)
    x[:, _COL["log_accesses_30d"]] = np.log1p(recent30)
    x[:, _COL["log_useful"]] = np.log1p(useful)
    x[:, _COL["log_ignored"]] = np.log1p(ignored)
    x[:, _COL["useful_rate"]] = (useful + 1.0) / (useful + ignored + 2.0)
    x[:, _COL["activation"]] = activation
    x[:, _COL["importance"]] = importance
    x[:, _COL["confidence"]] = h.confidence
    for name, code in _KIND_CODE.items():
        x[:, _COL[f"kind_{name}"]] = kind == code
    _session_features(x, h, t, before, recent30)
    x[:, _COL["log_words"]] = h.words
    x[:, _COL["access_rate"]] = accesses / np.maximum((t - h.created) / _DAY, 1.0)
    x[:, _COL["entity_recent"]] = _entity_recent(h, t)
    x[:, _COL["query_recent"]] = _query_recent(h, t)
    rule = _rule_scores(h, t, importance=importance, kind=kind, accesses=accesses,
                        settings=settings)
    positions = np.flatnonzero(eligible)
    baselines = {"actr": activation[positions], "recency": -idle[positions],
                 "frequency": accesses[positions].astype(float), "rule": rule[positions],
                 "length": h.words[positions], "useful_so_far": useful[positions]}
    out = Examples(t, positions, x[positions], baselines)
    if not current:
        used, known = _labels(h, t, horizon, kept, label)
        keep = known[positions]
        out = Examples(t, positions[keep], out.features[keep],
                       {k: v[keep] for k, v in baselines.items()}, used[positions][keep])
    return out


def _session_features(x: np.ndarray, h: History, t: float, before: np.ndarray,
                      recent30: np.ndarray) -> None:
    """How much the memory's session (its conversation) is in use: accesses of the
    session's other memories in the last 30 days, and days since any was used."""
    n = h.n
    has = h.session >= 0
    sessions = int(h.session.max()) + 1 if n and has.any() else 0
    if sessions == 0:
        x[:, _COL["log_session_idle_days"]] = x[:, _COL["log_age_days"]]
        return
    code = np.where(has, h.session, 0)
    per_session = np.bincount(code[has], weights=recent30[has], minlength=sessions)
    others = np.where(has, per_session[code] - recent30, 0.0)
    x[:, _COL["log_session_uses_30d"]] = np.log1p(np.maximum(others, 0.0))
    last = np.full(sessions, -np.inf)
    sel = before & has[h.access_of]
    np.maximum.at(last, code[h.access_of[sel]], h.access_t[sel])
    first = np.full(sessions, np.inf)
    np.minimum.at(first, code[has], h.created[has])
    since = np.where(np.isfinite(last), last, first)[code]
    idle = np.where(has, np.maximum(t - since, 0.0) / _DAY,
                    np.maximum(t - h.created, 0.0) / _DAY)
    x[:, _COL["log_session_idle_days"]] = np.log1p(idle)


def _entity_recent(h: History, t: float) -> np.ndarray:
    """The share of a memory's entities (weighted by how rare each is) that memories
    made in the 30 days before ``t`` mention: its topic is being talked about."""
    n = h.n
    out = np.zeros(n)
    if len(h.mention_of) == 0:
        return out
    exists = h.created[h.mention_of] <= t
    of, entity = h.mention_of[exists], h.mention_entity[exists]
    if len(of) == 0:
        return out
    entities = int(entity.max()) + 1
    df = np.bincount(entity, minlength=entities).astype(float)
    idf = np.log1p(max(n, 1) / np.maximum(df, 1.0))  # an entity no memory mentions yet: unused
    recent = h.created[of] > t - 30 * _DAY
    fresh = np.bincount(entity[recent], minlength=entities)
    # another memory than this one mentions it recently
    other = (fresh[entity] - recent.astype(int)) > 0
    total = np.bincount(of, weights=idf[entity], minlength=n)
    hit = np.bincount(of, weights=idf[entity] * other, minlength=n)
    return np.divide(hit, total, out=out, where=total > 0)


def _query_recent(h: History, t: float) -> np.ndarray:
    """The best share of a recent query's terms (IDF-weighted; queries of the 30 days
    before ``t``) that a memory's text holds: its topic is being asked about."""
    n = h.n
    best = np.zeros(n)
    chosen = np.flatnonzero((h.query_t <= t) & (h.query_t > t - 30 * _DAY))
    if len(chosen) == 0 or not h.postings:
        return best
    seen: set[tuple[str, ...]] = set()
    for q in chosen:
        terms = h.query_terms[int(q)]
        if terms in seen or not terms:
            continue
        seen.add(terms)
        score = np.zeros(n)
        total = 0.0
        for term in terms:
            posting = h.postings.get(term)
            df = len(posting) if posting is not None else 0
            idf = math.log1p(n / (df + 1.0))
            total += idf
            if posting is not None:
                score[posting] += idf
        if total > 0:
            np.maximum(best, score / total, out=best)
    return best


def _state_at(h: History, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Status, kind and importance of every memory at ``t`` from its version rows
    (the latest row at or before ``t``; a memory with none did not exist yet)."""
    n = h.n
    status = np.full(n, -1, dtype=np.int64)
    kind = h.kind.copy()
    importance = h.importance.copy()
    if len(h.version_t) == 0:
        return np.where(h.created <= t, h.status, -1), kind, importance
    # a memory without version rows (rows from elsewhere) has its current state
    unversioned = np.bincount(h.version_of, minlength=n) == 0
    status[unversioned] = np.where(h.created[unversioned] <= t, h.status[unversioned], -1)
    latest = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(h.version_t <= t)
    np.maximum.at(latest, h.version_of[rows], rows)  # rows are sorted by memory, time
    has = latest >= 0
    idx = latest[has]
    status[has] = h.version_status[idx]
    kind[has] = np.where(h.version_kind[idx] >= 0, h.version_kind[idx], kind[has])
    found = h.version_importance[idx]
    importance[has] = np.where(np.isnan(found), importance[has], found)
    return status, kind, importance


def _labels(h: History, t: float, horizon: float, kept: np.ndarray, label: Label
            ) -> tuple[np.ndarray, np.ndarray]:
    """Needed (marked useful) within ``(t, t + horizon]``, or with ``label`` "use"
    recalled or marked useful; and whether that is known (feedback events are all
    kept; an access dropped from a bounded history could have fallen in the window)."""
    n = h.n
    end = t + horizon
    good = (h.useful_t > t) & (h.useful_t <= end)
    used = np.bincount(h.useful_of[good], minlength=n) > 0
    if label == "need":
        return used, np.ones(n, dtype=bool)
    inside = (h.access_t > t) & (h.access_t <= end)
    used |= np.bincount(h.access_of[inside], minlength=n) > 0
    oldest = np.full(n, np.inf)
    np.minimum.at(oldest, h.access_of, h.access_t)
    truncated = h.access_count > kept
    known = used | ~truncated | (oldest <= t)
    return used, known


def _rule_scores(h: History, t: float, *, importance: np.ndarray, kind: np.ndarray,
                 accesses: np.ndarray, settings: Settings) -> np.ndarray:
    """The archivist's decision as a score: archive 0, maintain or review 1, promote 2."""
    episodic = kind == _KIND_CODE[Kind.EPISODIC.value]
    masks = evaluate_arrays(
        importance=importance, age_in_days=np.maximum(t - h.created, 0.0) / _DAY,
        access_count=accesses, episodic=episodic,
        promote_tag=np.array([any(x in PROMOTE_TAGS for x in tags) for tags in h.tags],
                             dtype=bool),
        archive_tag=np.array([any(x in ARCHIVE_TAGS for x in tags) for tags in h.tags],
                             dtype=bool),
        cross_reference_count=np.zeros(h.n, dtype=np.int64), settings=settings)
    return np.where(masks["archive"], 0.0, np.where(masks["promote"], 2.0, 1.0))


# -- the model ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ForecastModel:
    """A trained forecast with what it was trained on and how it validated."""

    model: LinearModel
    trained: datetime
    horizon_days: float
    examples: int
    positives: int
    validation: Mapping[str, Any] = field(default_factory=dict)
    validated: bool = False

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return self.model.probabilities(x)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORECAST_FORMAT, **self.model.to_dict(),
                "trained": format_iso(self.trained), "horizon_days": self.horizon_days,
                "examples": self.examples, "positives": self.positives,
                "validation": dict(self.validation), "validated": self.validated}

    @classmethod
    def from_dict(cls, data: Any) -> ForecastModel:
        """Read a stored forecast; ``ModelFormatError`` for anything else."""
        data = check_format(data, FORECAST_FORMAT, "forecast")
        try:
            horizon = float(data["horizon_days"])
            if not math.isfinite(horizon) or horizon <= 0:
                raise ValueError("horizon_days must be positive")
            return cls(LinearModel.from_dict(data, FORECAST_FEATURES),
                       parse_iso(str(data["trained"])), horizon, int(data["examples"]),
                       int(data["positives"]), dict(data.get("validation") or {}),
                       bool(data.get("validated")))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ModelFormatError):
                raise
            raise ModelFormatError(f"the forecast's description is malformed: {exc}") from None


def stack(parts: Sequence[Examples]) -> Examples:
    return Examples(
        t=parts[-1].t if parts else math.nan,
        positions=np.concatenate([p.positions for p in parts]) if parts else np.zeros(0),
        features=np.vstack([p.features for p in parts]) if parts
        else np.zeros((0, len(FORECAST_FEATURES))),
        baselines={b: np.concatenate([p.baselines[b] for p in parts]) if parts
                   else np.zeros(0) for b in BASELINES},
        used=np.concatenate([p.used for p in parts if p.used is not None]) if parts
        else np.zeros(0, dtype=bool))


def _enough(e: Examples) -> bool:
    used = e.used if e.used is not None else np.zeros(0, dtype=bool)
    return e.size >= MIN_EXAMPLES and int(used.sum()) >= MIN_CLASS \
        and int((~used).sum()) >= MIN_CLASS


def score_baselines(train: Examples, test: Examples, model: LinearModel | None
                    ) -> dict[str, dict[str, float]]:
    """ROC AUC and Brier score on ``test`` of the model and of every baseline (each
    baseline's score mapped to a probability by a logistic fit on ``train``)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score

    assert test.used is not None and train.used is not None
    auc: dict[str, float] = {}
    brier: dict[str, float] = {}
    if model is not None:
        p = model.probabilities(test.features)
        auc["forecast"] = round(float(roc_auc_score(test.used, p)), 4)
        brier["forecast"] = round(float(brier_score_loss(test.used, p)), 4)
    for name in BASELINES:
        score = test.baselines[name]
        auc[name] = round(float(roc_auc_score(test.used, score)), 4)
        platt = LogisticRegression(max_iter=1000)
        fit_x = train.baselines[name].reshape(-1, 1)
        if len(np.unique(fit_x)) > 1:
            platt.fit(fit_x, train.used)
            p = platt.predict_proba(score.reshape(-1, 1))[:, 1]
        else:
            p = np.full(len(score), float(train.used.mean()))
        brier[name] = round(float(brier_score_loss(test.used, p)), 4)
    base_rate = float(train.used.mean())
    brier["base_rate"] = round(float(brier_score_loss(
        test.used, np.full(test.size, base_rate))), 4)
    return {"auc": auc, "brier": brier}


def cuts(h: History, *, end: float, horizon_days: float) -> list[float]:
    """Cut times, every half horizon back from ``end``, while a cut has some history
    before it (a horizon after the first memory)."""
    step = horizon_days * _DAY / 2
    start = h.first_use() + horizon_days * _DAY / 2
    out = []
    t = end
    while t >= start:
        out.append(t)
        t -= step
    return sorted(out)


def fit_forecast(h: History, *, now: datetime, horizon_days: float, settings: Settings
                 ) -> ForecastModel:
    """Validate on the last horizon (cut ``now - horizon``, labels up to ``now``) a model
    trained on earlier cuts whose label windows end by that cut; then train on every
    cut. Raises ``ValueError`` when the history is too short or too uniform."""
    if not math.isfinite(horizon_days) or horizon_days <= 0:
        raise ValueError("the horizon must be a positive number of days")
    horizon = horizon_days * _DAY
    held_cut = now.timestamp() - horizon
    earlier = cuts(h, end=held_cut - horizon, horizon_days=horizon_days)
    span = (now.timestamp() - h.first_use()) / _DAY if h.n else 0.0
    need = (f"the forecast needs {horizon_days * 2.5:g} days of use or more with "
            f"{MIN_EXAMPLES}+ memories, some marked useful and some not (this store's "
            f"history spans {max(span, 0):.0f} days)")
    train = stack([examples_at(h, t, horizon_days=horizon_days, settings=settings)
                    for t in earlier])
    test = examples_at(h, held_cut, horizon_days=horizon_days, settings=settings)
    if not earlier or not _enough(train) or not _enough(test):
        if span >= horizon_days * 2.5:  # long enough: say what the windows lack
            short = train if earlier and not _enough(train) else test
            used = short.used if short.used is not None else np.zeros(0, dtype=bool)
            need += (f": long enough, but of its {short.size} "
                     f"{'training' if short is train else 'validation'} examples (a memory "
                     f"at a cut) {int(used.sum())} were used in the {horizon_days:g} days "
                     f"after and {int((~used).sum())} not; {MIN_EXAMPLES} are needed, "
                     f"{MIN_CLASS} of each)")
        raise ValueError(need)
    assert train.used is not None
    first = fit_logistic(train.features, train.used.astype(int), FORECAST_FEATURES,
                         balanced=False)
    scores = score_baselines(train, test, first)
    auc = scores["auc"]
    validated = all(auc["forecast"] > auc[b] for b in BASELINES)
    everything = stack([*(examples_at(h, t, horizon_days=horizon_days, settings=settings)
                           for t in earlier), test])
    assert everything.used is not None
    final = fit_logistic(everything.features, everything.used.astype(int),
                         FORECAST_FEATURES, balanced=False)
    return ForecastModel(
        model=final, trained=now, horizon_days=horizon_days, examples=everything.size,
        positives=int(everything.used.sum()),
        validation={"held_back": test.size, "held_back_used": int(test.used.sum())
                    if test.used is not None else 0, "trained_on": train.size,
                    "cut": format_iso(datetime.fromtimestamp(held_cut, UTC)),
                    **scores},
        validated=validated)


def forecast_now(model: ForecastModel, h: History, now: datetime, settings: Settings
                 ) -> dict[str, float]:
    """Memory id -> probability of use within the model's horizon, for every memory
    active now."""
    e = examples_at(h, now.timestamp(), horizon_days=model.horizon_days, settings=settings,
                    current=True)
    p = model.probabilities(e.features)
    return {h.ids[int(i)]: float(v) for i, v in zip(e.positions, p, strict=True)}


def _flat(pairs: Sequence[tuple[float, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([p[0] for p in pairs], dtype=float),
            np.array([p[1] for p in pairs], dtype=np.int64))


def _value(value: Any) -> str:
    return str(getattr(value, "value", value))


def _seconds(value: Any) -> float:
    if value is None:
        return math.nan
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return float(value)
