"""A field write on Kuzu (``update(importance=...)``, ``feedback``, ``tombstone``) is one
statement committed alone: the memory's fields, its version row, its event and the
change-ring row, without BEGIN and COMMIT of their own (``Database.write_alone``). When
a statement fails, nothing of it is written; when the ring row it expects is missing, it
writes nothing and the write goes through a transaction as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import GraphmemError, MemoryStore
from graphmem._kuzu._db import Database
from tests.conftest import record_calls


@pytest.fixture
def kuzu_store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_many([{"id": f"m:{i}", "text": f"memory number {i}"} for i in range(4)])
        yield store


def _statements(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements run on the write connection from now on."""
    db: Database = store._ctx.engine.db  # type: ignore[attr-defined]
    seen: list[str] = []
    original = Database._execute

    def execute(self: Database, conn: Any, query: str, params: Any) -> Any:
        if conn is db._write_conn:
            seen.append(query)
        return original(self, conn, query, params)

    monkeypatch.setattr(Database, "_execute", execute)
    return seen


def _ring(store: MemoryStore) -> Any:
    return store._ctx.engine._journal  # type: ignore[attr-defined]


def test_a_field_write_is_one_statement(kuzu_store: MemoryStore,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store = kuzu_store
    mark = store._ctx.engine.change_mark()
    seen = _statements(store, monkeypatch)
    opened = record_calls(monkeypatch, Database, "write")
    store.update("m:0", importance=0.9)
    store.feedback("m:1", useful=True)
    store.tombstone("m:2", reason="outdated")
    assert len(seen) == 3 and not opened, seen
    for query, parts in zip(seen, [["Version"], ["Version", "LifecycleEvent"],
                                   ["Version", "LifecycleEvent"]], strict=True):
        assert all(f":{p} {{" in query for p in parts) and "Change" in query, query
    changes = store._ctx.engine.changes_since(mark)
    assert changes is not None and [c.ids for c in changes] == [("m:0",), ("m:1",), ("m:2",)]
    assert [v.seq for v in store.history("m:2")] == [1, 2]
    assert [e.event_type.value for e in store.events(memory_id="m:2")] == ["tombstone"]


def test_a_ring_row_thought_missing_fails_whole(kuzu_store: MemoryStore) -> None:
    """The engine creates a ring row it has not seen: were it there, the statement would
    fail and write nothing, and the ring would be read again for the next write."""
    store = kuzu_store
    ring = _ring(store)
    ring.SLOTS = 2  # every slot is taken after two writes
    store.update("m:0", importance=0.3)
    store.update("m:1", importance=0.6)
    ring._slots = set()  # the next write creates a ring row that is there: it fails
    mark = store._ctx.engine.change_mark()
    with pytest.raises(GraphmemError):
        store.update("m:0", importance=0.7)
    assert [v.seq for v in store.history("m:0")] == [1, 2]
    assert store.get("m:0").importance == 0.3
    assert store._ctx.engine.changes_since(mark) == []
    assert ring._slots is None  # read again before the next write
    # (no next write here: Kuzu 0.11.3 may refuse writes to the rows a failed statement
    # set, with a write-write conflict, for a while; this process writes the ring alone,
    # so it knows which rows it holds)


def test_a_ring_row_thought_there_falls_back(kuzu_store: MemoryStore,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store = kuzu_store
    ring = _ring(store)
    ring._slots = set(range(ring.SLOTS))  # the next slot's row is missing: no row matches
    mark = store._ctx.engine.change_mark()
    seen = _statements(store, monkeypatch)
    opened = record_calls(monkeypatch, Database, "write")
    store.tombstone("m:3")
    assert len(opened) == 1, "it did not fall back"
    assert [v.seq for v in store.history("m:3")] == [1, 2]
    assert [e.event_type.value for e in store.events(memory_id="m:3")] == ["tombstone"]
    changes = store._ctx.engine.changes_since(mark)
    assert changes is not None and [c.ids for c in changes] == [("m:3",)]
    seen.clear()
    store.update("m:3", importance=0.2)  # the ring was read again: alone once more
    assert len(seen) == 1 and len(opened) == 1, seen
