"""The tables of a backup (format 2) are untrusted input: a damaged, truncated or foreign
file, a tampered column or row, is refused with a StoreError that names the file (and
the record), and nothing is left behind: no directory, no scratch, no half-written
store.

Every hostile backup has a manifest rewritten to match (an attacker who can edit the
files can edit their checksums too).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem import InvalidInputError, MemoryStore
from graphmem._backup import MANIFEST
from graphmem._backup_tables import TABLES

from .test_files_backup import (
    FAST,
    Boom,
    export_of,
    fails_cleanly,
    refused,
    restore_flipped,
)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A small busy store's backup (versions, an edge, an archive, entities and a fact)
    and the store's export."""
    base = tmp_path_factory.mktemp("original")
    with MemoryStore(base / "db", embedder="hashing") as store:
        a = store.add("Nadia moved the orchard deploy to Lisbon").id
        b = store.add("The harvest calendar lives in Notion").id
        c = store.add("Tomas prefers TypeScript").id
        store.update(a, text="Nadia moved the orchard deploy to Porto")
        store.link(a, b)
        store.archive(c, reason="manual")
        store.recall("orchard", k=2)  # fixes the embedder fingerprint
        assert store.entities() and store.mentions()
        store.backup(base / "backup")
        yield base / "backup", export_of(store)


@pytest.fixture
def backup(original: tuple[Path, str], tmp_path: Path) -> Path:
    copy = tmp_path / "backup"
    shutil.copytree(original[0], copy)
    return copy


def rehash(backup: Path, *, extra: tuple[str, ...] = ()) -> None:
    manifest = json.loads((backup / MANIFEST).read_text())
    names = [*manifest["files"], *extra]
    manifest["files"] = {n: hashlib.sha256((backup / "data" / n).read_bytes()).hexdigest()
                         for n in names if (backup / "data" / n).is_file()}
    (backup / MANIFEST).write_text(json.dumps(manifest))


def rewrite(backup: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> None:
    path = backup / "data" / name
    pq.write_table(change(pq.read_table(path)), path)
    rehash(backup)


def set_column(table: pa.Table, column: str, values: list[Any]) -> pa.Table:
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, pa.array(values, table.schema.field(index).type))


def first(table: pa.Table, column: str, value: Any) -> pa.Table:
    return set_column(table, column, [value, *table.column(column).to_pylist()[1:]])


def test_the_backup_is_the_tables_and_restores_whole(original: tuple[Path, str],
                                                     tmp_path: Path) -> None:
    assert sorted(p.name for p in (original[0] / "data").iterdir()) == \
        sorted(t.file for t in TABLES)
    MemoryStore.restore_backup(original[0], tmp_path / "restored")
    with MemoryStore(tmp_path / "restored", embedder="hashing") as copy:
        assert export_of(copy) == original[1]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "flipped"])
