"""Moving a store between engines: a Kuzu backup restored into PostgreSQL, a PostgreSQL
backup restored into Kuzu, compared through the UMP export (and the knowledge graph)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem import MemoryStore, StoreError
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
