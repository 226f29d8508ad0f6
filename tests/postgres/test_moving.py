"""Moving a store between engines: a Kuzu backup restored into PostgreSQL, a PostgreSQL
backup restored into Kuzu, compared through the UMP export (and the knowledge graph),
and every table as the engine port reads it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore, StoreError
from graphmem._backup import MANIFEST
from graphmem._backup_tables import ENGINE_META, TABLES
from graphmem._engine import EDGE_KINDS, Engine, EventQuery
from graphmem._records import MEMORY_TABLE_FIELDS as MEMORY_FIELDS
from ingest.ump import export_ump, import_ump
from tests.conftest import SAMPLE, Clock


def _everything(store: MemoryStore, path: Path) -> dict[str, object]:
    export_ump(store, path)
    return {"ump": json.loads(path.read_text(encoding="utf-8")),
            "entities": store.entities(), "facts": store.facts(),
            "mentions": sorted(store.mentions(), key=lambda m: (m.memory_id, m.entity_id)),
            "history": {m.id: store.history(m.id) for m in store.memories()},
            "events": store.events(), "stats": store.stats().model_dump(
                exclude={"schema_version"})}


def _tables(engine: Engine) -> dict[str, Any]:
    """Every row of every table of a store, as the port reads it, in one order."""
    scan = engine.scan(MEMORY_FIELDS)
    vectors = [v.tolist() if has else None
               for v, has in zip(scan.vectors, scan.has_vector, strict=True)]  # type: ignore[arg-type]
    entities = [dataclasses.replace(e, mentions=0, first_seen=None, last_seen=None)
                for e in engine.entities(all_owners=True)]  # what the store fills in

    def by(rows: list[Any], *keys: str) -> list[Any]:
        return sorted(rows, key=lambda r: tuple(str(getattr(r, k)) for k in keys))

    return {
        "memories": [{**row, "vector": vector} for row, vector in
                     zip(scan.table.to_pylist(), vectors, strict=True)],
        "versions": engine.versions(), "events": engine.events(EventQuery()),
        "edges": {k: by(engine.edges(k), "src", "dst") for k in EDGE_KINDS},
        "entities": by(entities, "id"), "mentions": by(engine.mentions(), "memory_id",
                                                        "entity_id", "role"),
        "facts": by(engine.facts(all_owners=True), "id"),
        "meta": {k: v for k, v in engine.meta().items() if k not in ENGINE_META},
    }


def test_every_table_moves_through_a_backup_both_ways(tmp_path: Path, pg_url: str,
                                                      clock: Clock) -> None:
    """Kuzu -> backup -> PostgreSQL -> backup -> Kuzu: every row of every table as it was,
    the vectors bit for bit; both backups hold graphmem's tables (format 2)."""
    with MemoryStore(tmp_path / "kuzu", embedder="hashing", clock=clock) as kuzu:
        import_ump(kuzu, SAMPLE)
        first, second = kuzu.memories()[:2]
        kuzu.update(first.id, text="Nadia moved the deploy to Lisbon", owner=first.owner)
        kuzu.recall("deploy")
        kuzu.flush()
        clock.advance(days=200)
        kuzu.run_lifecycle(apply=True)
        kuzu.forget(second.id, confirm=True)
        before = _tables(kuzu._ctx.engine)
        assert all(before[t] for t in ("versions", "events", "entities", "mentions", "facts"))
        assert any(m["prev_status"] for m in before["memories"])
        kuzu.backup(tmp_path / "from-kuzu")
    MemoryStore.restore_backup(tmp_path / "from-kuzu", pg_url)
    with MemoryStore(pg_url, clock=clock) as pg:
        assert _tables(pg._ctx.engine) == before
        pg.backup(tmp_path / "from-pg")
    MemoryStore.restore_backup(tmp_path / "from-pg", tmp_path / "again")
    with MemoryStore(tmp_path / "again", clock=clock) as again:
        assert _tables(again._ctx.engine) == before
    for backup in ("from-kuzu", "from-pg"):
        manifest = json.loads((tmp_path / backup / MANIFEST).read_text())
        assert manifest["format"] == 2
        assert sorted(manifest["files"]) == sorted(t.file for t in TABLES)


