"""Opening ready: ``python -m eval.bench_open [--n 100000]``.

A fresh process that opens a store and answers one recall, on ``eval.bench_scale``'s
store (``n`` memories, about ``3n`` edges, built once into ``--cache`` and copied: the
cache is never opened), each figure the median of ``--repeats`` fresh processes:

* ``python -c "import graphmem"`` (the floor every figure below includes);
* open + one ``recall`` with the recall index read from its file (``recall.index``);
* the same with ``GRAPHMEM_PERSIST_INDEX=0``: the index built from the store (the
  baseline);
* a one-shot ``graphmem --db X recall "..."`` (the CLI, its file read).

Targets (beyond the import, on the 2-core machine): 100k memories <= 2 s, 1M memories
with 3M edges <= 10 s; one-shot CLI recall at 100k <= 2 s.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from ._fresh import CLI, median_fresh, run_fresh, store_copy
from .bench_scale import cached_store

OPEN_AND_RECALL = (
    "import sys\nfrom graphmem import MemoryStore\n"
    "with MemoryStore(sys.argv[1]) as store:\n"
    "    store.recall(sys.argv[2], k=10)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--query", default="river garden music")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    with store_copy(cached_store(args.cache, args.n), "graphmem-bench-open-") as path:
        db = str(path)
        print(f"{args.n} memories (load average {os.getloadavg()[0]:.1f}); median of "
              f"{args.repeats} fresh processes each")
        first = run_fresh(OPEN_AND_RECALL, [db, args.query]).wall
        print(f"  first open (migrates, builds the index, writes its file) {first:6.2f} s")
        floor = median_fresh("python -c 'import graphmem'", args.repeats, "import graphmem",
                             []).wall
        ready = median_fresh("open + recall, index read from its file", args.repeats,
                             OPEN_AND_RECALL, [db, args.query]).wall
        built = median_fresh("open + recall, index built (baseline)", args.repeats,
                             OPEN_AND_RECALL, [db, args.query],
                             {"GRAPHMEM_PERSIST_INDEX": "0"}).wall
        cli = median_fresh("graphmem --db X recall (one-shot CLI)", args.repeats, CLI,
                           ["--db", db, "recall", args.query]).wall
        print(f"beyond the import: file {ready - floor:.2f} s, build {built - floor:.2f} s "
              f"({built / ready:.1f}x the wall); one-shot CLI {cli:.2f} s wall, "
              f"{cli - floor:.2f} s beyond the import")

if __name__ == "__main__":
    main()
