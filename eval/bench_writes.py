"""Small writes on a big store: ``python -m eval.bench_writes [--n 100000]``.

Builds (once, then reuses from ``--cache``) a store of ``n`` memories whose texts are two
or three sentences about people, places and organisations of five owners, so that the
rules extract a realistic knowledge graph (about three facts a memory), with the hashing
embedder (no write measured here embeds). Then, on a copy, with the recall index loaded
(as in a sidecar), the p50 of ``update(importance=...)``, ``feedback`` and ``tombstone``
against a plain ``get`` of the same memories, and the ratio (target: within 3x).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from graphmem import MemoryStore, Settings
from graphmem.algorithms import engine_of

from ._fresh import store_copy
from .bench_recall import OWNERS
from .bench_scale import cached_store

FIRST = ["Caroline", "Melanie", "Nadia", "Omar", "Priya", "Jon", "Lena", "Tariq", "Ines",
         "Kofi", "Mara", "Sven", "Aiko", "Dario", "Hana", "Yusuf"]
LAST = ["Okafor", "Silva", "Berg", "Khan", "Moreau", "Ito", "Novak", "Reyes", "Adeyemi",
        "Lund", "Costa", "Haddad"]
PLACES = ["Lisbon", "Porto", "Berlin", "Lagos", "Osaka", "Quito", "Oslo", "Tunis", "Perth",
          "Lima", "Nairobi", "Hanoi", "Bergen", "Valencia", "Cork", "Austin"]
ORGS = ["Acme Inc.", "Globex", "Initech", "Umbrella Corp", "Hooli", "Vandelay Industries",
        "Stark Labs", "Wayne Foods"]
SENTENCES = ["{p} works at {o} in {c}.", "{p} moved to {c} in {y}.",
             "{p} lives in {c} and works at {o}.", "{p} met {q} in {c} last {m}.",
             "{p} joined {o} as an engineer in {y}.", "{q} is the sister of {p}.",
             "{p} visited {c} with {q} in {m}."]


def _text(rng: random.Random) -> str:
    def person() -> str:
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"

    return " ".join(rng.choice(SENTENCES).format(
        p=person(), q=person(), o=rng.choice(ORGS), c=rng.choice(PLACES),
        y=rng.randint(2012, 2025), m=rng.choice(["May", "June", "winter", "spring"]))
        for _ in range(rng.randint(2, 3)))


def build(path: Path, n: int, cache: Path | None = None, chunk: int = 5000) -> None:
    rng = random.Random(7)
    started = time.perf_counter()
    with MemoryStore(path, embedder="hashing", settings=Settings()) as store:
        for first in range(0, n, chunk):
            store.add_many([{"id": f"urn:w:{i:07d}", "text": _text(rng),
                             "owner": OWNERS[i % len(OWNERS)]}
                            for i in range(first, min(n, first + chunk))])
            print(f"  {min(n, first + chunk)} memories, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)


def _p50(call: Callable[[str], object], ids: list[str]) -> float:
    times = []
    for memory_id in ids:
        started = time.perf_counter()
        call(memory_id)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(db: Path, n: int, samples: int) -> None:
    rng = random.Random(5)
    with MemoryStore(db, embedder="hashing") as store:
        facts = len(engine_of(store).facts(all_owners=True))
        print(f"{store.stats().memories} memories, {facts} facts")
        started = time.perf_counter()
        store.recall("Caroline Lisbon", k=5)  # the recall index is loaded, as in a sidecar
        print(f"  recall index ready in {time.perf_counter() - started:.1f} s")
        ids = [f"urn:w:{i:07d}" for i in rng.sample(range(n), 3 * samples)]
        warm, first, second, third = ids[:5], ids[:samples], ids[samples:2 * samples], \
            ids[2 * samples:]
        for memory_id in warm:  # the first calls load what later ones reuse
            store.get(memory_id)
            store.update(memory_id, importance=0.5)
        results = {
            "get": _p50(store.get, first),
            "update(importance=...)": _p50(
                lambda i: store.update(i, importance=rng.uniform(0.1, 0.9)), first),
            "feedback": _p50(lambda i: store.feedback(i, useful=True), second),
            "tombstone": _p50(lambda i: store.tombstone(i, reason="bench"), third),
        }
    base = results["get"]
    print(f"p50 of {samples} calls each (ms):")
    for name, value in results.items():
        print(f"  {name:<24} {value:8.2f} ms   {value / base:6.1f}x get")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench-writes")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.n, name="writes", builder=build)
    with store_copy(cached, "graphmem-bench-writes-") as db:  # writes change it
        measure(db, args.n, args.samples)


if __name__ == "__main__":
    main()
