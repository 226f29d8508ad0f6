"""Closing a big store after one write: ``python -m eval.bench_close [--n 100000]
[--baseline DIR]``.

A one-shot command (``graphmem add ...``) opens the store, writes once and closes it, and
the close checkpoints what the write put in the write-ahead log. On a fresh copy of
``eval.bench_writes``' store (built once, then reused from ``--cache``), with the store's
default settings, each write below runs in a fresh process: open, the write, ``close()``;
the baseline in the same process is a ``close()`` after a plain ``get``. Each figure is
the median of ``--repeats`` processes, each on its own copy. ``300 adds`` is a session
of adds one by one (its write the whole session, beside its slowest add: Kuzu's own
checkpoints fall within it). With ``--baseline DIR`` the
same runs go through the checkout in ``DIR`` too, alternating, on copies of the same
cache (a store the code here migrated once is opened and closed before the timed runs,
so its one-off migration is printed apart).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ._fresh import HERE, check_tree, store_copy, tree_env
from .bench_scale import cached_store
from .bench_writes import build

#: One write then ``close()``, timed; the public API alone, so that any checkout runs it.
_PROBE = """
import json, sys, time
from graphmem import MemoryStore
db, op = sys.argv[1], sys.argv[2]
started = time.perf_counter()
store = MemoryStore(db, embedder="hashing")
store.get("urn:w:0000001")
opened = time.perf_counter() - started
started = time.perf_counter()
slowest = 0.0
if op == "300 adds":  # a session: Kuzu checkpoints within it too
    for i in range(300):
        at = time.perf_counter()
        store.add(f"Ana Costa moved to Oslo in {1900 + i}. Bo Lund works at Globex.",
                  owner="o")
        slowest = max(slowest, time.perf_counter() - at)
elif op == "add":
    store.add("Ana Costa moved to Oslo in 2024. She works at Globex.", owner="o")
elif op == "update(text=...)":
    store.update("urn:w:0000005", text="Ana Costa moved to Oslo in 2024. She works at Globex.")
elif op == "update(importance=...)":
    store.update("urn:w:0000005", importance=0.2)
else:
    store.get("urn:w:0000005")
wrote = time.perf_counter() - started
started = time.perf_counter()
store.close()
print(json.dumps({"open": opened, "write": wrote, "close": time.perf_counter() - started,
                  "slowest": slowest or wrote}))
"""
OPS = ("get", "update(importance=...)", "add", "update(text=...)", "300 adds")


def _probe(tree: Path, cached: Path, op: str) -> dict[str, float]:
    """``_PROBE`` in a fresh process on ``tree``'s code, on its own copy of the store."""
    with store_copy(cached, "graphmem-bench-close-") as db:
        first = _run(tree, db, "get") if tree == HERE else None  # a one-off migration
        os.sync()
        result = _run(tree, db, op)
        if first is not None:
            result["first open"] = first["open"] + first["close"]
        return result


def _run(tree: Path, db: Path, op: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(db), op], capture_output=True,
                          text=True, check=False, env={**os.environ, **tree_env(tree)})
    if done.returncode:
        raise SystemExit(f"{tree}: {op} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--ops", default=",".join(OPS),
                        help="the writes to time, comma-separated (default: all of "
                             + ", ".join(OPS) + ")")
    parser.add_argument("--baseline", type=Path, help="another checkout, run alternating")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench-writes")
    args = parser.parse_args()
    ops = [op for op in args.ops.split(",") if op]
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        parser.error(f"--ops: no write {unknown[0]!r}; choose from {', '.join(OPS)}")
    trees = {"this": HERE}
    if args.baseline is not None:
        check_tree(args.baseline.resolve())
        trees["baseline"] = args.baseline.resolve()
    cached = cached_store(args.cache, args.n, name="writes", builder=build)
    print(f"{args.n} memories ({cached}), median of {args.repeats} fresh process(es) each")
    for op in ops:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.repeats):
            for name, tree in trees.items():
                runs[name].append(_probe(tree, cached, op))
        for name, values in runs.items():
            figures = {k: statistics.median(v[k] for v in values) for k in values[0]}
            if "first open" in figures:
                print(f"  {name:<9} (the copy's first open and close, a migration if the "
                      f"cache is older: {figures['first open']:.2f} s)")
            print(f"  {name:<9} {op:<24} open {figures['open']:6.2f} s  write "
                  f"{figures['write'] * 1000:8.1f} ms (slowest call "
                  f"{figures['slowest'] * 1000:8.1f} ms)  close {figures['close']:7.2f} s",
                  flush=True)


if __name__ == "__main__":
    main()
