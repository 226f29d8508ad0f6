"""Schema migrations: a real v1 database, built with v1's DDL, opens under the current code."""

from __future__ import annotations

import json
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
        assert store.stats().schema_version == SCHEMA_VERSION == 3
        old = store.get("urn:v1:0")
        assert (old.text, old.tags, old.entities) == ("Orchard runs on fly.io", ("v1",), ())
        # Kuzu's FTS index is gone (v3); full-text recall finds old rows; new rows carry
        # entities, and rows edited after the migration can be followed by bulk inserts.
        indexes = store.cypher("CALL show_indexes() RETURN *")
        assert not [i for i in indexes if "fts" in json.dumps(i, default=str).lower()]
        hits = store.recall("fly.io", k=1, preset="fulltext", record_access=False)
        assert hits[0].memory.id == "urn:v1:0"
        store.update("urn:v1:1", text="Nadia prefers TypeScript and Rust")
        added = store.add("Orchard deploys with fly", entities=["orchard", "fly.io"])
        assert store.get(added.id).entities == ("orchard", "fly.io")
        assert store.cypher("MATCH (s:Stage) RETURN count(*) AS n") == [{"n": 0}]
    db = Database(str(path), buffer_pool_mb=128, read_only=True)
    try:
        assert schema_version(db) == 3
    finally:
        db.close()


def test_v2_database_with_an_edited_text_is_migrated(tmp_path: Path) -> None:
    """A v2 store (with Kuzu's FTS index) whose indexed text was edited refused every
    later COPY; after the v3 migration drops the index, bulk inserts work again."""
    path = tmp_path / "v2"
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=2) == 2
        assert any("memory_fts" in str(row) for row in db.read("CALL show_indexes() RETURN *"))
    finally:
        db.close()
    with MemoryStore(path, embedder="hashing") as store:
        memory = store.add("Orchard runs on fly.io")
        store.update(memory.id, text="Orchard runs on fly.io in jnb")
        store.add_many([{"text": f"bulk {i}"} for i in range(3)])
        assert store.stats().memories == 4 and store.stats().schema_version == 3
        assert store.cypher("CALL show_indexes() RETURN *") == []