@pytest.mark.parametrize("name", [t.file for t in TABLES])
def test_a_damaged_file_is_refused_by_name(backup: Path, tmp_path: Path, damage: str,
                                           name: str) -> None:
    path = backup / "data" / name
    data = path.read_bytes()
    path.write_bytes({"garbage": b"PAR1" + os.urandom(300) + b"PAR1",
                      "truncated": data[: len(data) // 2], "empty": b"",
                      "flipped": data[:-12] + bytes(b ^ 0xFF for b in data[-12:])}[damage])
    # the checksum in the manifest says first what is wrong
    refused(backup, tmp_path / "restored", rf"damaged: data/{name} does not match its "
            "checksum in the manifest")
    rehash(backup)  # and when the checksum is made to match, the file itself does
    refused(backup, tmp_path / "restored", rf"data/{name} (is not a readable Parquet file|"
            "could not be read)")


def test_a_foreign_file_is_refused_by_name(backup: Path, tmp_path: Path) -> None:
    data = backup / "data"
    versions = (data / "versions.parquet").read_bytes()
    shutil.copy(data / "events.parquet", data / "versions.parquet")  # another table's file
    rehash(backup)
    refused(backup, tmp_path / "restored", r"data/versions\.parquet has the columns "
            r"\['event_id'.*not those of table versions\.parquet")
    (data / "versions.parquet").write_bytes(versions)
    (data / "events.parquet").write_bytes(b"event_id,memory_id\nx,y\n")  # not Parquet
    rehash(backup)
    refused(backup, tmp_path / "restored", r"data/events\.parquet is not a readable Parquet")
    shutil.copy(data / "memories.parquet", data / "events.parquet")
    shutil.copy(data / "memories.parquet", data / "Memory.parquet")  # not of this format
    rehash(backup, extra=("Memory.parquet",))
    refused(backup, tmp_path / "restored", r"file 'Memory\.parquet' in 'files' is not a table "
            "of a format 2 backup")


TAMPERED: list[tuple[str, Callable[[pa.Table], pa.Table], str]] = [
    ("memories.parquet", lambda t: t.rename_columns(["ID", *t.column_names[1:]]),
     r"data/memories\.parquet has the columns \['ID'"),
    ("memories.parquet", lambda t: t.drop_columns(["vector"]),
     r"data/memories\.parquet has the columns"),
    ("memories.parquet", lambda t: t.set_column(3, "hot", pa.array(["yes"] * t.num_rows)),
     r"data/memories\.parquet: column hot has type string, expected bool"),
    ("memories.parquet", lambda t: pa.concat_tables([t, t]),
     r"data/memories\.parquet holds the memory 'urn:.*' twice"),
    ("memories.parquet", lambda t: first(t, "id", None),
     r"data/memories\.parquet: column id has an empty value"),
    ("memories.parquet", lambda t: first(t, "kind", "evil"),
     r"data/memories\.parquet: memory 'urn:.*' is not a valid memory"),
    ("memories.parquet", lambda t: first(t, "provenance", "{not json"),
     r"data/memories\.parquet: memory 'urn:.*' is not a valid memory"),
    ("memories.parquet", lambda t: first(t, "prev_status", "evil"),
     r"memory 'urn:.*' is not a valid memory: prev_status 'evil' is not one of"),
    ("memories.parquet", lambda t: first(t, "vector", [1.0, 2.0]),
     r"data/memories\.parquet: the vectors are not all of one dimension \(384\)"),
    ("memories.parquet", lambda t: first(t, "vector", [math.nan] * 384),
     r"data/memories\.parquet: the vectors are not all of one dimension .*and finite"),
    # what add refuses (a restored store exported, then imported, failed on it)
    ("memories.parquet", lambda t: first(t, "importance", 7.5),
     r"memory 'urn:.*' is not a valid memory: importance 7.5 is not a number in \[0, 1\]"),
    ("memories.parquet", lambda t: first(t, "confidence", math.nan),
     r"memory 'urn:.*' is not a valid memory: confidence nan is not a number in \[0, 1\]"),
    ("memories.parquet", lambda t: first(t, "text", "Nadia prefers\x00green tea"),
     r"memory 'urn:.*' is not a valid memory: text contains a NUL character"),
    ("memories.parquet", lambda t: first(t, "text", "x" * 200_001),
     r"memory 'urn:.*' is not a valid memory: text is longer than 200,000 characters"),
    ("memories.parquet", lambda t: first(t, "tags", ["t"] * 100),
     r"memory 'urn:.*' is not a valid memory: tags: has 100 entries; the limit is 64"),
    ("memories.parquet", lambda t: first(t, "text", "   "),
     r"memory 'urn:.*' is not a valid memory: text"),
    ("memories.parquet", lambda t: first(t, "session", "s\x00"),
     r"memory 'urn:.*' is not a valid memory: session"),
    # counters a store never holds, and a replacement the backup does not hold
    ("memories.parquet", lambda t: first(t, "version", -3),
     r"memory 'urn:.*' is not a valid memory: version -3 is less than 1"),
    ("memories.parquet", lambda t: first(t, "access_count", -5),
     r"memory 'urn:.*' is not a valid memory: access_count -5 is less than 0"),
    ("memories.parquet", lambda t: first(t, "superseded_by", ["urn:graphmem:nowhere"]),
     r"data/memories\.parquet: memory 'urn:.*' is superseded by 'urn:graphmem:nowhere', a "
     "memory the backup does not hold"),
    ("memories.parquet", lambda t: first(t, "superseded_by", [t.column("id")[0].as_py()]),
     r"data/memories\.parquet: memory 'urn:.*' is superseded by 'urn:.*', the memory itself"),
    ("memories.parquet", lambda t: first(first(t, "owner", "eve"), "superseded_by",
                                         [t.column("id")[1].as_py()]),
     r"data/memories\.parquet: memory 'urn:.*' is superseded by 'urn:.*', a memory of "
     "another owner"),
    ("memories.parquet", lambda t: first(t, "version", 2**63 - 1),
     r"memory 'urn:.*' is not a valid memory: version 9223372036854775807 is more than 2\^53"),
    ("versions.parquet", lambda t: first(t, "seq", -3),
     r"data/versions\.parquet: the row of id 'urn:.*' is not valid: seq -3 is not from 1"),
    ("memories.parquet", lambda t: first(first(t, "valid_from", datetime(2030, 1, 1)),
                                         "valid_to", datetime(2001, 1, 1)),
     r"memory 'urn:.*' is not a valid memory: .*valid_to"),
    ("memories.parquet", lambda t: t.slice(1),
     r"data/versions\.parquet: memory_id 'urn:.*' is not in the backup"),
    ("versions.parquet", lambda t: t.filter(pa.array([r != 1 for r in t.column("seq")
                                                       .to_pylist()])),
     r"data/memories\.parquet: memory 'urn:.*' has no version row"),
    ("versions.parquet", lambda t: first(t, "change_type", "evil"),
     r"data/versions\.parquet: the row of id 'urn:.*' is not valid"),
    ("versions.parquet", lambda t: pa.concat_tables([t, t.slice(0, 1)]),
     r"data/versions\.parquet holds the version 'urn:.*' twice"),
    ("versions.parquet", lambda t: t.set_column(
        4, "at", t.column(4).cast(pa.timestamp("ns", "UTC"))),
     r"data/versions\.parquet: column at has type timestamp\[ns, tz=UTC\], expected"),
    ("events.parquet", lambda t: first(t, "metadata", "[not json"),
     r"data/events\.parquet: the row of event_id 'evt-.*' is not valid"),
    ("events.parquet", lambda t: t.slice(0, 0),
     r"gave \(memories, versions, events, fingerprint\)"),
    ("edges.parquet", lambda t: first(t, "dst", "urn:nowhere"),
     r"data/edges\.parquet: dst 'urn:nowhere' is not in the backup"),
    ("edges.parquet", lambda t: first(t, "kind", "likes"),
     r"data/edges\.parquet: the row of kind 'likes' is not valid: kind 'likes' is not"),
    ("edges.parquet", lambda t: first(t, "weight", math.inf),
     r"data/edges\.parquet: the row of kind .* is not valid: weight inf"),
    ("entities.parquet", lambda t: first(t, "merges", '[{"a": 1}]'),
     r"data/entities\.parquet: the row of id 'ent_.*' is not valid: merges must be"),
    ("entities.parquet", lambda t: first(t, "aliases", [None]),
     r"data/entities\.parquet: column aliases has an empty value"),
    ("mentions.parquet", lambda t: first(t, "entity_id", "ent_nowhere"),
     r"data/mentions\.parquet: entity_id 'ent_nowhere' is not in the backup"),
    ("entities.parquet", lambda t: set_column(t, "owner", ["eve"] * t.num_rows),
     r"data/mentions\.parquet: the row of memory_id 'urn:.*' is not valid: its memory and "
     "its entity are of two owners"),
    ("facts.parquet", lambda t: set_column(t, "owner", ["eve"] * t.num_rows),
     r"data/facts\.parquet: the row of id '.*' is not valid: its entities are not of its "
     "owner"),
    # an owner graphmem could not have stored: blank, too long
    ("memories.parquet", lambda t: first(t, "owner", "x" * 2001),
     r"data/memories\.parquet: memory 'urn:.*' is not a valid memory: owner is 2001 "
     r"characters long"),
    ("entities.parquet", lambda t: set_column(t, "owner", ["  "] * t.num_rows),
     r"data/entities\.parquet: the row of id 'ent_.*' is not valid: owner is empty"),
    ("meta.parquet", lambda t: set_column(
        t, "value", ["abc" if k == "embedder_dim" else v for k, v in
                     zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True)]),
     r"data/meta\.parquet records embedder_dim 'abc', not a dimension"),
    ("meta.parquet", lambda t: set_column(
        t, "value", ["0" * 16 if k == "embedder_fingerprint" else v for k, v in
                     zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True)]),
     r"gave \(memories, versions, events, fingerprint\) .*'0000000000000000'"),
]


