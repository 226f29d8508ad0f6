"""A one-shot recall against the code before: ``python -m eval.bench_cli --baseline DIR``.

``graphmem --db X recall "..."`` in a fresh process on ``eval.bench_scale``'s store (``n``
memories, built once into ``--cache`` and copied; its recall index file written by a
first open), run by this checkout's code and by ``--baseline`` (a checkout of an earlier
commit, e.g. ``git worktree add --detach ../base 1e97213``: its code on ``PYTHONPATH``),
in alternation (so that both see the same load), beside ``python -c "import graphmem"``.
Each figure is the median of ``--repeats`` (wall and CPU seconds); the two answers are
compared whole (``--json``: ids, scores, explanations, at one ``--now``).

Target (issue 32): one-shot CLI recall on a 100k store <= 2 s wall on the 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ._fresh import CLI, HERE, Run, check_tree, run_fresh, store_copy, tree_env
from .bench_open import OPEN_AND_RECALL
from .bench_scale import cached_store


def _answer(tree: Path, db: str, query: str) -> str:
    # at one pretended time: ACT-R's terms go by the memories' age
    done = subprocess.run([sys.executable, "-m", "graphmem", "--db", db, "--json",
                           "--now", "2027-01-01T00:00:00Z", "recall", query],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, **tree_env(tree)})
    return done.stdout


def _median(runs: list[Run]) -> Run:
    return Run(statistics.median(r.wall for r in runs),
               statistics.median(r.cpu for r in runs), runs[-1].loaded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="a checkout of the code to compare with")
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--query", default="river garden music")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    trees = {"this code": HERE, "baseline": args.baseline.resolve()}
    for tree in trees.values():
        check_tree(tree)
    source = cached_store(args.cache, args.n)
    # a copy of the store for each side, so that each reads the index file its own code
    # wrote (a file of another format is built again, and then written in this one's)
    with store_copy(source, "graphmem-bench-cli-") as mine, \
            store_copy(source, "graphmem-bench-cli-base-") as theirs:
        dbs = {"this code": str(mine), "baseline": str(theirs)}
        for name, tree in trees.items():  # writes each side's index file
            run_fresh(OPEN_AND_RECALL, [dbs[name], args.query], tree_env(tree))
        same = _answer(trees["this code"], dbs["this code"], args.query) == _answer(
            trees["baseline"], dbs["baseline"], args.query)
        print(f"{args.n} memories; one-shot `graphmem --db X recall {args.query!r}`, "
              f"{args.repeats} fresh processes each, in alternation, each side on its own "
              f"copy of the store (load average {os.getloadavg()[0]:.1f} before)")
        runs: dict[str, list[Run]] = {"import graphmem": [], **{name: [] for name in trees}}
        for _ in range(args.repeats):
            runs["import graphmem"].append(run_fresh("import graphmem", [],
                                                     tree_env(trees["this code"])))
            for name, tree in trees.items():
                runs[name].append(run_fresh(CLI, ["--db", dbs[name], "recall", args.query],
                                            tree_env(tree)))
        medians = {name: _median(values) for name, values in runs.items()}
        for name, median in medians.items():
            walls = " ".join(f"{r.wall:.2f}" for r in runs[name])
            print(f"  {name:<16} wall {median.wall:5.2f} s  cpu {median.cpu:5.2f} s   "
                  f"(walls: {walls})  loaded: {median.loaded}")
        now, base = medians["this code"].wall, medians["baseline"].wall
        print(f"one-shot recall {now:.2f} s wall against {base:.2f} s before "
              f"({base - now:+.2f} s), {now - medians['import graphmem'].wall:.2f} s beyond "
              f"the import; the same hits and scores: {'yes' if same else 'NO'}; target "
              f"<= 2 s: {'met' if now <= 2 else 'missed'} (load average "
              f"{os.getloadavg()[0]:.1f} after)")


if __name__ == "__main__":
    main()
