"""Schema migrations: a real v1 database, built with v1's DDL, opens under the current code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from graphmem import MemoryStore
from graphmem._kuzu import SCHEMA_VERSION, Database
from graphmem._kuzu._schema import ensure_schema, schema_version


def _v1_database(path: Path) -> None:
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=1) == 1
        created = datetime(2026, 6, 1, tzinfo=UTC)
        for i, text in enumerate(["Orchard runs on fly.io", "Nadia prefers TypeScript"]):
            db.run_auto(
                "CREATE (m:Memory {id: $id, kind: 'semantic', status: 'active', hot: false, "
                "text: $text, tags: ['v1'], importance: 0.5, original_importance: 0.5, "
                "confidence: 1.0, created: $at, modified: $at, access_count: 0, "
                "useful_count: 0, ignored_count: 0, version: 1, visibility: 'private', "
                "provenance: '{}', integrity: '{}', ump: '{}', text_sha256: ''})",
                {"id": f"urn:v1:{i}", "text": text, "at": created})
        db.run_auto("MERGE (m:Meta {key: 'embedder_spec'}) SET m.value = 'hashing'")
        db.run_auto("MERGE (m:Meta {key: 'embedder_name'}) SET m.value = 'hashing-384'")
    finally:
        db.close()


def test_v1_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v1"
    _v1_database(path)
    with MemoryStore(path) as store:
        assert store.stats().schema_version == SCHEMA_VERSION == 2
        old = store.get("urn:v1:0")
        assert (old.text, old.tags, old.entities) == ("Orchard runs on fly.io", ("v1",), ())
        # The full-text index survived the ALTER TABLE, and new rows carry entities.
        assert [i for i, _ in store._graph.fulltext("fly.io", 5)] == ["urn:v1:0"]
        added = store.add("Orchard deploys with fly", entities=["orchard", "fly.io"])
        assert store.get(added.id).entities == ("orchard", "fly.io")
        assert store.cypher("MATCH (s:Stage) RETURN count(*) AS n") == [{"n": 0}]
    db = Database(str(path), buffer_pool_mb=128, read_only=True)
    try:
        assert schema_version(db) == 2
    finally:
        db.close()
