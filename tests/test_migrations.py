"""Schema migrations: real v1 and v2 databases, built with their own DDL and holding data,
open under the current code; databases it must not touch are refused, and left as they were."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from graphmem import (
    ConflictError,
    GraphmemError,
    HashingEmbedder,
    MemoryStore,
    SchemaVersionError,
)
from graphmem._derive import TextItem, derive_fields, new_memory, sha256
from graphmem._embed import embed_memories
from graphmem._input import MemoryInput
from graphmem._kuzu import SCHEMA_VERSION, Database
from graphmem._kuzu._rows import arrow_rows, memory_params, version_params
from graphmem._kuzu._schema import (
    FACT_TYPES_V8,
    MEMORY_TYPES_V3,
    SCHEMAS,
    VERSION_TYPES,
    ensure_schema,
    schema_version,
)
from graphmem._models import ChangeType

CREATED = datetime(2026, 6, 1, tzinfo=UTC)
EDITED = datetime(2026, 6, 2, tzinfo=UTC)
DUSK = "The greenhouse pump runs at dusk"


def _v1_database(path: Path) -> None:
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=1) == 1
        for i, text in enumerate(["Orchard runs on fly.io", "Nadia prefers TypeScript"]):
            db.run_auto(
                "CREATE (m:Memory {id: $id, kind: 'semantic', status: 'active', hot: false, "
                "text: $text, tags: ['v1'], importance: 0.5, original_importance: 0.5, "
                "confidence: 1.0, created: $at, modified: $at, access_count: 0, "
                "useful_count: 0, ignored_count: 0, version: 1, visibility: 'private', "
                "provenance: '{}', integrity: '{}', ump: '{}', text_sha256: ''})",
                {"id": f"urn:v1:{i}", "text": text, "at": CREATED})
        db.run_auto("MERGE (m:Meta {key: 'embedder_spec'}) SET m.value = 'hashing'")
        db.run_auto("MERGE (m:Meta {key: 'embedder_name'}) SET m.value = 'hashing-384'")
    finally:
        db.close()


def _version(path: Path) -> int | None:
    db = Database(str(path), buffer_pool_mb=128, read_only=True)
    try:
        return schema_version(db)
    finally:
        db.close()


def test_v1_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v1"
    _v1_database(path)
    with MemoryStore(path) as store:
        assert store.stats().schema_version == SCHEMA_VERSION == 10
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
    assert _version(path) == SCHEMA_VERSION


V2_TEXTS = ["Orchard runs on fly.io", "The greenhouse pump runs at dawn",
            "Nadia prefers TypeScript"]


def _copy_memories(db: Database, records: list[dict[str, object]]) -> None:
    """Insert memories with their first version rows by COPY, as v2's ``add_many`` did."""
    embedder = HashingEmbedder(384)
    items = [MemoryInput.parse(r) for r in records]
    derived = derive_fields(functools.partial(embed_memories, embedder),
                            [TextItem(i.subject, i.text, i.context) for i in items])
    new = [new_memory(i, d, now=CREATED) for i, d in zip(items, derived, strict=True)]
    rows = [memory_params(n) for n in new]
    versions = [version_params(n.version) for n in new]
    with db.write() as tx:
        tx.copy("Memory", arrow_rows(rows, MEMORY_TYPES_V3))
        tx.copy("Version", arrow_rows(versions, VERSION_TYPES))
        tx.copy("HAS_VERSION", pa.table({"from": [r["id"] for r in rows],
                                         "to": [v["id"] for v in versions]}))


def _v2_database(path: Path) -> None:
    """A v2 store as v2 left it: Kuzu's FTS index over subject and text, three memories
    bulk-inserted, and (in a later session) one memory's text edited with its version row.
    In that state every later COPY into Memory failed: checked here, so the fixture is
    the state the migration must repair."""
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=2) == 2
        assert any("memory_fts" in str(row) for row in db.read("CALL show_indexes() RETURN *"))
        _copy_memories(db, [{"id": f"urn:v2:{i}", "text": t, "owner": "nadia"}
                            for i, t in enumerate(V2_TEXTS)])
        db.run_auto("MERGE (m:Meta {key: 'embedder_spec'}) SET m.value = 'hashing'")
        db.run_auto("MERGE (m:Meta {key: 'embedder_name'}) SET m.value = 'hashing-384'")
    finally:
        db.close()
    db = Database(str(path), buffer_pool_mb=128)
    try:
        with db.write() as tx:  # the edit of an indexed column
            tx.run("MATCH (m:Memory {id: 'urn:v2:1'}) SET m.text = $t, m.version = 2, "
                   "m.modified = $at, m.text_sha256 = $h",
                   {"t": DUSK, "at": EDITED, "h": sha256(DUSK)})
            tx.run("MATCH (m:Memory {id: 'urn:v2:1'}) CREATE (m)-[:HAS_VERSION]->(:Version "
                   "{id: 'urn:v2:1#v2', memory_id: m.id, seq: 2, change_type: 'manual_edit', "
                   "at: $at, text: m.text, text_sha256: m.text_sha256, "
                   "importance: m.importance, status: m.status, "
                   "kind: m.kind, redacted: false})", {"at": EDITED})
        assert db.read("CALL QUERY_FTS_INDEX('Memory', 'memory_fts', 'dusk') "
                       "RETURN node.id") == [["urn:v2:1"]]
        with pytest.raises(ConflictError):  # v2's trap: a COPY after the edit fails
            _copy_memories(db, [{"id": f"urn:v2:bulk{i}", "text": f"bulk {i}"}
                                for i in range(3)])
    finally:
        db.close()


