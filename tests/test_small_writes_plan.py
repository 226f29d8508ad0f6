"""A small write on Kuzu finds the memories and entities it touches by key: no
statement it runs scans the Memory or Entity table (``UNWIND $rows AS r MATCH (m:Memory
{id: r.from})`` did, a cross product of two scans, 4 s for one text update's mentions at
100k memories), so its cost does not grow with the store."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from graphmem import Edge, MemoryStore
from graphmem._kuzu._db import Database
from graphmem.algorithms import engine_of
from graphmem.engines import KuzuEngine

_SCAN = re.compile(r"(?<![A-Z_])SCAN_NODE_TABLE\[\d+\]")


def _scans_a_big_table(plan: str) -> bool:
    """Whether the drawn plan holds a full scan of Memory or Entity (each operator is a
    box; the boxes of a row stand side by side, its table two lines under its name)."""
    lines = plan.splitlines()
    for number, line in enumerate(lines):
        for found in _SCAN.finditer(line):
            box = slice(max(0, found.start() - 8), found.end() + 24)
            if any(re.search(r"Tables: (Memory|Entity)\b", below[box])
                   for below in lines[number + 1:number + 4]):
                return True
    return False


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every statement written through a transaction, with its parameters."""
    seen: list[tuple[str, dict[str, Any]]] = []
    run, many = Database._execute, Database._execute_many

    def execute(self: Database, conn: Any, query: str, params: Mapping[str, Any]) -> Any:
        if conn is self._write_conn and params:
            seen.append((query, dict(params)))
        return run(self, conn, query, params)

    def execute_many(self: Database, conn: Any, query: str,
                     param_sets: Sequence[Mapping[str, Any]]) -> None:
        seen.extend((query, dict(p)) for p in param_sets[:1])
        many(self, conn, query, param_sets)

    monkeypatch.setattr(Database, "_execute", execute)
    monkeypatch.setattr(Database, "_execute_many", execute_many)
    return seen


def test_small_writes_find_what_they_touch_by_key(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        first = store.add("Caroline works at Acme Inc. in Lisbon.", owner="ana").id
        seen = _statements(monkeypatch)
        second = store.add("Caroline moved to Porto in 2024 with Melanie.", owner="ana").id
        store.update(first, text="Caroline left Acme Inc. and joined Globex in Berlin.")
        store.link(first, second)
        store.link_many([Edge("co_occurs", first, second)])
        monkeypatch.undo()
        db = engine_of(store).db if isinstance(engine_of(store), KuzuEngine) else None
        assert db is not None
        written = {query: params for query, params in seen}
        for table in ("MENTIONS", "FACT", "HAS_VERSION", "REFERENCES", "CO_OCCURS"):
            assert any(f":{table}" in q and "CREATE" in q for q in written), table
        # (a MERGE of an edge scans Memory behind a semi-mask of its two ends: Kuzu reads
        # those two alone)
        scans = [query for query, params in written.items() if "MERGE (a)" not in query
                 and _scans_a_big_table(db.read("EXPLAIN " + query, params)[0][0])]
    assert scans == []
