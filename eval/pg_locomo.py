"""LoCoMo recall on PostgreSQL against Kuzu, in the same run: ``python -m eval.pg_locomo``.

Each conversation is ingested twice, into a Kuzu store and into a PostgreSQL store (a
fresh schema), with the same embedder; every question is asked of both with each
preset. The store ranks through its in-process index on both engines, so the rankings
should agree: the table gives recall@10 per engine and preset, and how many rankings
are identical. Then the two channels answered by SQL inside PostgreSQL instead
(``PostgresEngine.search``): pgvector nearest neighbours, exact and through an HNSW
index, against the in-process vector channel; and PostgreSQL full-text ranking
(``ts_rank_cd``) against the in-process BM25 channel.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from graphmem import MemoryStore
from graphmem.algorithms import engine_of
from ingest.locomo import load_locomo

from ._pg import fresh_schema, postgres_server
from .experiment import ROWS, configs
from .locomo import DEPTH, build_store, dia_id_of, run_conversation
from .metrics import score_run
from .runs import _embedder, _limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None, help="locomo10.json")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="questions in all")
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    plan = _limit(load_locomo(args.path), args.limit)
    emb = _embedder(args.embedder)
    server = postgres_server(args.pg_url)
    presets = list(ROWS)
    recall: dict[tuple[str, str], list[float]] = defaultdict(list)
    same: dict[str, list[bool]] = defaultdict(list)
    sql: dict[str, list[float]] = defaultdict(list)
    sql_ms: dict[str, list[float]] = defaultdict(list)
    for conversation, asked in plan:
        emb.warm(q.question for _, q in asked)
        kuzu = build_store(conversation, emb)
        pg = build_store(conversation, emb, path=fresh_schema(server, "locomo"))
        try:
            by_engine = {name: run_conversation(store, conversation, configs(presets),
                                                questions=asked)
                         for name, store in (("kuzu", kuzu), ("postgres", pg))}
            for k_row, p_row in zip(by_engine["kuzu"], by_engine["postgres"], strict=True):
                recall[("kuzu", k_row.preset)].append(k_row.metrics["recall@10"])
                recall[("postgres", p_row.preset)].append(p_row.metrics["recall@10"])
                same[k_row.preset].append(k_row.ranking == p_row.ranking)
            _sql_channels(pg, asked, emb, sql, sql_ms)
        finally:
            kuzu.close()
            pg.close()
        print(f"{conversation.sample_id}: {len(asked)} questions")
    n = len(same[presets[0]])
    print(f"\nLoCoMo, {n} questions, embedder {emb.name}, "
          f"{time.perf_counter() - started:.0f} s")
    print("\n| preset | Kuzu R@10 | PostgreSQL R@10 | difference (pp) | identical rankings |")
    print("|---|---|---|---|---|")
    for preset in presets:
        k, p = (statistics.fmean(recall[(e, preset)]) for e in ("kuzu", "postgres"))
        print(f"| {preset} | {k:.4f} | {p:.4f} | {100 * (p - k):+.2f} | "
              f"{sum(same[preset])}/{len(same[preset])} |")
    print("\n| channel | R@10 | p50 ms |")
    print("|---|---|---|")
    for name in ("in-process vector (numpy, exact)", "pgvector exact", "pgvector HNSW",
                 "in-process BM25", "PostgreSQL full text (ts_rank_cd)"):
        timing = f"{statistics.median(sql_ms[name]):.1f}" if sql_ms.get(name) else "-"
        print(f"| {name} | {statistics.fmean(sql[name]):.4f} | {timing} |")


def _sql_channels(pg: MemoryStore, asked: list[Any], emb: Any,
                  sql: dict[str, list[float]], sql_ms: dict[str, list[float]]) -> None:
    """Each question's vector and text channel, in SQL and in process."""
    engine: Any = engine_of(pg)
    search = engine.search
    search.ensure_hnsw(emb.dim)
    for _, question in asked:
        text = question.question
        vector = emb.embed([text])[0]
        runs: dict[str, list[str]] = {}
        for name, how in (("pgvector exact", "exact"), ("pgvector HNSW", "hnsw"),
                          ("PostgreSQL full text (ts_rank_cd)", "text")):
            start = time.perf_counter()
            runs[name] = (search.text(text, DEPTH) if how == "text"
                          else search.nearest(vector, DEPTH, hnsw=how == "hnsw"))
            sql_ms[name].append((time.perf_counter() - start) * 1000)
        for name, preset in (("in-process vector (numpy, exact)", "vector"),
                             ("in-process BM25", "fulltext")):
            start = time.perf_counter()
            hits = pg.recall(text, k=DEPTH, preset=preset, record_access=False)
            sql_ms[name].append((time.perf_counter() - start) * 1000)
            runs[name] = [h.memory.id for h in hits]
        for name, ids in runs.items():
            ranking = [dia_id_of(i) for i in ids]
            sql[name].append(score_run(ranking, question.evidence)["recall@10"])


if __name__ == "__main__":
    assert Path(__file__).exists()
    main()
