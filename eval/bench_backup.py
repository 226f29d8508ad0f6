"""Backup and restore against the code before: ``python -m eval.bench_backup --baseline DIR``
(repeated for several earlier checkouts).

A store of ``n`` memories (built once into ``--cache`` with the hashing embedder: texts
that name people and places, so the knowledge graph has entities, mentions and facts;
every fifth memory edited once, every tenth archived, sessions of ten joined by
CO_OCCURS and two REFERENCES each) is backed up and restored into a new Kuzu store, and
with ``--pg`` also restored into a fresh PostgreSQL schema and backed up from there, and
moved from Kuzu into another schema (``copy_store``, as a legacy backup is restored into
PostgreSQL), by
this checkout's code and by each ``--baseline`` (a checkout of an earlier commit, e.g.
``git archive a4e580b | tar -x -C ../base``), in alternation so that all see the same
load. Each step runs in a fresh process of its own and is timed inside it (the import
left out), with the process's peak resident memory (import included); each figure is the
median of ``--repeats``. Every restored store is compared with the original through its
UMP export.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ._fresh import HERE, check_tree, tree_env
from .bench_recall import bench_edges
from .bench_scale import cached_store

NAMES = ["Nadia", "Tomas", "Amara", "Kenji", "Lucia", "Omar", "Priya", "Sven"]
PLACES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Hobart", "Accra", "Bergen"]
THINGS = ["the orchard deploy", "the harvest calendar", "the greenhouse alerts",
          "the release notes", "the firmware update", "the weekly review"]

STEP = """
import json, resource, sys, time
from graphmem import MemoryStore
step, source, target = sys.argv[1:4]
started = time.perf_counter()
if step == "backup":
    with MemoryStore(source, embedder="hashing") as store:
        opened = time.perf_counter()
        store.backup(target)
elif step == "move":
    from graphmem import Settings
    from graphmem.engines import copy_store, open_engine
    opened = time.perf_counter()
    kuzu = open_engine(source, settings=Settings(), read_only=True)
    pg = open_engine(target, settings=Settings())
    copy_store(kuzu, pg)
    pg.close()
    kuzu.close()
else:
    opened = started
    MemoryStore.restore_backup(source, target)
print(json.dumps({"s": time.perf_counter() - opened,
                  "mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

EXPORT = """
import json, sys
from graphmem import MemoryStore
with MemoryStore(sys.argv[1], embedder="hashing") as store:
    out = {**store.export(), "generated": None}
# edges of one memory come in another order from each engine
out["edges"] = {k: sorted(v, key=lambda e: json.dumps(e, sort_keys=True, default=str))
                for k, v in out["edges"].items()}
print(json.dumps(out, sort_keys=True, default=str))
"""


def build(path: Path, n: int, cache: Path) -> None:
    from graphmem import MemoryStore

    rng = random.Random(5)
    with MemoryStore(path, embedder="hashing") as store:
        records = []
        for i in range(n):
            who, other, where = rng.choice(NAMES), rng.choice(NAMES), rng.choice(PLACES)
            records.append({
                "id": f"urn:bench:{i:06d}", "owner": f"owner{i % 4}",
                "text": f"{who} told {other} that {rng.choice(THINGS)} moves to {where} "
                        f"on day {i % 28 + 1}; note {i}"})
        store.add_many(records, batch_size=2000)
        store.link_many(bench_edges(n, rng, width=6))
        for i in range(0, n, 5):
            store.update(f"urn:bench:{i:06d}", text=records[i]["text"] + " (edited)",
                         owner=records[i]["owner"])
        for i in range(3, n, 10):
            store.archive(f"urn:bench:{i:06d}", reason="manual", owner=records[i]["owner"])


def _run(code: str, args: list[str], tree: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=False, env={**os.environ, **tree_env(tree)})
    if done.returncode:
        raise SystemExit(f"failed in {tree}: {done.stderr[-3000:]}")
    return done.stdout


def _step(tree: Path, step: str, source: str, target: str) -> tuple[float, float]:
    """Seconds the step took and the process's peak resident memory in MB."""
    done = json.loads(_run(STEP, [step, source, target], tree).splitlines()[-1])
    return float(done["s"]), float(done["mb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, action="append",
                        help="a checkout of the code to compare with (may repeat)")
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL too (embedded server)")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    trees = {"this code": HERE, **{f"{b.name}": b.resolve() for b in args.baseline}}
    for tree in trees.values():
        check_tree(tree)
    source = cached_store(args.cache, args.n, name="backup", builder=build)
    want = _run(EXPORT, [str(source)], HERE)
    server = None
    if args.pg:
        from ._pg import fresh_schema, postgres_server

        server = postgres_server()
    work = Path(tempfile.mkdtemp(prefix="graphmem-bench-backup-"))
    times: dict[tuple[str, str], list[float]] = {}
    peaks: dict[tuple[str, str], list[float]] = {}
    same: dict[str, bool] = {}  # "<code> into <engine>" -> equal
    print(f"{args.n} memories; each step in a fresh process, timed inside it, "
          f"{args.repeats} rounds, the codes in alternation (load average "
          f"{os.getloadavg()[0]:.1f} before)")
    try:
        for round_ in range(args.repeats):
            for name, tree in trees.items():
                here = work / f"{round_}-{name.replace(' ', '-')}"
                here.mkdir()
                db = here / "db"
                shutil.copytree(source, db)
                steps = [("backup kuzu", "backup", str(db), str(here / "b")),
                         ("restore into kuzu", "restore", str(here / "b"), str(here / "r"))]
                if server:
                    pg, moved = fresh_schema(server, "bench"), fresh_schema(server, "bench")
                    steps += [("restore into postgres", "restore", str(here / "b"), pg),
                              ("backup postgres", "backup", pg, str(here / "bp")),
                              ("move kuzu to postgres", "move", str(db), moved)]
                for label, step, src, dst in steps:
                    took, peak = _step(tree, step, src, dst)
                    times.setdefault((name, label), []).append(took)
                    peaks.setdefault((name, label), []).append(peak)
                if round_ == 0:
                    same[f"{name} into kuzu"] = _run(EXPORT, [str(here / "r")], HERE) == want
                    if server:
                        same[f"{name} into postgres"] = _run(EXPORT, [pg], HERE) == want
                        same[f"{name} moved"] = _run(EXPORT, [moved], HERE) == want
                shutil.rmtree(here)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    labels = dict.fromkeys(label for _, label in times)
    print(f"  {'median s / peak MB':<22} " + "".join(f"{n:>22}" for n in trees))
    for label in labels:
        cells = [(statistics.median(times[(n, label)]), statistics.median(peaks[(n, label)]))
                 for n in trees]
        print(f"  {label:<22} " + "".join(f"{t:>12.2f} s {mb:>5.0f} MB" for t, mb in cells))
    for label in labels:
        print(f"  runs, {label}: " + "  ".join(
            f"{n}: " + " ".join(f"{t:.2f}" for t in times[(n, label)]) for n in trees))
    verdict = ", ".join(f"{n}: {'yes' if ok else 'NO'}" for n, ok in same.items())
    print(f"restored stores equal to the original (UMP export): {verdict} "
          f"(load average {os.getloadavg()[0]:.1f} after)")


if __name__ == "__main__":
    main()
