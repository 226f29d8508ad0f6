"""The faces on PostgreSQL: ``--db postgresql://...`` (or ``GRAPHMEM_DB``) in real CLI
processes, named queries answered and ad-hoc Cypher refused with a message that says what
to use, backups both ways; two
``graphmem serve`` processes and CLI commands writing to one store at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from graphmem import MemoryStore, UnsupportedError
from graphmem.cli import cli
from graphmem.client import Client
from tests._servers import free_port
from tests.conftest import SAMPLE


def gm(db: str, *args: str, env: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", "--db", db, "--embedder",
                           "hashing", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def gm_here(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """What ``gm`` runs, in this process (Click's runner): for commands whose process of
    their own another call already covers."""
    result = CliRunner().invoke(cli, ["--db", db, "--embedder", "hashing", *args])
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_the_cli_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    assert gm(pg_url, "init").returncode == 0
    out = gm(pg_url, "import", "ump", str(SAMPLE))
    assert out.returncode == 0 and "created 301" in out.stdout
    memory_id = gm(pg_url, "add", "Nadia moved standup to Wednesday").stdout.strip()
    assert memory_id.startswith("urn:graphmem:")
    env = {**os.environ, "GRAPHMEM_DB": pg_url}
    hits = subprocess.run([sys.executable, "-m", "graphmem", "--json", "recall",
                           "standup Wednesday", "-k", "3"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert json.loads(hits.stdout)[0]["memory"]["id"] == memory_id
    assert json.loads(gm(pg_url, "--json", "stats").stdout)["memories"] == 302
    refused = gm(pg_url, "query", "MATCH (m:Memory) RETURN count(*)")
    assert refused.returncode == 1
    assert "ad-hoc Cypher needs the Kuzu engine" in refused.stderr
    assert "named query" in refused.stderr and "Traceback" not in refused.stderr
    named = gm(pg_url, "--json", "query", "kinds_by_status")
    assert named.returncode == 0, named.stderr
    assert sum(row["memories"] for row in json.loads(named.stdout)) == 302
    assert gm(pg_url, "backup", str(tmp_path / "b")).returncode == 0
    restored = gm(str(tmp_path / "kuzu"), "restore-backup", str(tmp_path / "b"))
    assert restored.returncode == 0, restored.stderr
    assert json.loads(gm(str(tmp_path / "kuzu"), "--json", "stats").stdout)["memories"] == 302


def _serve(db: str, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}
    env.pop("GRAPHMEM_TOKENS_FILE", None)
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", db, "serve",
                               "--port", str(port), "--log-level", "warning"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return server
        except httpx.TransportError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise AssertionError(server.stderr.read() if server.stderr else "") from None
            time.sleep(0.1)


def test_two_sidecars_and_the_cli_write_one_store(pg_url: str) -> None:
    ports = [free_port(), free_port()]
    servers = [_serve(pg_url, port) for port in ports]
    try:
        clients = [Client(f"http://127.0.0.1:{port}") for port in ports]

        def through(n: int, i: int) -> str:
            return clients[n].add(f"sidecar {n} note {i}, tag s{n}x{i}", owner="ann").id

        def by_cli(i: int) -> str:
            out = gm(pg_url, "add", f"command line note {i}, tag c{i}", "--owner", "ann")
            assert out.returncode == 0, out.stderr
            return out.stdout.strip()

        with ThreadPoolExecutor(6) as pool:
            sent = [pool.submit(through, n, i) for i in range(12) for n in (0, 1)]
            typed = [pool.submit(by_cli, i) for i in range(3)]
            written = {f"s{n}x{i}": sent[2 * i + n].result() for i in range(12)
                       for n in (0, 1)}
            written |= {f"c{i}": typed[i].result() for i in range(3)}
        assert len(set(written.values())) == 27
        # each sidecar recalls what the other and the command line wrote
        for n, client in enumerate(clients):
            for tag, memory_id in written.items():
                if tag.startswith(f"s{n}"):
                    continue
                hits = client.recall(tag, k=1, owner="ann", preset="fulltext",
                                     record_access=False)
                assert [h.memory.id for h in hits] == [memory_id], (n, tag)
        with pytest.raises(UnsupportedError, match="needs the Kuzu engine"):
            clients[0].cypher("MATCH (m:Memory) RETURN count(*)")
        named = httpx.post(f"http://127.0.0.1:{ports[1]}/v1/queries/recent_memories",
                           json={"params": {"limit": 100}})
        assert named.status_code == 200
        assert {row["id"] for row in named.json()["rows"]} == set(written.values())
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=60)
    with MemoryStore(pg_url, read_only=True) as store:
        assert {m.id for m in store.memories(owner="ann")} == set(written.values())
        assert store.stats().memories == 27
