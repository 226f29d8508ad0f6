"""The lifecycle manager at scale: ``python -m eval.bench_lifecycle [--n 100000]``.

Builds (once, then reuses from ``--cache``) a store of ``n`` memories with about three
edges each (REFERENCES and CO_OCCURS), ages spread over 200 days, Zipf-distributed use and
some tagged memories, then times:

* ``run_lifecycle()`` (dry run), ``run_lifecycle(apply=True)`` (first, with many changes)
  and a second apply (nothing left to change), centrality included;
* recall beside it: the index built, p50 before the runs, the first recall after the
  first run (what the run hands the index decides whether it is built again) and p50
  after;
* the baseline in the same process: the same kind of transition applied one memory at a
  time through ``promote()``, extrapolated to the number the manager applied.

Target on a 2-core machine at 100k memories and 300k edges: apply <= 10 s.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graphmem import Edge, MemoryStore

from ._fresh import store_copy

NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
KINDS = ["episodic"] * 6 + ["semantic", "procedural", "note", "identity", "working"]


def build(path: Path, n: int) -> None:
    rng = random.Random(17)
    records = []
    for i in range(n):
        age = rng.uniform(0, 200)
        created = NOW - timedelta(days=age)
        tags = ["critical"] if rng.random() < 0.005 else (
            ["deprecated"] if rng.random() < 0.005 else [])
        records.append({"id": f"urn:life:{i:07d}", "text": f"memory {i} of the lifecycle bench",
                        "kind": rng.choice(KINDS), "importance": round(rng.uniform(0.1, 0.9), 2),
                        "created": created, "tags": tags,
                        "status": "candidate" if rng.random() < 0.05 else "active"})
    edges = []
    for i in range(n):
        if i % 10:
            edges.append(Edge("co_occurs", f"urn:life:{i - 1:07d}", f"urn:life:{i:07d}"))
        targets = [rng.randrange(n), rng.randrange(n),
                   min(int(rng.paretovariate(1.2)) * 37 % n, n - 1)]  # and a few hubs
        for j in targets:
            edges.append(Edge("references", f"urn:life:{i:07d}", f"urn:life:{j:07d}"))
    started = time.perf_counter()
    with MemoryStore(path, embedder="hashing", clock=lambda: NOW) as store:
        store.add_many(records, batch_size=5000, progress=True)
        made = store.link_many(edges)
        # Use: Zipf-distributed accesses written straight through Cypher (fast, set-based).
        store.cypher("MATCH (m:Memory) WHERE m.id ENDS WITH '7' "
                     "SET m.access_count = 12, m.last_accessed = $t", {"t": NOW}, write=True)
    print(f"built {n} memories, {made} edges in {time.perf_counter() - started:.0f} s")


def recall(store: MemoryStore, query: str) -> float:
    """Seconds one recall takes (access recording off: the runs see the same store)."""
    start = time.perf_counter()
    store.recall(query, k=10, record_access=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    source = args.cache / f"lifecycle-{args.n}"
    if not (source / "graph.kuzu").exists():
        shutil.rmtree(source, ignore_errors=True)
        args.cache.mkdir(parents=True, exist_ok=True)
        build(source, args.n)
    # every run starts from the same state
    with store_copy(source, "graphmem-life-") as db, MemoryStore(db, clock=lambda: NOW) as store:
        stats = store.stats()
        print(f"{stats.memories} memories, {sum(stats.edges.values())} edges")
        start = time.perf_counter()
        recall(store, "memory 17 of the lifecycle bench")  # the recall index is built here
        built_s = time.perf_counter() - start
        before = [recall(store, f"memory {i} of the bench") for i in range(1, 12)]
        start = time.perf_counter()
        dry = store.run_lifecycle()
        dry_s = time.perf_counter() - start
        start = time.perf_counter()
        first = store.run_lifecycle(apply=True)
        first_s = time.perf_counter() - start
        after_first = recall(store, "memory 99 of the lifecycle bench")
        after = [recall(store, f"memory {i} of the bench") for i in range(21, 32)]
        start = time.perf_counter()
        second = store.run_lifecycle(apply=True)
        second_s = time.perf_counter() - start
        j = first.jobs
        changed = (j.decayed + j.recomputed + j.promoted + j.archived + j.hot_added
                   + j.hot_removed + j.candidates_expired + j.payloads_redacted)
        print(f"dry run:              {dry_s:6.2f} s  (evaluated {dry.evaluated}: "
              + ", ".join(f"{k} {v}" for k, v in dry.counts.items()) + ")")
        print(f"apply, first run:     {first_s:6.2f} s  ({changed} changes: decayed "
              f"{j.decayed}, promoted {j.promoted}, hot +{j.hot_added}, expired "
              f"{j.candidates_expired}, centrality for {j.centrality_computed})")
        s2 = second.jobs
        print(f"apply, second run:    {second_s:6.2f} s  (changes: "
              f"{s2.decayed + s2.promoted + s2.archived + s2.hot_added + s2.hot_removed}"
              f" - idempotent)")
        print(f"recall, the index built {built_s:6.2f} s; p50 before the runs "
              f"{statistics.median(before) * 1000:.1f} ms, the first recall after the first "
              f"run {after_first * 1000:.1f} ms ({after_first / statistics.median(before):.1f}x),"
              f" then p50 {statistics.median(after) * 1000:.1f} ms")
        # Baseline: the same transition one memory at a time.
        sample = [r["id"] for r in store.cypher(
            "MATCH (m:Memory) WHERE m.kind = 'episodic' AND m.status = 'active' "
            "RETURN m.id AS id LIMIT 200")]
        start = time.perf_counter()
        for memory_id in sample:
            store.promote(memory_id, reason="manual")
        per_row = (time.perf_counter() - start) / max(len(sample), 1)
        print(f"baseline, one transition at a time: {per_row * 1000:.1f} ms each -> "
              f"{per_row * changed:.0f} s for the first run's {changed} changes "
              f"({per_row * changed / first_s:.0f}x the set-based run)")


if __name__ == "__main__":
    main()
