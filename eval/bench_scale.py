"""A million memories: ``python -m eval.bench_scale [--n 1000000]``.

Builds (once, then reuses from ``--cache``) a store of ``n`` memories and about ``3n``
edges: Zipf word-salad texts from the model's vocabulary (as ``eval.bench_recall``), five
owners, sessions of ten joined by CO_OCCURS, two or three REFERENCES each. The vectors
are **synthetic**: embedding a million texts with MiniLM takes hours on 2 cores, so each
text's vector is the normalised sum of real MiniLM vectors of its words (each word
embedded once). Queries are real: 3-6 words of a stored text, embedded by the real
encoder (``minilm:onnx``, fp32), against those vectors. Then, in a fresh process:

* opening and the first recall (the recall index is built then) and RSS after it;
* ``recall`` p50 / p95 per preset, each recall timed beside the embedding of its query;
  from 100k memories on the vector channel searches sign bits (as the store does),
  and ``vector`` and ``default`` run again with exact vectors (the baseline);
* ``--churn`` more recalls that record access (ten rows written each), and RSS after;
* vector search alone: exact float32 (the baseline) against ``graphmem.algorithms`` (sign codes)
  (sign bits, Hamming top candidates, exact re-scoring): p50, and recall@10 and @100
  (what the vector channel takes) against exact;
* BM25: building the index over every text in bulk (time, memory) and a query's p50;
* ``run_lifecycle(apply=True)`` on a copy of the store, in a process of its own (its
  time, RSS and peak RSS).

RSS is printed after the index build and after the presets, with the peak so far: what
the store itself held. The vector and BM25 baselines after that hold copies of their own
(a float32 matrix of every vector: 1.5 GB at 1M), so the process's final peak is theirs.

Targets at 1M on a 2-core machine: ``default`` p50 <= 60 ms, lifecycle apply <= 60 s,
RSS <= 4 GB; at 100k ``default`` p50 <= 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from graphmem import Edge, Embedder, MemoryStore, Settings, embedder_from_spec
from graphmem.algorithms import RecallIndex

from ._fresh import store_copy
from .bench_recall import (
    KINDS,
    OWNERS,
    percentile,
    preset_runs,
    sample_queries,
    time_recalls,
    vector_search,
    vocabulary,
)

QUERY_SPEC = "minilm:onnx"


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return _status_mb("VmRSS:")


def peak_rss_mb() -> float:
    """The peak RSS of this process's memory (``VmHWM``: unlike ``ru_maxrss``, a child
    does not inherit its parent's)."""
    return _status_mb("VmHWM:")


