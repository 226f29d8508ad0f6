"""A big store growing: ``python -m eval.bench_grow [--n 100000] [--batches 6]``.

On a copy of ``eval.bench_writes``' store of ``n`` memories (built once, then reused from
``--cache``), the seconds each of ``--batches`` ``add_many`` calls of ``--size`` new
memories takes, in one process, as a bulk import into a store in use would run. Each such
batch is written with COPY, and Kuzu checkpoints when it commits: what that costs as the
store grows (the knowledge graph's facts above all) is what this measures.

``--baseline DIR`` (a checkout of an earlier commit) measures its code too, each side in
a fresh process on its own copy of the store, in alternating ``--rounds``; each line
prints both and the ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ._fresh import store_copy, tree_env
from ._grow_probe import probe
from .bench_recall import OWNERS
from .bench_writes import _text, compared, store_arguments


def batches(count: int, size: int, seed: int) -> list[list[dict[str, Any]]]:
    """``count`` batches of ``size`` new records (ids no built store holds)."""
    rng = random.Random(seed)
    return [[{"id": f"urn:grow:{b}:{i:05d}", "text": _text(rng),
              "owner": OWNERS[i % len(OWNERS)]} for i in range(size)] for b in range(count)]


def _run(tree: Path, db: Path, records: Path) -> list[float]:
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("_grow_probe.py")),
                           str(db), str(records)], capture_output=True, text=True,
                          check=False, env={**os.environ, **tree_env(tree)})
    if done.returncode:
        raise SystemExit(f"{tree}: failed ({done.returncode}): {done.stderr[-2000:]}")
    result: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    store_arguments(parser)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--size", type=int, default=1000)
    args = parser.parse_args()
    trees, cached = compared(args)
    results: dict[str, list[list[float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-grow-") as work:
        records = Path(work) / "records.json"
        records.write_text(json.dumps(batches(args.batches, args.size, seed=17)),
                           encoding="utf-8")
        print(f"{args.n} memories, then {args.batches} add_many of {args.size} each; "
              f"load average {os.getloadavg()[0]:.1f} before")
        for number in range(1, args.rounds + 1):
            for name, tree in trees.items():
                with contextlib.ExitStack() as stack:
                    db = stack.enter_context(store_copy(cached, "graphmem-bench-grow-"))
                    os.sync()  # the copy reaches the disk before anything is timed
                    seconds = _run(tree, db, records) if len(trees) > 1 else probe(
                        db, json.loads(records.read_text(encoding="utf-8")))
                results[name].append(seconds)
                print(f"round {number}  {name:<10} " + "  ".join(f"{s:6.2f}" for s in seconds)
                      + f"   total {sum(seconds):7.2f} s", flush=True)
    print("seconds per add_many, median over rounds, batch by batch:")
    for name, runs in results.items():
        per = [statistics.median(r[i] for r in runs) for i in range(args.batches)]
        print(f"  {name:<10} " + "  ".join(f"{s:6.2f}" for s in per)
              + f"   total {sum(per):7.2f} s")
    if len(trees) > 1:
        ours, theirs = (sum(statistics.median(r[i] for r in results[name])
                            for i in range(args.batches)) for name in ("this code", "baseline"))
        print(f"  this code / baseline: {ours / theirs:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
