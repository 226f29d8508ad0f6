"""Freed heap goes back to the system after a large index build (glibc keeps it)."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from graphmem import MemoryStore, Settings
from graphmem._store import _recall_index as _component
from graphmem._trim import release_freed_memory


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_are_given_back() -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(4000) for _ in range(50_000)]  # ~200 MB of small blocks
    for block in blocks:
        ctypes.memset(block, 1, 4000)
    for block in blocks[:-1]:  # the last one pins the heap's top: nothing shrinks by itself
        libc.free(block)
    before = _rss_mb()
    assert release_freed_memory()
    after = _rss_mb()
    libc.free(blocks[-1])
    assert before - after > 100, (before, after)


def test_a_large_index_build_gives_its_temporaries_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(_component, "release_freed_memory", lambda: calls.append(1))
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_many([{"text": f"note {i}"} for i in range(30)])
        store.recall("note", k=1)  # below the threshold: nothing asked
        assert calls == []
    monkeypatch.setattr(_component, "_TRIM_FROM", 30)
    built = Settings(persist_index=False)  # a build, not the index read from its file
    with MemoryStore(tmp_path / "db", embedder="hashing", settings=built) as store:
        store.recall("note", k=1)
        store.recall("note", k=1)  # built once, trimmed once
        assert calls == [1]