def test_v2_database_with_an_edited_text_is_migrated(tmp_path: Path) -> None:
    """A v2 store (with Kuzu's FTS index) whose indexed text was edited refused every
    later COPY; after the v3 migration drops the index, bulk inserts work again."""
    path = tmp_path / "v2"
    _v2_database(path)
    assert _version(path) == 2
    with MemoryStore(path) as store:
        assert store.stats().schema_version == SCHEMA_VERSION
        assert store.cypher("CALL show_indexes() RETURN *") == []
        assert [m.text for m in store.memories()] == [
            V2_TEXTS[0], "The greenhouse pump runs at dusk", V2_TEXTS[2]]
        edited = store.get("urn:v2:1")
        assert (edited.owner, edited.version, edited.modified) == ("nadia", 2, EDITED)
        assert [(v.seq, v.change_type, v.text) for v in store.history("urn:v2:1")] == [
            (1, ChangeType.CREATED, "The greenhouse pump runs at dawn"),
            (2, ChangeType.MANUAL_EDIT, "The greenhouse pump runs at dusk")]
        found = store.recall("dusk", k=3, preset="fulltext", record_access=False)
        assert [h.memory.id for h in found] == ["urn:v2:1"]
        # 100 rows: more than a small write, so this is a COPY, the statement v2 refused
        bulk = store.add_many([{"text": f"bulk {i}", "owner": "nadia"} for i in range(100)])
        store.update("urn:v2:0", text="Orchard runs on fly.io in jnb")
        more = store.add_many([{"text": f"more {i}"} for i in range(100)])
        assert store.stats().memories == 203 and len(bulk) == len(more) == 100
        assert store.stats().versions == 203 + 2
    assert _version(path) == SCHEMA_VERSION


def test_an_old_schema_opened_read_only_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "v1"
    _v1_database(path)
    with pytest.raises(SchemaVersionError, match="schema version 1 and needs a migration "
                                                 f"to {SCHEMA_VERSION}; open it once read-write"):
        MemoryStore(path, read_only=True)
    assert _version(path) == 1
    with MemoryStore(path) as store:  # read-write, it migrates
        assert store.stats().schema_version == SCHEMA_VERSION


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("written by a newer graphmem")
    db = Database(str(path), buffer_pool_mb=128)
    try:
        db.run_auto("MATCH (m:Meta {key: 'schema_version'}) SET m.value = $v",
                    {"v": str(SCHEMA_VERSION + 1)})
    finally:
        db.close()
    for read_only in (False, True):
        with pytest.raises(SchemaVersionError, match=f"schema version {SCHEMA_VERSION + 1}, "
                           f"newer than this graphmem understands \\({SCHEMA_VERSION}\\); "
                           "upgrade"):
            MemoryStore(path, read_only=read_only)
    assert _version(path) == SCHEMA_VERSION + 1


def test_a_database_not_made_by_graphmem_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign"
    db = Database(str(path), buffer_pool_mb=128)
    try:
        db.run_auto("CREATE NODE TABLE Person(name STRING PRIMARY KEY)")
        db.run_auto("CREATE (:Person {name: 'Nadia'})")
    finally:
        db.close()
    with pytest.raises(SchemaVersionError, match="holds tables but no graphmem schema"):
        MemoryStore(path, embedder="hashing")
    db = Database(str(path), buffer_pool_mb=128, read_only=True)
    try:  # nothing was added to it
        assert [r[0] for r in db.read("CALL show_tables() RETURN name")] == ["Person"]
    finally:
        db.close()


def test_an_empty_database_opened_read_only_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    Database(str(path), buffer_pool_mb=128).close()
    with pytest.raises(SchemaVersionError, match="is empty and was opened read-only"):
        MemoryStore(path, read_only=True)


