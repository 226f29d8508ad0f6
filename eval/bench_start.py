"""Starting fast: ``python -m eval.bench_start``.

What a one-shot command and a new sidecar pay before they answer, on a 10k-memory store
(``eval.bench_scale``'s, built once into ``--cache``):

* ``import graphmem`` in a fresh process, and which heavy modules that loaded;
* a one-shot ``graphmem --db X recall "..."``: wall and CPU seconds (median of
  ``--repeats``), with plain ``minilm`` (fp32 on ONNX Runtime, the default) against
  ``--embedder minilm:torch`` (the same model on torch, what every command ran before:
  the baseline), and which heavy modules the command loaded;
* ``graphmem serve``: seconds until ``/healthz`` answers, then the first ``add`` and
  ``recall`` against the median of the next ones (a sidecar that loaded its model and
  index before it said it was healthy answers its first request as fast as the rest).

Target: one-shot recall <= 1.5 s wall on the 2-core machine. Wall time counts what other
processes take from the machine; CPU time is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ._fresh import CLI, median_fresh, store_copy
from .bench_scale import cached_store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sidecar(db: Path, repeats: int) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_TOKENS_FILE"}
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", str(db), "serve",
                               "--port", str(port), "--log-level", "warning"], env=env)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            while True:
                if server.poll() is not None:
                    raise SystemExit(f"the sidecar exited with status {server.returncode}")
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            healthy = time.perf_counter() - started
            times: dict[str, list[float]] = {"add": [], "recall": []}
            for i in range(repeats + 1):
                for op, path, body in (
                        ("add", "/v1/memories", {"text": f"start benchmark note {i} river"}),
                        ("recall", "/v1/memories/retrieve",
                         {"query": f"river garden music {i}", "k": 10, "explain": False})):
                    t = time.perf_counter()
                    client.post(path, json=body).raise_for_status()
                    times[op].append((time.perf_counter() - t) * 1000)
        print(f"  graphmem serve: healthy after {healthy:.2f} s")
        for op, values in times.items():
            rest = statistics.median(values[1:])
            print(f"    first {op:<6} {values[0]:7.1f} ms   next {repeats}: median "
                  f"{rest:6.1f} ms   first / next {values[0] / rest:5.1f}x")
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--query", default="river garden music")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "graphmem-bench")
    args = parser.parse_args()
    with store_copy(cached_store(args.cache, args.n), "graphmem-bench-start-") as db:
        # the sidecar below adds memories: the cache is never touched
        print(f"{args.n} memories; median of {args.repeats} fresh processes each "
              f"(load average {os.getloadavg()[0]:.1f})")
        median_fresh("python -c 'import graphmem'", args.repeats, "import graphmem", [])
        base = median_fresh("recall --embedder minilm:torch (baseline)", args.repeats, CLI,
                            ["--db", str(db), "--embedder", "minilm:torch", "recall",
                             args.query]).wall
        fast = median_fresh("recall (minilm: ONNX Runtime, the default)", args.repeats, CLI,
                            ["--db", str(db), "recall", args.query]).wall
        print(f"  one-shot recall: {fast:.2f} s wall against {base:.2f} s "
              f"({base / fast:.1f}x faster; target <= 1.5 s)")
        sidecar(db, args.repeats)

if __name__ == "__main__":
    main()
