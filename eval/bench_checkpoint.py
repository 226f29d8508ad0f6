"""What checking lists around a checkpoint costs: ``python -m eval.bench_checkpoint [--n 10000]``.

Kuzu 0.11.3's checkpoint can write the lists of rows created since the last one wrong when
lists of older rows were set meanwhile; the adapter reads such rows' lists before and after
each checkpoint and sets again what changed (``graphmem/_kuzu/_db.py``). On a copy of
``bench_writes``'s store (built once, cached), the p50 of one checkpoint after:

* ``update`` alone: an importance update (nothing to check; the baseline);
* ``add``: a new tagged memory alone (nothing to check: what ``update + add`` costs
  without the check, less one update);
* ``update + add``: a tag update of an older memory and a new tagged memory (their rows
  are read before and after);
* ``update + add, unchecked``: the same with the check switched off for that checkpoint
  (the baseline of the check's own cost; lists may come out wrong there);
* ``cypher write``: a user Cypher statement that sets a field (it created no rows: user
  Cypher deletes nothing, so the tables' row counts say so, and nothing is compared);
* ``cypher create``: a user Cypher statement that creates an entity with aliases (its
  rows are not known by key: the Entity table is compared whole).

Each is printed with its ratio to the baseline of the same run, and how many rows' lists
came out different and were set again.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from graphmem import MemoryStore
from graphmem.algorithms import engine_of
from graphmem.engines import KuzuEngine

from ._fresh import store_copy
from .bench_scale import cached_store
from .bench_writes import build

CASES = ("update", "add", "update + add", "update + add, unchecked", "cypher write",
         "cypher create")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--samples", type=int, default=20, help="checkpoints of each case")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench-writes")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.n, name="writes", builder=build)
    rng = random.Random(3)
    ids = [f"urn:w:{i:07d}" for i in rng.sample(range(args.n), 3 * args.samples)]
    # the k-th sample updates ids[3k] (importance), ids[3k+1] (tags), ids[3k+2] (Cypher)
    with store_copy(cached, "graphmem-bench-checkpoint-") as path, \
            MemoryStore(path, embedder="hashing") as store:
        engine = engine_of(store)
        if not isinstance(engine, KuzuEngine):
            raise SystemExit("checkpoints are Kuzu's")
        db = engine.db
        db.checkpoint()
        writes: dict[str, Callable[[int], object]] = {
            "update": lambda k: store.update(ids[3 * k], importance=rng.uniform(0.1, 0.9)),
            "add": lambda k: store.add(f"Omar met Nadia in Lima in {1990 + k}.",
                                       tags=["bench", f"a{k}"]),
            "update + add": lambda k: (
                store.update(ids[3 * k + 1], tags=[f"t{k}"]),
                store.add(f"Nadia met Omar in Oslo in {1990 + k}.", tags=["bench", f"n{k}"])),
            "update + add, unchecked": lambda k: (
                store.update(ids[3 * k + 1], tags=[f"u{k}"]),
                store.add(f"Omar met Nadia in Oslo in {1990 + k}.", tags=["bench", f"u{k}"])),
            "cypher write": lambda k: store.cypher(
                "MATCH (m:Memory {id: $id}) SET m.importance = 0.4", {"id": ids[3 * k + 2]},
                write=True),
            "cypher create": lambda k: store.cypher(
                "CREATE (:Entity {id: $id, owner: 'bench', name: $id, type: 'thing', "
                "aliases: [$id], gone: false})", {"id": f"bench-entity-{k}"}, write=True),
        }
        times: dict[str, list[float]] = {case: [] for case in CASES}
        for k in range(args.samples):
            for case in CASES:  # interleaved, so that load hits every case alike
                writes[case](k)
                db.check_lists = not case.endswith("unchecked")
                started = time.perf_counter()
                db.checkpoint()
                times[case].append((time.perf_counter() - started) * 1000)
                db.check_lists = True
        base = statistics.median(times["update"])
        print(f"{store.stats().memories} memories; p50 of {args.samples} checkpoints after:")
        for case in CASES:
            p50 = statistics.median(times[case])
            print(f"  {case:<24} {p50:8.1f} ms  {p50 / base:5.1f}x")
        print(f"rows whose lists were set again: {db.lists_repaired}")


if __name__ == "__main__":
    main()