class BagOfWordVectors:
    """MiniLM's name and fingerprint, real vectors for small calls (queries, probes),
    and for bulk calls the normalised sum of each word's real MiniLM vector."""

    def __init__(self, real: Embedder, words: Sequence[str], cache: Path) -> None:
        self.real = real
        store = cache / f"word-vectors-{len(words)}.npy"
        if store.exists():
            table = np.load(store)
        else:
            print(f"  embedding {len(words)} words once with {real.spec} ...")
            table = real.embed(list(words))
            np.save(store, table)
        self.table = table
        self.word = {w: i for i, w in enumerate(words)}

    spec = property(lambda self: self.real.spec)
    name = property(lambda self: self.real.name)
    dim = property(lambda self: self.real.dim)

    def reference_probes(self) -> np.ndarray:
        probes = getattr(self.real, "reference_probes", None)
        assert callable(probes)
        return np.asarray(probes())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) <= 8:
            return self.real.embed(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [self.word[w] for w in text.split() if w in self.word]
            if ids:
                out[row] = self.table[ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


def build(path: Path, n: int, cache: Path, chunk: int = 50_000) -> None:
    rng = random.Random(11)
    words = vocabulary()
    weights = [1.0 / (rank + 10) for rank in range(len(words))]
    embedder = BagOfWordVectors(embedder_from_spec(QUERY_SPEC), words, cache)
    started = time.perf_counter()
    edges = 0
    with MemoryStore(path, embedder=embedder, settings=Settings()) as store:
        for first in range(0, n, chunk):
            records = []
            for i in range(first, min(n, first + chunk)):
                text = " ".join(rng.choices(words, weights, k=rng.randint(8, 28)))
                records.append({"id": f"urn:scale:{i:07d}", "text": text,
                                "kind": rng.choice(KINDS), "owner": OWNERS[i % len(OWNERS)],
                                "status": "active" if rng.random() < 0.9 else "archived"})
            store.add_many(records, batch_size=5000)
            links = []
            for i in range(first, min(n, first + chunk)):
                if i % 10:
                    links.append(Edge("co_occurs", f"urn:scale:{i - 1:07d}",
                                      f"urn:scale:{i:07d}", source="session"))
                for _ in range(2 + (rng.random() < 0.1)):
                    j = rng.randrange(min(n, first + chunk))
                    links.append(Edge("references", f"urn:scale:{i:07d}",
                                      f"urn:scale:{j:07d}", source="bench"))
            edges += store.link_many(links)
            print(f"  {min(n, first + chunk)} memories, {edges} edges, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    print(f"built {n} memories and {edges} edges in {time.perf_counter() - started:.0f} s")


def cached_store(cache: Path, n: int, *, name: str = "scale",
                 builder: Callable[[Path, int, Path], None] | None = None,
                 resume: bool = False) -> Path:
    """The ``n``-memory store under ``cache`` (``<name>-<n>``), made by ``builder``
    (this module's ``build``) on first use; an interrupted build is never mistaken for
    the cache (``resume``: the builder goes on from what an interrupted one left)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}-{n}"
    if not (path / "graph.kuzu").exists():
        partial = path.with_name(path.name + ".partial")
        if not resume:
            shutil.rmtree(partial, ignore_errors=True)
        print(f"building {n} memories in {partial} ...")
        (builder or build)(partial, n, cache)
        partial.rename(path)
    return path


def bm25(texts: Sequence[str], queries: Sequence[str], groups: np.ndarray) -> None:
    from graphmem.algorithms import BM25Index

    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    index = BM25Index()
    index.set_many((pos, text, int(groups[pos])) for pos, text in enumerate(texts))
    index.scores("warm up", len(texts))
    build_s = time.perf_counter() - start
    memory = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    times = []
    for q in queries:
        start = time.perf_counter()
        index.scores(q, len(texts), group=int(groups[0]))
        times.append((time.perf_counter() - start) * 1000)
    print(f"  BM25: index of {len(texts)} texts built in {build_s:.1f} s, "
          f"{memory:.0f} MB (Python heap, tracemalloc); query p50 "
          f"{percentile(times, 50):.1f} ms, p95 {percentile(times, 95):.1f} ms (owner-scoped)")


def measure(path: Path, n_queries: int, candidates: int | None, lifecycle: bool,
            buffer_pool_mb: int, churn: int = 0) -> None:
    settings = Settings(buffer_pool_mb=buffer_pool_mb)
    rng = random.Random(5)
    start = time.perf_counter()
    with MemoryStore(path, embedder=QUERY_SPEC, settings=settings) as store:
        open_s = time.perf_counter() - start
        start = time.perf_counter()
        store.recall("warm up the index", k=1, record_access=False)
        first_s = time.perf_counter() - start
        stats = store.stats()
        print(f"{stats.memories} memories, {sum(stats.edges.values())} edges; opened in "
              f"{open_s:.1f} s, first recall (builds the recall index) {first_s:.1f} s; "
              f"RSS {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB (Kuzu buffer pool "
              f"{buffer_pool_mb} MB)")
        queries = sample_queries(store, n_queries, rng)
        print(f"  {'preset':<16} {'floor':>6} {'p50':>7} {'p95':>7} {'x floor':>8}  (ms; floor: "
              "the query's embedding)")
        for label, name in preset_runs(stats.memories):
            times, floor = time_recalls(store, queries, name)
            f50, p50 = percentile(floor, 50), percentile(times, 50)
            print(f"  {label:<16} {f50:6.1f} {p50:7.1f} {percentile(times, 95):7.1f} "
                  f"{p50 / f50:7.2f}x")
        print(f"  RSS after the presets {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB")
        if churn:
            # each recall records its hits' access: Kuzu holds written rows in memory
            # until a checkpoint, so RSS must stay flat here
            start = time.perf_counter()
            for i in range(churn):
                store.recall(queries[i % len(queries)], k=10, preset="fulltext")
            store.flush()
            print(f"  {churn} more recalls recording access ({churn * 10} rows written) in "
                  f"{time.perf_counter() - start:.0f} s: RSS {rss_mb():.0f} MB, peak "
                  f"{peak_rss_mb():.0f} MB")
        _, matrix = store.vectors()
        vector_search(matrix, store.embedder.embed(queries[:50]),
                      candidates or RecallIndex.sign_candidates(len(matrix), 100))
        del matrix
        gc.collect()
        all_texts = [r["text"] for r in store.cypher("MATCH (m:Memory) RETURN m.text AS text")]
        groups = np.arange(len(all_texts)) % len(OWNERS)
    bm25(all_texts, queries, groups)
    del all_texts
    gc.collect()
    if lifecycle:
        with store_copy(path, "graphmem-scale-life-") as copy:
            # in a process of its own, so that its peak RSS is the lifecycle's
            subprocess.run([sys.executable, "-m", "eval.bench_scale", "--lifecycle-of",
                            str(copy), "--buffer-pool-mb", str(buffer_pool_mb)], check=True)
    print(f"  peak RSS of this process (with the float32 baseline and the BM25 build "
          f"above): {peak_rss_mb():.0f} MB")


def lifecycle_of(path: Path, buffer_pool_mb: int) -> None:
    """``run_lifecycle(apply=True)`` on the store at ``path`` (a copy), in this process."""
    settings = Settings(buffer_pool_mb=buffer_pool_mb)
    with MemoryStore(path, embedder=QUERY_SPEC, settings=settings) as store:
        start = time.perf_counter()
        report = store.run_lifecycle(apply=True)
        apply_s = time.perf_counter() - start
        j = report.jobs
        print(f"  run_lifecycle(apply=True): {apply_s:.1f} s (decayed {j.decayed}, "
              f"promoted {j.promoted}, hot +{j.hot_added}, centrality for "
              f"{j.centrality_computed}); RSS {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB "
              "(a process of its own)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=None,
                        help="sign-bit candidates re-scored exactly (default: as the "
                             "store does, max(2000, n/100))")
    parser.add_argument("--buffer-pool-mb", type=int, default=1024)
    parser.add_argument("--no-lifecycle", action="store_true")
    parser.add_argument("--churn", type=int, default=2000,
                        help="recalls recording access after the presets, RSS after them")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--lifecycle-of", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    if args.lifecycle_of is not None:
        lifecycle_of(args.lifecycle_of, args.buffer_pool_mb)
        return
    path = cached_store(args.cache, args.n)
    if not args.build_only:
        measure(path, args.queries, args.candidates, not args.no_lifecycle,
                args.buffer_pool_mb, args.churn)


if __name__ == "__main__":
    main()
