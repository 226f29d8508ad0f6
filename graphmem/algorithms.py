"""The algorithms behind recall, extraction and learning, by public names: what the
benchmarks and experiments (``eval/``) measure on their own, away from a store, and three
probes into an open ``MemoryStore`` for the ones that measure a store's insides.

The pure algorithms run on arrays and texts (no store, no I/O):

* recall's structures: ``RecallIndex`` (the in-memory index recall searches),
  ``BM25Index``, the word tokeniser ``tokenize``, and vector search's
  ``SignCodes``, ``exact_top`` and ``to_bfloat16``;
* extraction: ``extract`` (a text's entities, facts and times, as a stored memory
  derives them), the knowledge graph's parsers (``extract_facts``, ``extract_mentions``,
  ``parse_times``, ``normalize``, ``is_temporal_question``, ``query_window``) and the
  conversation gate's thresholds (``DUPLICATE``, ``NOW_SIMILAR``), its rules for what an
  assistant said (``assistant_statements``) and for corrections (``is_correction``,
  ``redoes``, ``correction_target`` over earlier ``Statement``, and what one leaves
  true of the statement it replaces: ``clause_spans``, ``still_true``);
* forget's matcher ``Mentions`` (where a forgotten text was copied, whatever its
  whitespace or case);
* learning from use: the ranker's and the forecast's training and metrics.

``Fact``, ``Mention`` and ``TimeMention`` here are what the parsers return (a stored
fact is ``graphmem.Fact``). These names follow the code they come from: they are for
measuring graphmem, not an interface kept stable across releases.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ._derive import extract
from ._extract._corrections import (
    NOW_SIMILAR,
    Statement,
    clause_spans,
    correction_target,
    is_correction,
    redoes,
    still_true,
)
from ._extract._rules import DUPLICATE, RuleExtractor, assistant_statements, extract_entities
from ._kg import (
    RELATION_PREDICATES,
    Fact,
    Mention,
    TimeMention,
    extract_facts,
    extract_mentions,
    is_temporal_question,
    normalize,
    parse_times,
    query_window,
)
from ._learn import (
    BASELINES,
    FEATURES,
    FORECAST_FEATURES,
    Candidates,
    Examples,
    History,
    RankerModel,
    RankingSample,
    channels_of,
    cuts,
    examples_at,
    fit_logistic,
    fit_ranker,
    rank_metrics,
    ranking_samples,
    stack,
)
from ._recall._bm25 import BM25Index
from ._recall._hits import LearnedInfo
from ._recall._index import RecallIndex
from ._recall._vectors import SignCodes, exact_top, to_bfloat16
from ._redact import Mentions
from ._text import tokenize

if TYPE_CHECKING:
    from ._engine import Engine
    from ._facade import MemoryStore

__all__ = [
    "BASELINES",
    "DUPLICATE",
    "FEATURES",
    "FORECAST_FEATURES",
    "NOW_SIMILAR",
    "RELATION_PREDICATES",
    "BM25Index",
    "Candidates",
    "Examples",
    "Fact",
    "History",
    "Mention",
    "Mentions",
    "RankerModel",
    "RankingSample",
    "RecallIndex",
    "RuleExtractor",
    "SignCodes",
    "Statement",
    "TimeMention",
    "assistant_statements",
    "channels_of",
    "clause_spans",
    "correction_target",
    "cuts",
    "engine_of",
    "exact_top",
    "examples_at",
    "extract",
    "extract_entities",
    "extract_facts",
    "extract_mentions",
    "fit_logistic",
    "fit_ranker",
    "is_correction",
    "is_temporal_question",
    "last_candidates",
    "normalize",
    "parse_times",
    "query_window",
    "rank_metrics",
    "ranking_samples",
    "redoes",
    "stack",
    "still_true",
    "timed_reranker",
    "to_bfloat16",
    "tokenize",
]


def engine_of(store: MemoryStore) -> Engine:
    """The engine ``store`` runs on (``graphmem.engines``), for a benchmark that measures
    the engine's own search or scans. Writing through it bypasses the store."""
    return store._ctx.engine


def last_candidates(store: MemoryStore) -> tuple[list[str], Candidates] | None:
    """The candidates of ``store``'s latest recall that ran ACT-R: their memory ids in the
    preset's order, and their features (what the ``learned`` preset would re-order)."""
    return store._recall.samples.last()


@contextmanager
def timed_reranker(store: MemoryStore, times: list[float]) -> Iterator[None]:
    """While inside, each ``learned`` recall's re-ranking step of ``store`` (building the
    candidates' feature matrix, then the ranker's re-ordering) appends its milliseconds
    to ``times``."""
    recall = store._recall
    original = recall.reranker
    if original is None:
        raise RuntimeError("the store has no reranker")

    def timed(candidates: Candidates, order: list[int], final: dict[int, float]
              ) -> tuple[list[int], dict[int, float], Mapping[int, LearnedInfo]]:
        start = time.perf_counter()
        candidates.features  # noqa: B018 - the lazy feature matrix is part of the step
        out = original(candidates, order, final)
        times.append((time.perf_counter() - start) * 1000)
        return out

    recall.reranker = timed
    try:
        yield
    finally:
        recall.reranker = original

