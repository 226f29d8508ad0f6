"""``graphmem ui``: a dashboard on a local store (Kuzu or PostgreSQL), as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner

from graphmem import MemoryStore
from graphmem.cli import cli

from ._servers import interrupt


def _dashboard(db: str) -> tuple[subprocess.Popen[str], str]:
    """``graphmem ui`` on ``db`` as a process, and the line that gives its address."""
    env = {**os.environ, "GRAPHMEM_EMBEDDER": "hashing", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", db, "ui",
                                "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("dashboard: http://127.0.0.1:"), (line, process.stderr)
    return process, line


def test_ui_serves_the_dashboard_of_the_store_until_interrupted(store_location: str
                                                               ) -> None:
    db = store_location
    with MemoryStore(db, embedder="hashing") as store:
        store.add("the orchard runs on PostgreSQL", owner="nadia")
        store.add("tomas keeps bees", owner="tomas")
    process, line = _dashboard(db)
    try:
        url = line.split()[1]
        with httpx.Client(timeout=30) as client:
            assert "graphmem dashboard" in client.get(url).text
            base = url.removesuffix("/ui/")
            login = client.post(base + "/ui/api/login", headers={"Origin": base})
            assert login.status_code == 200 and login.json()["owner"] is None
            overview = client.get(base + "/ui/api/overview").json()
            assert overview["memories"] == 2 and set(overview["by_owner"]) == {"nadia", "tomas"}
    finally:
        ended = interrupt(process, 30)
    assert ended, "the dashboard did not end on Ctrl-C"
    assert process.returncode == 130  # interrupted, as every command reports Ctrl-C
    with MemoryStore(db, embedder="hashing") as store:  # the lock was released
        assert store.stats().memories == 2


def test_ui_refuses_to_listen_beyond_loopback_without_tokens(tmp_path: Path) -> None:
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "db"), "ui", "--host",
                                      "0.0.0.0", "--no-open"])
    assert result.exit_code == 1 and "without tokens" in result.output
    assert time.monotonic() - started < 30


def test_ctrl_c_keeps_a_store_the_dashboard_created(tmp_path: Path) -> None:
    # Ctrl-C is how the dashboard ends (status 130): not a failure whose new store goes
    db = str(tmp_path / "new")
    process, line = _dashboard(db)
    try:
        base = line.split()[1].removesuffix("/ui/")
        added = httpx.post(base + "/v1/memories", json={"text": "keep me"}, timeout=30)
        assert added.status_code == 201, added.text
    finally:
        assert interrupt(process, 30), "the dashboard did not end on Ctrl-C"
    assert process.returncode == 130
    with MemoryStore(db, embedder="hashing") as store:
        assert [m.text for m in store.memories()] == ["keep me"]
