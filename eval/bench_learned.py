"""What the learned ranker costs per query: ``python -m eval.bench_learned``.

A store of synthetic memories (the recall benchmark's generator: Zipf-drawn words,
sessions joined by CO_OCCURS, random REFERENCES), a ranker trained on feedback given to
its own recalls, then the same queries asked with ``default`` and ``learned`` in
alternation (accesses not recorded, query vectors embedded beforehand so both pay the
same). Printed: p50 / p95 per preset, the ratio, and the learned step alone (building the
50 candidates' features and scoring them), which is all ``learned`` adds to ``default``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from graphmem import MemoryStore, Settings

from .bench_recall import synthetic
from .experiment import CachedEmbedder


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def run(n: int, queries: int, embedder: str, seed: int = 5) -> dict[str, Any]:
    from graphmem import embedder_from_spec
    from graphmem.algorithms import fit_ranker, ranking_samples, timed_reranker

    emb = CachedEmbedder(embedder_from_spec(embedder))
    records, edges = synthetic(n)
    rng = random.Random(seed)
    texts = [r["text"] for r in records]
    asked = [" ".join(rng.sample(rng.choice(texts).split(), 3)) for _ in range(queries)]
    emb.warm(asked)
    with MemoryStore(":memory:", embedder=emb, settings=Settings()) as store:
        store.add_many(records, batch_size=2000)
        store.link_many(edges)
        # feedback on the store's own recalls: the hit sharing most words is useful
        for query in asked[: max(60, queries // 4)]:
            hits = store.recall(query, k=10)
            words = set(query.split())
            best = max(hits, key=lambda h: len(words & set(h.memory.text.split())))
            store.feedback(best.memory.id, useful=True, query=query)
        ranker = fit_ranker(ranking_samples(store.events(event_type="feedback")),
                            now=store.now())
        # used whether or not it validated: the benchmark times it
        store.use_ranker({**ranker.to_dict(), "validated": True})
        step: list[float] = []
        with timed_reranker(store, step):
            for query in asked[:20]:  # warm both paths
                store.recall(query, preset="learned", record_access=False)
                store.recall(query, preset="default", record_access=False)
            step.clear()
            times: dict[str, list[float]] = {"default": [], "learned": []}
            for n_query, query in enumerate(asked):
                order = ("default", "learned") if n_query % 2 else ("learned", "default")
                for preset in order:
                    start = time.perf_counter()
                    store.recall(query, k=10, preset=preset, record_access=False)
                    times[preset].append((time.perf_counter() - start) * 1000)
    default = _percentiles(times["default"])
    learned = _percentiles(times["learned"])
    alone = _percentiles(step)
    return {"memories": n, "queries": queries, "embedder": embedder,
            "default_p50_ms": round(default[0], 2), "default_p95_ms": round(default[1], 2),
            "learned_p50_ms": round(learned[0], 2), "learned_p95_ms": round(learned[1], 2),
            "ratio_p50": round(learned[0] / default[0], 3),
            "learned_step_p50_ms": round(alone[0], 3), "learned_step_p95_ms": round(alone[1], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000", help="comma-separated store sizes")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--out", type=Path, default=None,
                        help="write bench_learned.json here (eval/results: learning.md "
                             "quotes it)")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        result = run(size, args.queries, args.embedder)
        result["command"] = (f"python -m eval.bench_learned --sizes {size} --queries "
                             f"{args.queries} --embedder {args.embedder}")
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "bench_learned.json").write_text(json.dumps(result, indent=2) + "\n")
        print(f"{result['memories']:>7} memories, {result['queries']} queries "
              f"({result['embedder']}): default p50 {result['default_p50_ms']} ms "
              f"(p95 {result['default_p95_ms']}), learned p50 {result['learned_p50_ms']} ms "
              f"(p95 {result['learned_p95_ms']}), ratio {result['ratio_p50']}; the learned "
              f"step alone (features of 50 candidates + model) p50 "
              f"{result['learned_step_p50_ms']} ms, p95 {result['learned_step_p95_ms']} ms")


if __name__ == "__main__":
    main()
