"""What the start-up benchmarks share: a throwaway copy of a cached store, and timing
``python -c CODE`` in fresh interpreters (wall and CPU seconds, the heavy modules it
loaded), each figure the median of a few runs."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

#: A one-shot ``graphmem`` command: ``run_fresh(CLI, ["--db", db, "recall", "..."])``.
CLI = "import sys\nfrom graphmem.cli import main\nsys.argv[0] = 'graphmem'\nmain()\n"
HEAVY = ("torch", "sentence_transformers", "transformers", "pandas", "networkx", "scipy",
         "httpx", "onnxruntime")
_PROBE = ("import atexit, sys\n"
          f"HEAVY = {HEAVY!r}\n"
          "atexit.register(lambda: print('loaded:', ' '.join(m for m in HEAVY "
          "if m in sys.modules) or '-', file=sys.stderr))\n")


#: The checkout this code runs from (``tree_env`` puts another one's code first).
HERE = Path(__file__).resolve().parents[1]


def tree_env(tree: Path) -> dict[str, str]:
    """``tree``'s code first on the path; never the working directory's (``-c`` and
    ``-m`` would put it first: run from a checkout, both sides would run its code)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join([str(tree), *rest]), "PYTHONSAFEPATH": "1"}


def check_tree(tree: Path) -> None:
    """Refuse a checkout whose interpreter would import another checkout's graphmem."""
    done = subprocess.run([sys.executable, "-c", "import graphmem; print(graphmem.__file__)"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, **tree_env(tree)})
    if not Path(done.stdout.strip()).is_relative_to(tree):
        raise SystemExit(f"{tree} does not run its own code: {done.stdout.strip()}")


class Run(NamedTuple):
    wall: float
    cpu: float
    #: the modules of ``HEAVY`` the process had imported when it ended
    loaded: str


@contextmanager
def store_copy(source: Path, prefix: str = "graphmem-bench-") -> Iterator[Path]:
    """A copy of the store at ``source`` (so that runs never touch the cache and each
    starts from the same state), removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        shutil.copytree(source, work / "db")
        yield work / "db"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_fresh(code: str, args: list[str], env: Mapping[str, str] | None = None) -> Run:
    """Run ``code`` in a fresh interpreter (with ``env`` over this one's environment)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PROBE + code, *args], capture_output=True,
                          text=True, check=False, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    loaded = next((line.split(":", 1)[1].strip() for line in done.stderr.splitlines()
                   if line.startswith("loaded:")), "?")
    return Run(wall, cpu, loaded)


def median_fresh(label: str, repeats: int, code: str, args: list[str],
                 env: Mapping[str, str] | None = None) -> Run:
    """The median wall and CPU seconds of ``repeats`` fresh runs, printed under ``label``."""
    runs = [run_fresh(code, args, env) for _ in range(repeats)]
    median = Run(statistics.median(r.wall for r in runs),
                 statistics.median(r.cpu for r in runs), runs[-1].loaded)
    print(f"  {label:<52} wall {median.wall:5.2f} s  cpu {median.cpu:5.2f} s  "
          f"loaded: {median.loaded}", flush=True)
    return median
