"""Starting fast: what a one-shot command loads, Arrow rows without pandas, and a sidecar
that is ready before it says it is healthy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from graphmem import MemoryStore, StoreError
from graphmem._arrow import RowReader, array_of, numbers, offsets, strings, to_pylist, vector_array

from ._servers import free_port, wait_healthy

HEAVY = ("torch", "sentence_transformers", "pandas", "networkx", "scipy", "httpx")
REPORT = ("import atexit, json, sys\n"
          f"atexit.register(lambda: print(json.dumps([m for m in {HEAVY!r} "
          "if m in sys.modules]), file=sys.stderr))\n")


def _loaded(code: str, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRAPHMEM_SIDECAR_URL", "GRAPHMEM_DB")}
    done = subprocess.run([sys.executable, "-c", REPORT + code, *args], capture_output=True,
                          text=True, check=True, env={**env, "GRAPHMEM_EMBEDDER": "hashing"})
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def test_import_and_a_one_shot_recall_load_no_heavy_module(tmp_path: Path) -> None:
    assert _loaded("import graphmem") == []
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add_many([f"note {i} about the orchard deploy" for i in range(50)])
    cli = "import sys\nfrom graphmem.cli import main\nsys.argv[0] = 'graphmem'\nmain()\n"
    assert _loaded(cli, "--db", str(db), "recall", "orchard deploy") == []
    # and the modules this checks for are real ones that do get loaded when used
    assert _loaded("import graphmem\ngraphmem.connect('http://127.0.0.1:1')") == ["httpx"]


#: graphmem's own modules a recall never runs (the extractors, the fact patterns, the
#: learning's training, backups, named queries): imported on first use
LAZY = ("graphmem._extract", "graphmem._kg._patterns", "graphmem._kg._ollama",
        "graphmem._learn._forecast", "graphmem._learn._ranker", "graphmem._backup",
        "graphmem.named", "graphmem.client")


def _own(code: str, *args: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Which of ``LAZY`` a fresh process running ``code`` had imported when it ended."""
    report = ("import atexit, json, sys\n"
              f"atexit.register(lambda: print(json.dumps([m for m in {LAZY!r} "
              "if m in sys.modules]), file=sys.stderr))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRAPHMEM_SIDECAR_URL", "GRAPHMEM_DB")}
    done = subprocess.run([sys.executable, "-c", report + code, *args], capture_output=True,
                          text=True, check=False, env={**env, "GRAPHMEM_EMBEDDER": "hashing"})
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded, done


def test_a_one_shot_recall_imports_none_of_what_it_never_runs(tmp_path: Path) -> None:
    """``import graphmem`` and a one-shot ``graphmem recall`` leave the extractors,
    training, backups and named queries unimported; they still come on first use. The
    command ends without tearing the interpreter down, yet its exit handlers run, its
    output is whole and its exit status is kept."""
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add_many([f"note {i} about the orchard deploy" for i in range(50)])
    assert _own("import graphmem")[0] == []
    cli = "import sys\nfrom graphmem.cli import main\nsys.argv[0] = 'graphmem'\nmain()\n"
    loaded, done = _own(cli, "--db", str(db), "recall", "orchard deploy", "-k", "50")
    assert loaded == [] and done.returncode == 0
    assert len(done.stdout.splitlines()) == 52  # the header, its rule and 50 hits
    loaded, done = _own(cli, "--db", str(tmp_path / "missing"), "recall", "orchard")
    assert done.returncode == 1 and done.stderr.startswith("error: no graphmem database")
    assert _own(cli, "--db", str(db), "recall")[1].returncode == 2  # a usage error
    used = ("import graphmem\nassert graphmem.RuleExtractor().extract('I moved to Oslo')\n"
            "assert 'LearnReport' in dir(graphmem) and graphmem.LearnReport\n")
    assert _own(used)[0] == ["graphmem._extract", "graphmem._kg._patterns"]


