"""Forget on a big store: ``python -m eval.bench_purge [--n 100000]``.

On a copy of ``eval.bench_writes``' store (built once, then reused from ``--cache``; two
or three sentences a memory, so rows of ~7 KB with their sentence vectors), with the
store's default settings (the buffer pool too): ``forget(purge=False)`` of a few memories
(the hard delete in the graph, its indexes and the knowledge graph), then one
``purge()`` (the database file rewritten from its live data, so the deleted bytes leave
the disk), which ``forget`` runs by default; the process's peak memory after each. The
baseline in the same process is a plain ``get`` and ``update(importance=...)`` of the
same memories.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

from graphmem import MemoryStore, Settings

from ._fresh import store_copy
from .bench_scale import cached_store
from .bench_writes import build


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench-writes")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.n, name="writes", builder=build)
    ids = [f"urn:w:{i:07d}" for i in random.Random(13).sample(range(args.n),
                                                              2 * args.samples)]
    with store_copy(cached, "graphmem-bench-purge-") as db:
        os.sync()
        with MemoryStore(db, embedder="hashing") as store:
            print(f"{store.stats().memories} memories, buffer pool "
                  f"{Settings().buffer_pool_mb} MB, peak {_peak_mb()} MB after opening")
            times: dict[str, list[float]] = {name: [] for name in
                                             ("get", "update(importance=...)",
                                              "forget(purge=False)")}
            calls = {"get": lambda i, _: store.get(i),
                     "update(importance=...)": lambda i, _: store.update(i, importance=0.4),
                     "forget(purge=False)": lambda _, j: store.forget(j, confirm=True,
                                                                      purge=False)}
            for first, second in zip(ids[::2], ids[1::2], strict=True):
                for name, call in calls.items():
                    started = time.perf_counter()
                    call(first, second)
                    times[name].append((time.perf_counter() - started) * 1000)
            for name, values in times.items():
                print(f"  {name:<24} p50 {statistics.median(values):9.2f} ms")
            print(f"  peak {_peak_mb()} MB")
            started = time.perf_counter()
            store.purge()
            print(f"  purge()                  {time.perf_counter() - started:9.2f} s "
                  f"(the file rewritten; forget runs it by default), peak {_peak_mb()} MB")
            assert store.stats().memories == args.n


if __name__ == "__main__":
    main()
