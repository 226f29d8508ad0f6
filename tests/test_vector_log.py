"""The vector log beside a Kuzu store: every vector read in one pass, as the ``vec`` column
holds it; what a transaction that did not commit wrote is never read; a log that cannot be
trusted (a Cypher write, a damaged block, a store made before the log) is read past and
written again from the column."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import ConflictError, Edge, HashingEmbedder, MemoryInput, MemoryStore
from graphmem._derive import TextItem, derive_fields, new_memory
from graphmem._embed import embed_memories
from graphmem._engine import WriteBatch
from graphmem._kuzu import SCHEMA_VERSION, Database, KuzuEngine
from graphmem._kuzu._rows import memory_params, version_params
from graphmem._kuzu._schema import ensure_schema
from graphmem._kuzu._vectorlog import META_KEY, VectorLog

from .engine.test_contract import _new
from .test_migrations import CREATED, _version


def _column(engine: KuzuEngine) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every memory's vector as the ``vec`` column holds it (the oracle)."""
    ids = [r[0] for r in engine.db.read("MATCH (m:Memory) RETURN m.id ORDER BY m.id")]
    where = {memory_id: row for row, memory_id in enumerate(ids)}
    matrix, present = engine._vector_pages(ids, where, len(ids), np.float32, paged=True)
    return ids, matrix, present


