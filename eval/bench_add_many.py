"""Bulk-insert throughput: ``python -m eval.bench_add_many [--n 10000]``.

Prints memories/s for ``add_many`` with the hashing embedder (the database's own cost) and
with the bundled MiniLM model (end to end), next to two baselines measured in the same run:
the MiniLM model's raw encoding throughput on the same texts, and one ``add()`` per memory.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from graphmem import MemoryStore, MiniLMEmbedder, Settings

WORDS = ["orchard", "deploy", "sensor", "moisture", "thesis", "chapter", "migration", "queue",
    "redis", "postgres", "nadia", "review", "release", "greenhouse", "bed", "alert",
    "calibration", "backup", "network", "firmware", "incident", "latency", "search",
    "passkey", "harvest", "model", "training", "figure", "meeting"]


def texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
            for i in range(n)]


def timed_add_many(embedder: str, items: list[str], workdir: Path) -> float:
    path = workdir / f"db-{embedder}"
    with MemoryStore(path, embedder=embedder, settings=Settings()) as store:
        store.embed(["warm up the model"])
        start = time.perf_counter()
        store.add_many([{"text": t, "kind": "episodic"} for t in items], batch_size=1000)
        elapsed = time.perf_counter() - start
        assert store.stats().memories == len(items)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--single", type=int, default=300, help="add() calls for the baseline")
    args = parser.parse_args()
    items = texts(args.n)
    workdir = Path(tempfile.mkdtemp(prefix="graphmem-bench-"))
    try:
        model = MiniLMEmbedder()
        model.embed(["warm up"])
        start = time.perf_counter()
        model.embed(items)
        raw = time.perf_counter() - start

        hashing = timed_add_many("hashing", items, workdir)
        minilm = timed_add_many("minilm", items, workdir)

        with MemoryStore(workdir / "single", embedder="hashing") as store:
            start = time.perf_counter()
            for text in items[: args.single]:
                store.add(text)
            single = (time.perf_counter() - start) / args.single

        print(f"add_many throughput, {args.n} memories (batches of 1000)")
        print(f"  MiniLM encode alone (baseline)  {args.n / raw:8.0f} texts/s   {raw:6.1f} s")
        print(f"  add_many, MiniLM (end to end)   {args.n / minilm:8.0f} memories/s "
              f"{minilm:6.1f} s  = {raw / minilm:.2f}x of the encoder's rate")
        print(f"  add_many, hashing embedder      {args.n / hashing:8.0f} memories/s "
              f"{hashing:6.1f} s  (the database's cost)")
        print(f"  add() one at a time (baseline)  {1 / single:8.0f} memories/s "
              f"  -> add_many is {single * args.n / hashing:.0f}x faster")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
