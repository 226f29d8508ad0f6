"""A second process opening a database held by another gets a clear GraphmemError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphmem import MemoryStore, StoreLockedError

PROBE = """
import sys
from graphmem import MemoryStore, GraphmemError
try:
    MemoryStore(sys.argv[1], read_only=sys.argv[2] == "ro")
except GraphmemError as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
print("opened")
"""


def test_second_process_gets_store_locked_error(store: MemoryStore) -> None:
    store.add("held by this process")
    for mode in ("rw", "ro"):
        out = subprocess.run([sys.executable, "-c", PROBE, store.path, mode],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 3, out.stderr
        assert out.stdout.startswith(StoreLockedError.__name__)
        assert "in use by another process" in out.stdout
        assert "Traceback" not in out.stderr


def test_readers_share_a_database_nobody_writes(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("shared")
    with MemoryStore(path, read_only=True):
        out = subprocess.run([sys.executable, "-c", PROBE, str(path), "ro"],
                             capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "opened", out.stdout + out.stderr