def _logged(engine: KuzuEngine, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every vector as a scan reads it, which must be from the log."""
    with monkeypatch.context() as patch:
        patch.setattr(KuzuEngine, "_vector_pages", _refuse)
        scan = engine.scan(["id", "vector"])
    assert scan.vectors is not None and scan.has_vector is not None
    return scan.table.column("id").to_pylist(), scan.vectors, scan.has_vector


def _refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("the vectors were read from the column")


def _same(engine: KuzuEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    ids, matrix, present = _logged(engine, monkeypatch)
    expected = _column(engine)
    assert ids == expected[0]
    np.testing.assert_array_equal(present, expected[2])
    np.testing.assert_array_equal(matrix[present], expected[1][present])


def _engine(store: MemoryStore) -> KuzuEngine:
    engine = store._ctx.engine
    assert isinstance(engine, KuzuEngine)
    return engine


def test_every_vector_is_read_from_the_log_as_the_column_holds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        one = store.add("The greenhouse pump runs at dusk")
        many = store.add_many([f"memory {i} of a bulk import" for i in range(150)])  # COPY
        store.update(one.id, text="The greenhouse pump runs at dawn")  # a new vector
        store.forget(many[3].id, confirm=True)  # no vector any more
        store.link_many([Edge("references", one.id, many[0].id)])
        _engine(store).set_vectors({many[5].id: np.ones(384, dtype=np.float32),
                                    many[6].id: None})
        _same(_engine(store), monkeypatch)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:  # as read again
        _same(_engine(store), monkeypatch)


def test_what_a_transaction_that_did_not_commit_wrote_is_never_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        first = store.add("Orchard runs on fly.io")
        committed = _engine(store)._journal.vectors.length
        with pytest.raises(ConflictError):  # appended to the log, then rolled back
            _engine(store).commit(WriteBatch(memories=_new({"id": first.id, "text": "dup"})))
        assert _engine(store)._journal.vectors.length == committed
        journal = _engine(store)._journal

        def then_fail(tx: Any) -> None:  # the block is written, the COMMIT fails
            # (before the journal's own rows change: Kuzu 0.11.3 may find a row that a
            # rolled-back transaction updated in conflict, or crash, on its next update)
            journal.vectors.append(tx.vectors)
            raise ConflictError("the commit failed")

        with monkeypatch.context() as patch:
            patch.setattr(journal, "before_commit", then_fail)
            with pytest.raises(ConflictError):
                store.add("A memory whose transaction never commits")
        assert journal.vectors.length == committed
        assert (path / VectorLog.FILE_NAME).stat().st_size > committed
        store.add("Nadia prefers TypeScript")  # cuts what the failed one left
        _same(_engine(store), monkeypatch)
    with (path / VectorLog.FILE_NAME).open("ab") as handle:  # a writer killed mid-append
        handle.write(b"GMVB" + bytes(500))
    with MemoryStore(path, embedder="hashing") as store:
        _same(_engine(store), monkeypatch)
        store.add("The lake house roof was fixed")
        _same(_engine(store), monkeypatch)


def test_an_untrusted_log_is_read_past_and_written_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add_many([f"memory {i}" for i in range(20)])
        engine = _engine(store)
        # a Cypher write may set any vector: the log is not trusted after it
        store.cypher("MATCH (m:Memory) WHERE m.text = 'memory 3' SET m.vec = NULL",
                     write=True)
        assert engine.meta()[META_KEY] == "" and not engine._journal.vectors.trusted
        scan = engine.scan(["id", "text", "vector"])  # from the column, writing the log
        assert scan.has_vector is not None
        texts = scan.table.column("text").to_pylist()
        assert [t for t, ok in zip(texts, scan.has_vector, strict=True) if not ok] == \
            ["memory 3"]
        assert engine._journal.vectors.trusted
        _same(engine, monkeypatch)
    log = path / VectorLog.FILE_NAME
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a block the disk lost
    log.write_bytes(bytes(data))
    with MemoryStore(path, embedder="hashing") as store:
        engine = _engine(store)
        assert engine._journal.vectors.read({}, 0) is None
        engine.scan(["id", "vector"])  # read past, written again
        _same(engine, monkeypatch)


def test_purge_leaves_no_replaced_vector_in_the_log(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        secret = store.add("The vault code is 4921 and only Ana knows it")
        kept = store.add("The garden gate squeaks")
        ids, matrix = store.vectors()
        stored = matrix[ids.index(secret.id)].astype(np.float32).tobytes()
        store.forget(secret.id, confirm=True, purge=False)
        assert stored in (path / VectorLog.FILE_NAME).read_bytes()  # until the purge
        store.purge()
        assert stored not in (path / VectorLog.FILE_NAME).read_bytes()
        found = store.recall("garden gate", k=1, preset="vector", record_access=False)
        assert [h.memory.id for h in found] == [kept.id]
        _same(_engine(store), monkeypatch)


def _v5_database(path: Path, texts: list[str]) -> np.ndarray:
    """A store as graphmem with schema v5 made it: no change ring, no vector log, the
    vectors only in the ``vec`` column. Returns the vectors."""
    db = Database(str(path), buffer_pool_mb=128)
    try:
        assert ensure_schema(db, target=5) == 5
        items = [MemoryInput.parse({"id": f"urn:v5:{i}", "text": t})
                 for i, t in enumerate(texts)]
        derived = derive_fields(functools.partial(embed_memories, HashingEmbedder(384)),
                                [TextItem(i.subject, i.text, i.context) for i in items])
        new = [new_memory(i, d, now=CREATED) for i, d in zip(items, derived, strict=True)]
        from graphmem._kuzu._engine import _CREATE_VERSION, _typed
        from graphmem._kuzu._schema import MEMORY_TYPES

        # v5 has no sentence vectors (v8)
        columns = {c: t for c, t in MEMORY_TYPES.items() if c != "sentences"}
        create = ("UNWIND $rows AS r CREATE (:Memory {"
                  + ", ".join(f"{c}: {_typed(f'r.{c}', t)}" for c, t in columns.items()) + "})")
        with db.write() as tx:
            tx.run(create, {"rows": [{c: v for c, v in memory_params(n).items()
                                      if c in columns} for n in new]})
            tx.run_many(_CREATE_VERSION, [version_params(n.version) for n in new])
        for key, value in (("embedder_spec", "hashing"), ("embedder_name", "hashing-384")):
            db.run_auto("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})
        return np.array([n.vector for n in new])
    finally:
        db.close()


def test_a_store_made_before_the_log_gets_one_on_its_first_full_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v5"
    texts = [f"Orchard note {i}: deploys go through fly.io" for i in range(12)]
    vectors = _v5_database(path, texts)
    assert _version(path) == 5
    with MemoryStore(path) as store:  # migrated: the change ring (v7), still no log
        engine = _engine(store)
        assert not engine._journal.vectors.trusted
        hits = store.recall("Orchard note 7", k=1, preset="vector", record_access=False)
        assert hits[0].memory.id == "urn:v5:7"  # the build read the column, wrote the log
        assert engine._journal.vectors.trusted
        ids, matrix, present = _logged(engine, monkeypatch)
        assert ids == sorted(f"urn:v5:{i}" for i in range(12)) and present.all()
        order = [int(i.rsplit(":", 1)[1]) for i in ids]
        np.testing.assert_array_equal(matrix, vectors[order])
        store.add("A memory added after the migration")
        _same(engine, monkeypatch)
    assert _version(path) == SCHEMA_VERSION