def test_v3_database_with_edges_is_migrated(tmp_path: Path) -> None:
    """v4 marks edges gone instead of deleting them: a v3 store's edges get the column
    and stay visible, and forgetting one of their ends works, again and again."""
    path = tmp_path / "v3"
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=3) == 3
        _copy_memories(db, [{"id": f"urn:v3:{i}", "text": f"note {i}"} for i in range(3)])
        for a, b, table in (("urn:v3:1", "urn:v3:0", "REFERENCES"),
                            ("urn:v3:2", "urn:v3:0", "SUPERSEDES"),
                            ("urn:v3:1", "urn:v3:2", "CO_OCCURS")):
            db.run_auto(f"MATCH (a:Memory {{id: $a}}), (b:Memory {{id: $b}}) "
                        f"CREATE (a)-[:{table}]->(b)", {"a": a, "b": b})
        db.run_auto("MERGE (m:Meta {key: 'embedder_spec'}) SET m.value = 'hashing'")
        db.run_auto("MERGE (m:Meta {key: 'embedder_name'}) SET m.value = 'hashing-384'")
    finally:
        db.close()
    with MemoryStore(path) as store:
        assert store.stats().schema_version == SCHEMA_VERSION
        assert store.stats().edges == {"references": 1, "co_occurs": 1, "supersedes": 1}
        store.forget("urn:v3:0", confirm=True)
        store.forget("urn:v3:2", confirm=True)
        assert store.stats().edges == {"references": 0, "co_occurs": 0, "supersedes": 0}
    assert _version(path) == SCHEMA_VERSION


