"""The sidecar under load: ``python -m eval.bench_server``.

Builds (once, cached) a 10k-memory store embedded with MiniLM, serves it with
``graphmem serve`` on 127.0.0.1 in its own process, and runs 8 concurrent clients for
60 s: 80% recalls (``POST /v1/memories/retrieve``, default preset) and 20% writes
(``POST /v1/memories``). Prints requests/s, p50/p99 latency per operation and errors,
then stops the server and checks that every acknowledged write is in the store.

Baseline, in the same script: the same mix by 8 threads calling the embedded store in
this process (no HTTP), for the same time; the ratios say what the HTTP face costs.
Targets: 0 errors, no acknowledged write lost.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from graphmem import MemoryStore, Settings

from .bench_recall import build, percentile, synthetic

WRITE_SHARE = 0.2


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"recall": [],
                                                                       "write": []})
    errors: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, op: str, ms: float, memory_id: str | None = None) -> None:
        with self.lock:
            self.latencies[op].append(ms)
            if memory_id:
                self.acknowledged.append(memory_id)

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


def _mix(seconds: float, clients: int, queries: list[str],
         do_recall: Callable[[int, str], None], do_write: Callable[[int, str], str]) -> Tally:
    """``clients`` threads, each a loop of recalls and writes until the time is up."""
    tally = Tally()
    deadline = time.monotonic() + seconds

    def worker(n: int) -> None:
        rng = random.Random(n)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            started = time.perf_counter()
            try:
                if rng.random() < WRITE_SHARE:
                    memory_id = do_write(n, f"load client {n} note {i}: {rng.choice(queries)}")
                    tally.record("write", (time.perf_counter() - started) * 1000, memory_id)
                else:
                    do_recall(n, rng.choice(queries))
                    tally.record("recall", (time.perf_counter() - started) * 1000)
            except Exception as exc:  # counted, reported, never fatal to the run
                tally.error(f"{type(exc).__name__}: {exc}"[:200])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def cached_store(cache: Path, size: int) -> Path:
    """The ``size``-memory store (MiniLM) under ``cache``, built on first use."""
    cached = cache / f"store-{size}"
    if not cached.exists():
        print(f"building a {size}-memory store (MiniLM embeddings) in {cached} ...")
        partial = cached.with_name(cached.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        build(partial, size)
        partial.rename(cached)  # an interrupted build is never mistaken for a cache
    return cached


def _report(label: str, tally: Tally, seconds: float) -> float:
    total = sum(len(v) for v in tally.latencies.values())
    rate = total / seconds
    print(f"{label}: {total} requests in {seconds:.0f} s = {rate:.1f} req/s, "
          f"errors {len(tally.errors)}")
    for op, values in tally.latencies.items():
        if values:
            print(f"  {op:<6} n={len(values):>6}  p50 {percentile(values, 50):7.1f} ms  "
                  f"p99 {percentile(values, 99):7.1f} ms")
    for message in sorted(set(tally.errors))[:5]:
        print(f"  error: {message}")
    return rate


def _wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with status {server.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit("the server did not come up in 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--port", type=int, default=4391)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir())
                        / "graphmem-bench-server")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.size)
    workdir = Path(tempfile.mkdtemp(prefix="graphmem-bench-server-"))
    db = workdir / "db"
    shutil.copytree(cached, db)
    records, _ = synthetic(args.size)
    queries = [" ".join(r["text"].split()[:6]) for r in records[:: max(1, args.size // 500)]]
    url = f"http://127.0.0.1:{args.port}"
    print(f"serving {args.size} memories on {url}: {args.clients} clients, {args.seconds:.0f} s, "
          f"{1 - WRITE_SHARE:.0%} recalls / {WRITE_SHARE:.0%} writes")
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_TOKENS_FILE"}
    server = subprocess.Popen([sys.executable, "-m", "graphmem.cli", "--db", str(db), "serve",
                               "--port", str(args.port), "--log-level", "warning"], env=env)
    try:
        _wait_healthy(url, server)
        clients = [httpx.Client(base_url=url, timeout=60) for _ in range(args.clients)]

        def http_recall(n: int, query: str) -> None:
            clients[n].post("/v1/memories/retrieve", json={
                "query": query, "k": 10, "explain": False}).raise_for_status()

        def http_write(n: int, text: str) -> str:
            response = clients[n].post("/v1/memories", json={"text": text})
            response.raise_for_status()
            return str(response.json()["id"])

        clients[0].post("/v1/memories/retrieve", json={"query": "warm up"})
        started = time.perf_counter()
        tally = _mix(args.seconds, args.clients, queries, http_recall, http_write)
        http_rate = _report("HTTP sidecar", tally, time.perf_counter() - started)
        for client in clients:
            client.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
    with MemoryStore(db, settings=Settings()) as store:
        present = {m.id for m in store.get_many(tally.acknowledged)}
        lost = len(tally.acknowledged) - len(present)
        print(f"acknowledged writes: {len(tally.acknowledged)}, present after restart: "
              f"{len(present)}, lost: {lost}; store now holds {store.stats().memories}")

        def local_recall(_: int, query: str) -> None:
            store.recall(query, k=10)

        def local_write(_: int, text: str) -> str:
            return store.add(text).id

        store.recall("warm up")
        started = time.perf_counter()
        baseline = _mix(args.seconds, args.clients, queries, local_recall, local_write)
        local_rate = _report("baseline, embedded store in-process (no HTTP)", baseline,
                             time.perf_counter() - started)
    p50_ratio = (percentile(tally.latencies["recall"], 50)
                 / percentile(baseline.latencies["recall"], 50))
    print(f"HTTP / in-process throughput: {http_rate / local_rate:.2f}x; HTTP recall p50 "
          f"{p50_ratio:.2f}x the in-process p50")
    shutil.rmtree(workdir, ignore_errors=True)
    if tally.errors or lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
