"""What must hold after a crash: every memory's state agrees with its last version row,
and every audited transition with a version row written beside it."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphmem import MemoryStore

#: Event types of the lifecycle jobs, and the change type written beside each.
PAIRED = {"promote": "promoted", "archive": "archived", "expire": "tombstoned",
          "tombstone": "tombstoned"}


def snapshot(store: MemoryStore) -> dict[str, tuple[Any, ...]]:
    """id -> (status, kind, hot, importance rounded) for every memory."""
    return {m.id: (m.status.value, m.kind.value, m.hot, round(m.importance, 6))
            for m in store.memories()}


def assert_consistent(store: MemoryStore) -> None:
    data = store.export()
    memories = {m["id"]: m for m in data["memories"] + data["tombstoned"]}
    last: dict[str, dict[str, Any]] = {}
    for version in data["versions"]:
        current = last.get(version["memory_id"])
        if current is None or version["seq"] > current["seq"]:
            last[version["memory_id"]] = version
    for memory_id, memory in memories.items():
        version = last[memory_id]
        assert version["seq"] == memory["version"], memory_id
        assert (version["status"], version["kind"]) == (memory["status"], memory["kind"]), \
            f"{memory_id}: state {memory['status']}/{memory['kind']} but last version " \
            f"{version['status']}/{version['kind']}"
    versions = {(v["memory_id"], v["change_type"], v["at"]) for v in data["versions"]}
    paired_events = [e for e in data["events"] if e["event_type"] in PAIRED]
    for event in paired_events:
        key = (event["memory_id"], PAIRED[event["event_type"]], event["timestamp"])
        assert key in versions, f"event without its version row: {event}"
    events = {(e["memory_id"], PAIRED[e["event_type"]], e["timestamp"]) for e in paired_events}
    for version in data["versions"]:
        if version["change_type"] in PAIRED.values():
            key = (version["memory_id"], version["change_type"], version["at"])
            assert key in events, f"version row without its event: {version}"


def assert_vectors_logged(store: MemoryStore) -> None:
    """The vector log holds every vector as the ``vec`` column does (Kuzu stores)."""
    engine: Any = store._ctx.engine
    ids = [r[0] for r in engine.db.read("MATCH (m:Memory) RETURN m.id ORDER BY m.id")]
    where = {memory_id: row for row, memory_id in enumerate(ids)}
    logged = engine._journal.vectors.read(where, len(ids))
    assert logged is not None, "the vector log of a killed writer cannot be read"
    column = engine._vector_pages(ids, where, len(ids), np.float32, paged=True)
    np.testing.assert_array_equal(logged[1], column[1])
    np.testing.assert_array_equal(logged[0][logged[1]], column[0][column[1]])