def test_kuzu_to_postgres_and_back(tmp_path: Path, pg_url: str, clock: Clock) -> None:
    with MemoryStore(tmp_path / "kuzu", embedder="hashing", clock=clock) as kuzu:
        import_ump(kuzu, SAMPLE)
        first = kuzu.memories()[0]
        kuzu.update(first.id, text="Rewritten: the deploy moved to Lisbon", owner=first.owner)
        kuzu.recall("deploy")
        kuzu.flush()
        clock.advance(days=200)
        kuzu.run_lifecycle(apply=True)
        kuzu.forget(kuzu.memories()[1].id, confirm=True)
        before = _everything(kuzu, tmp_path / "kuzu.json")
        kuzu.backup(tmp_path / "from-kuzu")
    MemoryStore.restore_backup(tmp_path / "from-kuzu", pg_url)
    with MemoryStore(pg_url, clock=clock) as pg:
        assert _everything(pg, tmp_path / "pg.json") == before
        found = [h.memory.id for h in pg.recall("Lisbon deploy", record_access=False)]
        assert first.id in found
        pg.backup(tmp_path / "from-pg")
    MemoryStore.restore_backup(tmp_path / "from-pg", tmp_path / "again")
    with MemoryStore(tmp_path / "again", clock=clock) as again:
        assert _everything(again, tmp_path / "again.json") == before
        # the same store ranks the same on both engines
        assert [h.memory.id for h in again.recall("Lisbon deploy", record_access=False)
                ] == found


def test_restoring_into_a_store_with_memories_is_refused(tmp_path: Path, pg_url: str) -> None:
    with MemoryStore(tmp_path / "kuzu", embedder="hashing") as kuzu:
        kuzu.add("one")
        kuzu.backup(tmp_path / "b")
    with MemoryStore(pg_url, embedder="hashing") as pg:
        pg.add("already here")
    with pytest.raises(StoreError, match="already holds memories"):
        MemoryStore.restore_backup(tmp_path / "b", pg_url)
    with MemoryStore(pg_url) as pg:
        assert [m.text for m in pg.memories()] == ["already here"]


def test_copy_store_moves_every_table_a_page_at_a_time(
        tmp_path: Path, pg_url: str, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kuzu -> PostgreSQL and back through ``copy_store``: every row of every table as it
    was and the keys, each table read and loaded in pages (of two rows here), never
    whole."""
    from graphmem import _backup_tables
    from graphmem._kuzu import KuzuEngine
    from graphmem._postgres import PostgresEngine
    from graphmem._transfer import copy_store

    monkeypatch.setattr(_backup_tables, "BATCH_ROWS", 2)
    with MemoryStore(tmp_path / "kuzu", embedder="hashing", clock=clock) as kuzu:
        import_ump(kuzu, SAMPLE)
        first, second = kuzu.memories()[:2]
        kuzu.update(first.id, text="Nadia moved the deploy to Lisbon", owner=first.owner)
        clock.advance(days=200)
        kuzu.run_lifecycle(apply=True)
        kuzu.forget(second.id, confirm=True)
        source = kuzu._ctx.engine
        before = _tables(source)
        keys = source.secrets()
        assert keys and len(before["memories"]) > 2
        pages: list[tuple[str, int]] = []
        read = type(source).read_table

        def spied(self: Engine, name: Any, *, page: int = 20_000) -> Any:
            for rows in read(self, name, page=page):  # type: ignore[arg-type]
                pages.append((name, rows.num_rows))
                yield rows

        monkeypatch.setattr(type(source), "read_table", spied)
        target = PostgresEngine(pg_url)
        try:
            assert copy_store(source, target) == len(before["memories"])
            monkeypatch.undo()  # the pages of the source, not of the copy back
            assert _tables(target) == before
            assert sorted(target.secrets()) == sorted(keys)
            again = KuzuEngine(str(tmp_path / "again"), buffer_pool_mb=128)
            try:
                copy_store(target, again)
                assert _tables(again) == before
            finally:
                again.close()
        finally:
            target.close()
    assert {name for name, _ in pages} >= {"memories", "versions", "events", "edges"}
    memory_pages = [rows for name, rows in pages if name == "memories"]
    assert len(memory_pages) > 1 and max(memory_pages) <= 2
    assert sum(memory_pages) == len(before["memories"])


def test_a_failed_copy_leaves_the_target_empty(tmp_path: Path, pg_url: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault on the last table (facts) rolls back every table loaded before it."""
    from graphmem._postgres import PostgresEngine
    from graphmem._transfer import copy_store

    with MemoryStore(tmp_path / "kuzu", embedder="hashing") as kuzu:
        import_ump(kuzu, SAMPLE)
        source = kuzu._ctx.engine
        assert source.facts(all_owners=True)
        pages = type(source).read_table

        def failing(self: Engine, name: Any, *, page: int = 20_000) -> Any:
            if name == "facts":
                raise StoreError("the facts could not be read")
            return pages(self, name, page=page)  # type: ignore[arg-type]

        monkeypatch.setattr(type(source), "read_table", failing)
        target = PostgresEngine(pg_url)
        try:
            with pytest.raises(StoreError, match="facts could not be read"):
                copy_store(source, target)
            assert target.memory_count() == 0
            assert not target.versions() and not target.events(EventQuery())
            assert not target.entities(all_owners=True) and not target.secrets()
        finally:
            target.close()