def test_arrow_offsets_past_2_gib_are_an_error_not_a_wrap() -> None:
    """Arrow's string and list offsets are int32: a batch whose values pass 2**31 - 1
    bytes (or items) is refused with the size, not written with offsets that wrapped
    (which read other rows' values, or fail far from the cause)."""
    big = np.full(3, 2**30, dtype=np.int64)
    with pytest.raises(StoreError, match=r"3221225472 bytes or items.*smaller batches"):
        offsets(big)
    assert offsets(np.full(2, 2**30 - 1)).tolist() == [0, 2**30 - 1, 2**31 - 2]
    assert offsets([]).tolist() == [0]
    # the builders go through it
    assert strings(["ab", None, "é"]).to_pylist() == ["ab", None, "é"]
    assert array_of([[1], None, [2, 3]], pa.list_(pa.int64())).to_pylist() == [[1], None,
                                                                             [2, 3]]
    wide = np.broadcast_to(np.float32(1.0), (3, 2**30))  # no 12 GB: refused before a copy
    with pytest.raises(StoreError, match="smaller batches"):
        vector_array(wide, np.ones(3, dtype=bool), 3)


def test_arrow_rows_are_pyarrows_own_values() -> None:
    when = [datetime(2024, 5, 7, 12, 30, 1, 250, tzinfo=UTC), None,
            datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)]
    table = pa.table({
        "id": ["a", "b", "c"],
        "at": pa.array(when, pa.timestamp("us", tz="UTC")),
        "naive": pa.array([w.replace(tzinfo=None) if w else None for w in when],
                          pa.timestamp("ns")),
        "times": pa.array([[when[0], when[2]], None, []], pa.list_(pa.timestamp("us",
                                                                                tz="UTC"))),
        "score": [1.5, None, -2.0],
        "tags": [["x"], [], None],
    })
    for part in (table, table.slice(1, 2), pa.concat_tables([table.slice(0, 1),
                                                             table.slice(1)])):
        assert to_pylist(part) == part.to_pylist()
        for batch in part.to_batches():
            reader = RowReader(batch)
            assert [reader.row(i) for i in range(batch.num_rows)] == batch.to_pylist()
    assert to_pylist(table.slice(0, 0)) == []
    assert numbers(table.column("score")).tolist() == [1.5, 0.0, -2.0]
    assert numbers(pa.chunked_array([], type=pa.float32())).tolist() == []
    assert numbers(table.slice(2).column("score"), "float32").tolist() == [-2.0]


def test_serve_loads_the_model_and_index_before_it_listens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from graphmem import sidecar

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add("the orchard deploy runs on fly.io")
    events: list[tuple[str, bool]] = []
    real_warm = MemoryStore.warm

    def warm(self: MemoryStore) -> None:
        real_warm(self)
        events.append(("warm", self._recall_index.current is not None))

    def run(self: uvicorn.Server, sockets: object = None) -> None:
        events.append(("listen", True))

    monkeypatch.setattr(MemoryStore, "warm", warm)
    monkeypatch.setattr(uvicorn.Server, "run", run)
    sidecar.serve(tmp_path / "db", port=free_port(), embedder="hashing")
    assert events == [("warm", True), ("listen", True)]


def test_sigterm_stops_the_sidecar_cleanly(tmp_path: Path) -> None:
    import httpx

    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("the first note")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    server = subprocess.Popen([sys.executable, "-m", "graphmem", "--db", str(db), "serve",
                               "--port", str(port), "--log-level", "warning"],
                              env={**env, "GRAPHMEM_EMBEDDER": "hashing"},
                              stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        for i in range(20):
            httpx.post(f"{url}/v1/memories", json={"text": f"note {i}"}).raise_for_status()
    finally:
        server.terminate()
        code = server.wait(timeout=60)
    # it closed the store: exit status 0, the log checkpointed away, no discovery file
    assert code == 0, server.stderr.read() if server.stderr else ""
    assert not (db / "graph.kuzu.wal").exists() or (db / "graph.kuzu.wal").stat().st_size == 0
    assert not Path(f"{db}.sidecar.json").exists()
    with MemoryStore(db, embedder="hashing") as store:
        assert store.stats().memories == 21
