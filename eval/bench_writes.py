"""Small writes on a big store: ``python -m eval.bench_writes [--n 100000]``.

Builds (once, then reuses from ``--cache``) a store of ``n`` memories whose texts are two
or three sentences about people, places and organisations of five owners, so that the
rules extract a realistic knowledge graph (about three facts a memory), with the hashing
embedder (no write measured here embeds). Then, on a copy, with the recall index loaded
(as in a sidecar), the p50 of ``update(importance=...)``, ``feedback`` and ``tombstone``
against a plain ``get`` of the same memory (target: within 3x), beside the floor: the
engine's bare commit of one field, which every write pays; and of ``update(text=...)``,
which takes another memory's text (its knowledge graph extracted again) (``_writes_probe``).

``--baseline DIR`` (a checkout of an earlier commit) measures its code too, each side in
a fresh process on its own copy of the store, in alternating ``--rounds``.
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
import time
from pathlib import Path

from graphmem import MemoryStore, Settings
from graphmem.algorithms import engine_of

from ._fresh import HERE, check_tree, store_copy, tree_env
from ._writes_probe import CPU_OPS, OPS, probe
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


def build(path: Path, n: int, cache: Path | None = None, chunk: int = 1000) -> None:
    """``n`` memories in ``chunk``-sized ``add_many`` calls, going on from the memories an
    interrupted build left at ``path`` (each call is one transaction: whole, or not
    there), with the same texts as a build in one go."""
    rng = random.Random(7)
    started = time.perf_counter()
    # the environment's settings, as the probe's store takes them: a big build wants a
    # bigger buffer pool (GRAPHMEM_BUFFER_POOL_MB)
    with MemoryStore(path, embedder="hashing", settings=Settings.from_env()) as store:
        done = store.stats().memories
        for _ in range(done):
            _text(rng)
        if done:
            print(f"  going on from {done} memories", flush=True)
        for first in range(done, n, chunk):
            store.add_many([{"id": f"urn:w:{i:07d}", "text": _text(rng),
                             "owner": OWNERS[i % len(OWNERS)]}
                            for i in range(first, min(n, first + chunk))])
            print(f"  {min(n, first + chunk)} memories, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)


def _ids(n: int, samples: int, rounds: int) -> list[list[str]]:
    """Each round's memories (``_writes_probe.probe``'s), none used twice."""
    per = 4 * samples + 1
    chosen = [f"urn:w:{i:07d}" for i in random.Random(5).sample(range(n), per * rounds)]
    return [chosen[r * per:(r + 1) * per] for r in range(rounds)]


def _run(tree: Path, db: Path, ids: list[str]) -> dict[str, float]:
    """``_writes_probe`` in a fresh process on ``tree``'s code."""
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("_writes_probe.py")),
                           str(db), json.dumps(ids)], capture_output=True, text=True,
                          check=False, env={**os.environ, **tree_env(tree)})
    if done.returncode:
        raise SystemExit(f"{tree}: failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _line(name: str, figures: dict[str, float]) -> str:
    get = figures["get"]
    return f"  {name:<10} " + "  ".join(
        f"{op} {figures[op]:.2f}" + ("" if op == "get" else f" ({figures[op] / get:.1f}x)")
        for op in OPS) + f"   (cpu: get {figures['cpu get']:.2f}, update " \
        f"{figures['cpu update(importance=...)']:.2f})"


def _table(results: dict[str, list[dict[str, float]]]) -> None:
    names = list(results)
    print("p50 in ms, median over rounds (x: against get of the same memory; "
          "floor: the engine's bare commit of one field; cpu: the process's CPU time)")
    print(f"  {'':<28}" + "".join(f"{name:>22}" for name in names))
    for op in (*OPS, *CPU_OPS):
        cells = []
        base = "cpu get" if op.startswith("cpu") else "get"
        for name in names:
            value = statistics.median(r[op] for r in results[name])
            get = statistics.median(r[base] for r in results[name])
            cells.append(f"{value:8.2f} ms" + ("" if op == base else f" {value / get:5.1f}x"))
        print(f"  {op:<28}" + "".join(f"{cell:>22}" for cell in cells))


def store_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark on this module's store: its size, the cache that keeps
    it, the rounds and the checkout compared with."""
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of the code to compare with, in alternating rounds")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench-writes")
    parser.add_argument("--chunk", type=int, default=1000,
                        help="memories a transaction when the store is built (an "
                             "interrupted build goes on where it stopped)")


def compared(args: argparse.Namespace) -> tuple[dict[str, Path], Path]:
    """The checkouts measured (this code, and ``--baseline``), each checked to run its
    own code, and this module's store of ``--n`` memories (built on first use)."""
    trees = {"this code": HERE}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    for tree in trees.values():
        check_tree(tree)
    return trees, cached_store(args.cache, args.n, name="writes", resume=True,
                               builder=lambda path, n, cache: build(path, n, cache,
                                                                    chunk=args.chunk))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    store_arguments(parser)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--in-place", action="store_true",
                        help="write the cached store itself, not a copy (a store too big "
                             "to copy on this disk; later runs measure a store that took "
                             "these writes); this code alone")
    args = parser.parse_args()
    if args.in_place and args.baseline is not None:
        parser.error("--in-place measures this code alone: leave out --baseline")
    trees, cached = compared(args)
    rounds = _ids(args.n, args.samples, args.rounds)
    with contextlib.ExitStack() as stack:
        # writes change a store: each side writes its own copy
        dbs = {"this code": cached} if args.in_place else {
            name: stack.enter_context(store_copy(cached, "graphmem-bench-writes-"))
            for name in trees}
        # the copies reach the disk before anything is timed: written back meanwhile,
        # they made each commit's fdatasync wait (the floor 7.8 ms against 1.9, measured)
        os.sync()
        with MemoryStore(dbs["this code"], embedder="hashing") as store:
            facts = len(engine_of(store).facts(all_owners=True))
            print(f"{store.stats().memories} memories, {facts} facts; {args.samples} "
                  f"calls each a round, load average {os.getloadavg()[0]:.1f} before")
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for number, ids in enumerate(rounds, 1):
            print(f"round {number}")
            for name, tree in trees.items():
                figures = _run(tree, dbs[name], ids) if len(trees) > 1 \
                    else probe(dbs[name], ids)
                results[name].append(figures)
                print(_line(name, figures), flush=True)
        _table(results)
        print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