def test_the_schema_is_made_in_one_transaction_and_a_half_made_one_is_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed while the schema was made statement by statement (a SIGTERM at a
    new store's first write) left tables and no version row, and no later open got past
    "Meta already exists in catalog". Now a failure leaves the database empty, and a
    schema left half made by an older graphmem is finished when the store opens."""
    half = tmp_path / "half"
    db = Database(str(half), buffer_pool_mb=128)
    try:
        for statement in SCHEMAS[SCHEMA_VERSION][:3]:
            db.run_auto(statement)
    finally:
        db.close()
    with MemoryStore(half, embedder="hashing") as store:
        memory = store.add("The greenhouse pump runs at dusk")
        assert [h.memory.id for h in store.recall("greenhouse pump", k=1)] == [memory.id]
    assert _version(half) == SCHEMA_VERSION
    failing = tmp_path / "failing"
    broken = [*SCHEMAS[SCHEMA_VERSION][:5], "CREATE NODE TABLE Bad(x NOT_A_TYPE)"]
    monkeypatch.setitem(SCHEMAS, SCHEMA_VERSION, broken)
    with pytest.raises(GraphmemError):
        MemoryStore(failing, embedder="hashing")
    db = Database(str(failing), buffer_pool_mb=128, read_only=True)
    try:  # nothing of it was kept
        assert db.read("CALL show_tables() RETURN name") == []
    finally:
        db.close()


def _as_v8(path: Path) -> None:
    """Lay the store's FACT table out as v8 did (``sources`` a list of ids, in its old
    column place) and record version 8."""
    db = Database(str(path), buffer_pool_mb=128)
    try:
        rows = db.read_arrow("MATCH (a:Entity)-[f:FACT]->(b:Entity) RETURN a.id AS `from`, "
                             "b.id AS `to`, " + ", ".join(f"f.{c} AS {c}" for c in FACT_TYPES_V8))
        lists = pa.array([json.loads(t) for t in rows.column("sources").to_pylist()],
                         pa.list_(pa.string()))
        rows = rows.set_column(rows.schema.get_field_index("sources"), "sources", lists)
        with db.write() as tx:
            tx.run("DROP TABLE FACT")
            tx.run("CREATE REL TABLE FACT(FROM Entity TO Entity, "
                   + ", ".join(f"{c} {t}" for c, t in FACT_TYPES_V8.items()) + ")")
            tx.copy("FACT", rows)
            tx.run("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '8'")
    finally:
        db.close()


def test_v8_facts_take_their_sources_as_text_and_stay_found_by_memory(tmp_path: Path) -> None:
    """v9 keeps a fact's sources as JSON text (a list property made Kuzu's checkpoint
    after one new fact cost 75 s at 159k facts): a v8 store's facts come through the
    migration whole, and a memory's facts are still found by its id (forget leaves none),
    an id with quotes and commas in it too."""
    path = tmp_path / "v8"
    odd = 'urn:"odd","id"'
    with MemoryStore(path, embedder="hashing") as store:
        store.add("Ana works at Acme in Lisbon.", id="urn:plain", owner="o")
        store.add("Ana works at Acme in Lisbon. Bo lives in Porto.", id=odd, owner="o")
        before = sorted((f.subject, f.predicate, f.object, f.sources)
                        for f in store.facts(owner="o"))
    assert any(odd in sources for *_, sources in before)
    _as_v8(path)
    assert _version(path) == 8
    with MemoryStore(path, embedder="hashing") as store:
        assert store.stats().schema_version == SCHEMA_VERSION == 10
        after = sorted((f.subject, f.predicate, f.object, f.sources)
                       for f in store.facts(owner="o"))
        assert after == before
        store.forget(odd, confirm=True)
        left = [f.sources for f in store.facts(owner="o")]
        assert left and all(odd not in sources for sources in left)
        store.add("Dana Silva lives in Oslo.", id="urn:new", owner="o")
    with MemoryStore(path, embedder="hashing") as store:  # opens again as it was left
        assert {s for f in store.facts(owner="o") for s in f.sources} == {"urn:plain",
                                                                         "urn:new"}


def test_a_v9_migration_cut_short_is_finished_when_the_store_opens_again(
        tmp_path: Path) -> None:
    """The new FACT table is filled beside the old one and takes its place in a step of
    its own: a process killed while filling it (the new table holds fewer rows) or
    after the old one went (only the new one left) loses no fact."""
    from graphmem._kuzu._schema import _FACT_NEW, _FACT_TABLE

    facts: dict[str, list[tuple[str, str, str, tuple[str, ...]]]] = {}
    for cut in ("filling", "renaming"):
        path = tmp_path / cut
        with MemoryStore(path, embedder="hashing") as store:
            for n, city in enumerate(["Oslo", "Lima", "Cork"]):
                store.add(f"Dana Silva lives in {city}. Bo Lund works at Globex.",
                          id=f"urn:{n}", owner="o")
            facts[cut] = sorted((f.subject, f.predicate, f.object, f.sources)
                                for f in store.facts(owner="o"))
        _as_v8(path)
        db = Database(str(path), buffer_pool_mb=128)
        try:
            if cut == "filling":  # one row of the new table written, then killed
                db.run_auto(_FACT_TABLE.replace("TABLE FACT(", f"TABLE {_FACT_NEW}(", 1))
                db.run_auto(f"MATCH (a:Entity), (b:Entity) WITH a, b LIMIT 1 "
                            f"CREATE (a)-[:{_FACT_NEW} {{id: 'half', sources: '[]'}}]->(b)")
            else:  # the old table dropped and the new one not yet renamed
                from graphmem._kuzu._schema import _migrate_facts

                _migrate_facts(db)
                db.run_auto(f"ALTER TABLE FACT RENAME TO {_FACT_NEW}")
        finally:
            db.close()
        with MemoryStore(path, embedder="hashing") as store:
            assert store.stats().schema_version == SCHEMA_VERSION
            assert sorted((f.subject, f.predicate, f.object, f.sources)
                          for f in store.facts(owner="o")) == facts[cut]
            tables = {r[0] for r in store._ctx.engine.db.read("CALL show_tables() RETURN name")}
            assert _FACT_NEW not in tables


def test_v9_ring_of_lists_becomes_one_text_per_row(tmp_path: Path) -> None:
    """v10 keeps what a write changed as one text per ring row: a v9 store's ring (four
    lists per row) is made again, a mark of v9's ring is no longer caught up from (a
    recall index saved at it rebuilds), and the new ring follows every write after."""
    from graphmem._kuzu import KuzuEngine
    from graphmem._kuzu._schema import CHANGE_TYPES_V9, _node_table

    from .test_change_ring import follows_an_update_and_a_forget

    path = tmp_path / "v9"
    with MemoryStore(path, embedder="hashing") as store:
        ids = [store.add(f"note {i} about the harbour").id for i in range(3)]
    db = Database(str(path), buffer_pool_mb=128)
    try:
        db.run_auto("DROP TABLE Change")
        db.run_auto(_node_table("Change", CHANGE_TYPES_V9))
        for seq in (1, 2, 3):
            db.run_auto("CREATE (c:Change {slot: $s, seq: $s, tag: 't', ids: [$id], "
                        "edge_ends: [], removed: [], accessed: [], bulk: false})",
                        {"s": seq, "id": ids[seq - 1]})
        db.run_auto("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '9'")
    finally:
        db.close()
    with MemoryStore(path, embedder="hashing") as store:
        assert store.stats().schema_version == SCHEMA_VERSION == 10
        engine = store._ctx.engine
        assert isinstance(engine, KuzuEngine)
        columns = [r[0] for r in engine.db.read("CALL table_info('Change') RETURN name")]
        assert columns == ["slot", "seq", "tag", "body"]
        assert engine.changes_since("2:t") is None
        assert engine.change_mark().startswith("4:")
        follows_an_update_and_a_forget(store, ids[1], ids[2])
    assert _version(path) == SCHEMA_VERSION