@pytest.mark.parametrize(("name", "change", "message"), TAMPERED,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(TAMPERED)])
def test_tampered_tables_are_refused_by_name(backup: Path, tmp_path: Path, name: str,
                                             change: Callable[[pa.Table], pa.Table],
                                             message: str) -> None:
    rewrite(backup, name, change)
    refused(backup, tmp_path / "restored", message)


def test_an_owner_of_an_older_version_is_restored_as_it_was(backup: Path,
                                                            tmp_path: Path) -> None:
    """Before calls refused owners with invisible characters, stores could hold one: their
    backups restore, the owner kept, though no call may name it now."""
    legacy = "alice\u200b"
    for name in ("memories.parquet", "entities.parquet", "facts.parquet"):
        rewrite(backup, name, lambda t: set_column(t, "owner", [legacy] * t.num_rows))
    MemoryStore.restore_backup(backup, tmp_path / "restored")
    with MemoryStore(tmp_path / "restored", embedder="hashing") as store:
        assert {m.owner for m in store.memories()} == {legacy}
        # a write naming owners is not refused for the one the store held already, and
        # may rename it; it may not make another such owner
        store.cypher("MATCH (m:Memory) WHERE m.owner = 'bob' SET m.importance = 0.4",
                     write=True)
        with pytest.raises(InvalidInputError, match="shows nothing"):
            store.cypher("MATCH (m:Memory) SET m.owner = 'eve\u200b'", write=True)
        store.cypher("MATCH (m:Memory) WHERE m.owner = $o SET m.owner = 'alice' WITH count(*) "
                     "AS n MATCH (e:Entity) WHERE e.owner = $o SET e.owner = 'alice' WITH "
                     "count(*) AS k MATCH (:Entity)-[f:FACT]->(:Entity) WHERE f.owner = $o "
                     "SET f.owner = 'alice'", {"o": legacy}, write=True)
        assert {m.owner for m in store.memories()} == {"alice"}


