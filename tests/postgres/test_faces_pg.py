"""The faces on PostgreSQL: ``--db postgresql://...`` (or ``GRAPHMEM_DB``) in real CLI
processes, Cypher refused with a message that says what to use, backups both ways."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SAMPLE


def gm(db: str, *args: str, env: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", "--db", db, "--embedder",
                           "hashing", *args], capture_output=True, text=True, timeout=300,
                          env=env)


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
    assert "Cypher needs the Kuzu engine" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert gm(pg_url, "backup", str(tmp_path / "b")).returncode == 0
    restored = gm(str(tmp_path / "kuzu"), "restore-backup", str(tmp_path / "b"))
    assert restored.returncode == 0, restored.stderr
    assert json.loads(gm(str(tmp_path / "kuzu"), "--json", "stats").stdout)["memories"] == 302
