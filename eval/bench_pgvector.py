"""The vector channel inside PostgreSQL: ``python -m eval.bench_pgvector``.

The 10k-memory store of ``eval.bench_server`` (MiniLM, five owners), restored into
PostgreSQL. Each query's 10 nearest memories, over the whole store and within one owner
(a fifth of it): pgvector exact (a scan), pgvector HNSW (cosine, default ``ef_search``
40) plain and with an iterative index scan (``hnsw.iterative_scan = strict_order``,
which keeps scanning the graph until ``k`` rows pass the owner filter), and that with
``ef_search`` 200. Prints recall@10
against an exact numpy oracle on the same vectors and the median time of each; the
baseline is the in-process scan the store's recall uses.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from graphmem import MemoryStore, Settings
from graphmem.algorithms import engine_of

from ._pg import fresh_schema, postgres_server
from .bench_recall import OWNERS, synthetic
from .bench_server import cached_store

STATUSES = ("active",)


def _timed(run: Callable[[], list[str]], ms: list[float]) -> list[str]:
    started = time.perf_counter()
    found = run()
    ms.append((time.perf_counter() - started) * 1000)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir())
                        / "graphmem-bench-server")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.size)
    records, _ = synthetic(args.size)
    texts = [" ".join(r["text"].split()[:6])
             for r in records[:: max(1, args.size // args.queries)]][: args.queries]
    url = fresh_schema(postgres_server(args.pg_url), "vectors")
    with tempfile.TemporaryDirectory() as scratch:
        with MemoryStore(cached, settings=Settings(), read_only=True) as source:
            source.backup(Path(scratch) / "backup")
        MemoryStore.restore_backup(Path(scratch) / "backup", url)
    with MemoryStore(url, settings=Settings()) as store:
        engine: Any = engine_of(store)
        scan = engine.scan(["id", "owner", "status", "vector"])
        table = scan.table.to_pydict()
        keep = np.flatnonzero(np.asarray(scan.has_vector)
                              & np.isin(table["status"], STATUSES))
        ids = np.asarray(table["id"], dtype=object)[keep]
        owners = np.asarray(table["owner"], dtype=object)[keep]
        matrix = scan.vectors[keep]
        matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        queries = store.embed(texts)
        search = engine.search
        started = time.perf_counter()
        search.ensure_hnsw(queries.shape[1])
        print(f"{len(ids)} active memories with vectors, {len(queries)} queries, k={args.k}; "
              f"HNSW index built in {time.perf_counter() - started:.1f} s")
        print("\n| scope | method | recall@10 vs exact | p50 ms |")
        print("|---|---|---|---|")
        for scope, owner in (("whole store", None), ("one owner (1/5)", OWNERS[0])):
            rows = np.ones(len(ids), dtype=bool) if owner is None else owners == owner
            scoped_ids, scoped = ids[rows], matrix[rows]

            def numpy_exact(q: np.ndarray, ids: Any = scoped_ids, m: Any = scoped) -> list[str]:
                return list(ids[np.argsort(-(m @ q), kind="stable")[: args.k]])

            def sql(hnsw: bool, iterative: bool, ef: int | None = None,
                    owner: str | None = owner) -> Callable[[np.ndarray], list[str]]:
                return lambda v: search.nearest(v, args.k, owner=owner, hnsw=hnsw,
                                                iterative=iterative, ef_search=ef,
                                                statuses=STATUSES)

            methods: dict[str, Callable[[np.ndarray], list[str]]] = {
                "in-process numpy (exact)": numpy_exact,
                "pgvector exact": sql(False, False),
                "pgvector HNSW": sql(True, False),
                "pgvector HNSW, iterative scan": sql(True, True),
                "pgvector HNSW, iterative scan, ef_search 200": sql(True, True, 200),
            }
            oracle = [set(numpy_exact(q)) for q in queries]
            for name, method in methods.items():
                ms: list[float] = []
                found = [_timed(partial(method, q), ms) for q in queries]
                recall = statistics.fmean(len(set(f) & o) / len(o)
                                          for f, o in zip(found, oracle, strict=True))
                print(f"| {scope} | {name} | {recall:.4f} | {statistics.median(ms):.1f} |")

if __name__ == "__main__":
    main()