def test_a_table_missing_from_the_manifest(backup: Path, tmp_path: Path) -> None:
    body = json.loads((backup / MANIFEST).read_text())
    del body["files"]["facts.parquet"]
    (backup / MANIFEST).write_text(json.dumps(body))
    refused(backup, tmp_path / "restored",
            r"incomplete: data/facts\.parquet is not listed in its manifest")


def test_links_inside_a_backup_are_refused(backup: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.parquet"
    memories = backup / "data" / "memories.parquet"
    shutil.copy(memories, elsewhere)
    memories.unlink()
    memories.symlink_to(elsewhere)  # same bytes, same checksum
    refused(backup, tmp_path / "restored", r"data/memories\.parquet is a symbolic link")


@pytest.mark.parametrize("stage", ["read", "write", "check", "rename"])
@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt])
def test_a_failed_restore_leaves_no_scratch(original: tuple[Path, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, stage: str,
                                            error: type[BaseException]) -> None:
    import graphmem._backup as backup_module
    import graphmem._backup_tables as tables_module

    where: dict[str, tuple[Any, str]] = {
        "read": (tables_module, "parquet_batches"),
        "write": (tables_module, "_load"),
        "check": (tables_module._Reader, "known"),
        "rename": (backup_module.os, "replace"),
    }
    fails_cleanly(original[0], tmp_path, monkeypatch, where[stage], error)


def test_a_failed_backup_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    import graphmem._backup_tables as tables_module

    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add("one memory")
        monkeypatch.setattr(tables_module, "_write", lambda *a: (_ for _ in ()).throw(
            Boom("injected")))
        with pytest.raises(Boom):
            store.backup(tmp_path / "backup")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db"]


@FAST
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4), name=st.sampled_from([t.file for t in TABLES]))
def test_flipped_bytes_give_a_store_error_or_a_store_that_works(
        original: tuple[Path, str], flips: list[tuple[int, int]], name: str) -> None:
    restore_flipped(original[0], name, flips, rehash)


def test_a_restored_kuzu_store_reads_its_vectors_from_its_log(original: tuple[Path, str],
                                                               tmp_path: Path) -> None:
    import numpy as np

    from graphmem._kuzu import KuzuEngine

    MemoryStore.restore_backup(original[0], tmp_path / "restored")
    engine = KuzuEngine(str(tmp_path / "restored"))
    try:
        ids = [r[0] for r in engine.db.read("MATCH (m:Memory) RETURN m.id ORDER BY m.id")]
        where = {memory_id: row for row, memory_id in enumerate(ids)}
        logged = engine._journal.vectors.read(where, len(ids))  # the blocks the load appended
        column = engine._vector_pages(ids, where, len(ids), np.float32, paged=True)
        assert logged is not None and logged[1].all()
        assert np.array_equal(logged[0], column[0])
    finally:
        engine.close()
