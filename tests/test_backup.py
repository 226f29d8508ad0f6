"""Backups: a round trip equal through the export (of a store on disk and of one in
memory), refusals that leave nothing behind, and a legacy backup (format 1, Kuzu's
export) of an older schema restored and migrated."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore, SchemaVersionError, StoreError
from graphmem._backup import MANIFEST, _hashes
from graphmem._backup_tables import TABLE_VERSION, TABLES
from graphmem._kuzu import SCHEMA_VERSION, Database
from graphmem.cli import cli
from tests.test_migrations import _v1_database


def _export(store: MemoryStore) -> str:
    """The export without the time it was generated."""
    return json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)


def _busy(store: MemoryStore) -> None:
    """Versions, events, accesses, feedback, an archive and a tombstone."""
    hits = store.recall("deploy orchard", k=5)
    store.feedback(hits[0].memory.id, useful=True)
    ids = [m.id for m in store.memories() if m.status.value == "active"][:3]
    store.update(ids[0], text="edited before the backup")
    store.archive(ids[1], reason="manual")
    store.tombstone(ids[2])
    store.run_lifecycle(apply=True)


def test_round_trip_is_identical_through_the_export(sample_store: MemoryStore,
                                                    tmp_path: Path) -> None:
    _busy(sample_store)
    before = _export(sample_store)
    info = sample_store.backup(tmp_path / "backup")
    assert (info.format, info.schema_version) == (2, TABLE_VERSION)
    assert info.memories == sample_store.stats().memories
    assert info.embedder_fingerprint  # recall above fixed the model
    manifest = json.loads((tmp_path / "backup" / MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(t.file for t in TABLES)
    restored = MemoryStore.restore_backup(tmp_path / "backup", tmp_path / "restored")
    assert restored.memories == info.memories
    with MemoryStore(tmp_path / "restored", embedder="hashing") as copy:
        assert _export(copy) == before
        assert [h.memory.id for h in copy.recall("deploy orchard", k=5)] == \
            [h.memory.id for h in sample_store.recall("deploy orchard", k=5)]
        copy.add("written after the restore")  # the copy is a working store
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup", "restored", "sample"]


def test_refusals_leave_nothing_behind(store: MemoryStore, tmp_path: Path) -> None:
    store.add("one memory")
    backup = tmp_path / "backup"
    store.backup(backup)
    with pytest.raises(StoreError, match="already exists and is not empty"):
        store.backup(backup)
    # a backup's directories are made; one inside the store's own is refused
    assert store.backup(tmp_path / "made" / "for" / "it").memories == store.stats().memories
    for inside in (Path(store.path) / "copy", Path(store.path)):
        with pytest.raises(StoreError, match="is inside the store at"):
            store.backup(inside)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(StoreError, match="already exists and is not empty"):
        MemoryStore.restore_backup(backup, occupied)
    assert [p.name for p in occupied.iterdir()] == ["keep.txt"]
    with pytest.raises(StoreError, match=r"has no graphmem-backup\.json"):
        MemoryStore.restore_backup(tmp_path, tmp_path / "new")
    with pytest.raises(StoreError, match="does not exist"):
        MemoryStore.restore_backup(tmp_path / "nowhere", tmp_path / "new")
    with pytest.raises(StoreError, match="does not exist; create it first"):
        MemoryStore.restore_backup(backup, tmp_path / "no" / "such" / "db")
    with pytest.raises(StoreError, match="in-memory store would be gone"):
        MemoryStore.restore_backup(backup, ":memory:")
    # damaged and incomplete backups are refused by name
    victim = backup / "data" / "memories.parquet"
    original = victim.read_bytes()
    victim.write_bytes(original[:-8] + b"\0" * 8)
    with pytest.raises(StoreError, match=r"damaged: data/memories\.parquet"):
        MemoryStore.restore_backup(backup, tmp_path / "new")
    victim.unlink()
    with pytest.raises(StoreError, match=r"incomplete: data/memories\.parquet is missing"):
        MemoryStore.restore_backup(backup, tmp_path / "new")
    victim.write_bytes(original)
    manifest = json.loads((backup / MANIFEST).read_text())
    (backup / MANIFEST).write_text(json.dumps({**manifest, "schema_version": 99}))
    with pytest.raises(SchemaVersionError, match="newer than this graphmem"):
        MemoryStore.restore_backup(backup, tmp_path / "new")
    (backup / MANIFEST).write_text("{not json")
    with pytest.raises(StoreError, match="not a valid backup manifest"):
        MemoryStore.restore_backup(backup, tmp_path / "new")
    assert not (tmp_path / "new").exists() and not Path(":memory:").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_store_in_memory_is_backed_up_and_restored(tmp_path: Path) -> None:
    with MemoryStore(":memory:", embedder="hashing") as memory:
        first = memory.add("Nadia moved the orchard deploy to Lisbon").id
        memory.update(first, text="Nadia moved the orchard deploy to Porto")
        memory.link(first, memory.add("The harvest calendar lives in Notion").id)
        before = _export(memory)
        info = memory.backup(tmp_path / "backup")
    assert (info.memories, info.versions) == (2, 3)
    MemoryStore.restore_backup(tmp_path / "backup", tmp_path / "restored")
    with MemoryStore(tmp_path / "restored", embedder="hashing") as copy:
        assert _export(copy) == before
        assert copy.entities()


def test_an_older_schema_backup_is_migrated_on_restore(tmp_path: Path) -> None:
    _v1_database(tmp_path / "v1")
    backup = tmp_path / "backup"
    backup.mkdir()
    db = Database(str(tmp_path / "v1"), buffer_pool_mb=128)
    try:
        db.export_to(backup / "data")
    finally:
        db.close()
    (backup / MANIFEST).write_text(json.dumps({
        "created": "2026-06-01T00:00:00+00:00", "schema_version": 1, "embedder": "hashing-384",
        "embedder_fingerprint": None, "memories": 2, "versions": 0, "events": 0,
        "files": _hashes(backup / "data"), "format": 1}))
    MemoryStore.restore_backup(backup, tmp_path / "restored")
    with MemoryStore(tmp_path / "restored", embedder="hashing") as store:
        assert store.stats().schema_version == SCHEMA_VERSION
        assert store.get("urn:v1:0").text == "Orchard runs on fly.io"


def test_cli_backup_and_both_restores(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "db")
    base = ["--db", db, "--embedder", "hashing"]
    added = runner.invoke(cli, [*base, "add", "to be archived"])
    memory_id = added.output.strip()
    assert runner.invoke(cli, [*base, "archive", memory_id]).exit_code == 0
    with MemoryStore(db, embedder="hashing") as store:
        before = _export(store)
        stats = store.stats()
    result = runner.invoke(cli, [*base, "--json", "backup", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    # What it wrote: the manifest it printed, every listed file with its checksum, counts.
    printed = json.loads(result.output)
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text())
    assert {k: v for k, v in printed.items() if k not in ("path", "bytes", "forgotten")} == manifest
    assert printed["path"] == str(tmp_path / "b")
    assert (manifest["memories"], manifest["versions"], manifest["events"]) == \
        (1, stats.versions, stats.events) and stats.events >= 1
    assert manifest["schema_version"] == TABLE_VERSION and manifest["format"] == 2
    assert manifest["embedder"] == "hashing-384"
    assert manifest["files"] == _hashes(tmp_path / "b" / "data")
    assert printed["bytes"] == sum(p.stat().st_size for p in (tmp_path / "b" / "data").iterdir())
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["data", MANIFEST]
    result = runner.invoke(cli, [*base, "backup", str(tmp_path / "b2")])
    assert result.output.startswith(f"backed up {db} to {tmp_path / 'b2'}: 1 memories, "
                                    f"{stats.versions} versions, {stats.events} events, "
                                    f"format 2, tables v{TABLE_VERSION}, "), result.output
    result = runner.invoke(cli, [*base, "restore", memory_id])  # a memory id: lifecycle
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["--db", str(tmp_path / "copy"), "restore",
                                 str(tmp_path / "b")])
    assert result.exit_code == 0 and "restored" in result.output, result.output
    with MemoryStore(tmp_path / "copy", embedder="hashing") as copy:
        assert copy.get(memory_id).status.value == "archived"  # as backed up
        assert _export(copy) == before  # the restore equals the store when backed up
    result = runner.invoke(cli, ["--db", str(tmp_path / "copy"), "restore",
                                 str(tmp_path / "b")])
    assert result.exit_code == 1 and "already exists" in result.output


def test_a_backup_right_after_a_recall_holds_its_accesses(store: MemoryStore,
                                                          tmp_path: Path) -> None:
    """Recall counts accesses in the background; a backup writes them first (it used to
    wait 30 s for a writer blocked by its own lock, then leave them out)."""
    first = store.add("orchard deploys on fridays").id
    store.recall("orchard", k=1, record_access=True)
    started = time.perf_counter()
    store.backup(tmp_path / "b")
    assert time.perf_counter() - started < 10
    MemoryStore.restore_backup(tmp_path / "b", tmp_path / "copy")
    with MemoryStore(tmp_path / "copy", embedder="hashing") as copy:
        assert copy.get(first).access_count == 1
        assert _export(copy) == _export(store)


def test_backup_refuses_a_target_that_is_a_link(store: MemoryStore, tmp_path: Path) -> None:
    store.add("one memory")
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(StoreError, match="is a symbolic link"):
        store.backup(tmp_path / "link")
    assert list((tmp_path / "empty").iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]
