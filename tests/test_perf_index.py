"""The recall index loaded column by column (how a store's index is built) holds exactly
what ``upsert`` of the same rows, one dict each, holds; vectors read a page at a time are
the ones read at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from graphmem import MemoryStore
from graphmem._arrow import to_pylist
from graphmem._kuzu import _engine as kuzu_engine
from graphmem._recall import _index as index_module
from graphmem._recall._index import INDEX_FIELDS, RecallIndex
from graphmem._recall._vectors import to_bfloat16

ARRAYS = ("has_vector", "status", "kind", "owner", "hot", "created", "valid_from", "valid_to",
          "access_count", "confidence", "importance")
LISTS = ("ids", "access_times", "last_accessed", "superseded_by", "session")


def _varied_store(path: Path) -> MemoryStore:
    store = MemoryStore(path, embedder="hashing")
    start = datetime(2024, 3, 1, tzinfo=UTC)
    store.add_many([{"text": f"orchard deploy note {i} v3.2", "owner": ["ana", "ben", None][i % 3],
                     "kind": ["episodic", "semantic", "procedural"][i % 3],
                     "subject": "orchard" if i % 4 == 0 else None,
                     "session": f"s{i // 5}", "importance": (i % 10) / 10,
                     "created": start + timedelta(hours=i),
                     "valid_from": start if i % 7 == 0 else None,
                     "valid_to": start + timedelta(days=3) if i % 9 == 0 else None,
                     "status": "archived" if i % 11 == 0 else "active"}
                    for i in range(120)])
    old = store.add("the greenhouse sensor reads moisture", owner="ana")
    store.supersede(old.id, "the greenhouse sensor reads moisture and heat")
    doomed = store.add("a note to forget about the orchard", owner="ben")
    store.forget(doomed.id, confirm=True)
    store.recall("orchard deploy", k=5, owner="ana", record_access=True)  # access times
    store.flush()
    return store


@pytest.mark.parametrize("block", [7, 65_536])
def test_column_load_equals_row_upsert(tmp_path: Path, block: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "BLOCK_ROWS", block)  # texts read a block at a time
    with _varied_store(tmp_path / "db") as store:
        scan = store._ctx.engine.scan([*INDEX_FIELDS, "vector"])
    by_rows, by_columns = RecallIndex(scan.vectors.shape[1]), RecallIndex(scan.vectors.shape[1])
    by_rows.upsert(to_pylist(scan.table), scan.vectors, scan.has_vector)
    by_columns.load(scan.table, scan.vectors.copy(), scan.has_vector)
    n = by_rows.size
    assert n == by_columns.size == scan.table.num_rows > 120
    for name in ARRAYS:
        assert np.array_equal(getattr(by_rows, name)[:n], getattr(by_columns, name)[:n],
                              equal_nan=getattr(by_rows, name).dtype.kind == "f"), name
    assert np.array_equal(by_rows.vectors[:n], by_columns.vectors[:n])
    for name in LISTS:
        assert getattr(by_rows, name) == getattr(by_columns, name), name
    assert by_rows.pos == by_columns.pos and by_rows.owner_codes == by_columns.owner_codes
    assert all(np.array_equal(a, b) for a, b in zip(by_rows.access_seconds,
                                                    by_columns.access_seconds, strict=True))
    assert any(len(t) for t in by_columns.access_times)  # the recall left access times
    for query in ("orchard deploy", "greenhouse moisture", "v3.2 note 7", "forget"):
        for group in (None, 0, 1):
            assert np.allclose(by_rows.bm25.scores(query, n, group=group),
                               by_columns.bm25.scores(query, n, group=group))


@pytest.mark.parametrize("adopt", [True, False])
def test_a_half_index_keeps_the_scans_vectors_as_bfloat16(tmp_path: Path, adopt: bool) -> None:
    """Where sign bits serve, the index keeps bfloat16: loaded from a float16 scan (made
    bfloat16 in place when the matrix fits the index, copied otherwise) it holds what
    ``upsert`` of the same rows holds."""
    with _varied_store(tmp_path / "db") as store:
        scan = store._ctx.engine.scan([*INDEX_FIELDS, "vector"], vector_dtype=np.float16)
    assert scan.vectors is not None and scan.vectors.dtype == np.float16
    dim = scan.vectors.shape[1]
    want = to_bfloat16(scan.vectors)
    by_rows = RecallIndex(dim, half=True)
    by_rows.upsert(to_pylist(scan.table), scan.vectors, scan.has_vector)
    by_columns = RecallIndex(dim, capacity=1 if adopt else 10_000, half=True)
    by_columns.load(scan.table, scan.vectors, scan.has_vector)
    n = by_rows.size
    assert by_rows.vectors.dtype == by_columns.vectors.dtype == np.uint16
    assert np.array_equal(by_rows.vectors[:n], by_columns.vectors[:n])
    kept = by_columns.has_vector[:n]
    assert kept.sum() > 100 and np.array_equal(by_columns.vectors[:n][kept], want[kept])
    assert not by_columns.vectors[:n][~kept].any()
    assert np.shares_memory(by_columns.vectors, scan.vectors) is adopt


@pytest.mark.parametrize("page", [7, 50_000])
def test_vectors_read_in_pages_are_those_read_at_once(tmp_path: Path, page: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with _varied_store(tmp_path / "db") as store:
        engine = store._ctx.engine
        table = engine._arrow_scan(["id", "vec"], owner=None)
        want, want_present = kuzu_engine._matrix(table.column("vec").to_pylist())
        monkeypatch.setattr(kuzu_engine, "_PAGE", page)
        every = engine.scan(["id", "vector"])
        assert every.table.column("id").to_pylist() == table.column("id").to_pylist()
        assert np.array_equal(every.vectors, want)
        assert np.array_equal(every.has_vector, want_present) and not want_present.all()
        some_ids = table.column("id").to_pylist()[::3]  # more than a lookup's worth
        some = engine.scan(["vector", "text"], ids=some_ids)
        rows = [table.column("id").to_pylist().index(i) for i in some_ids]
        assert some.table.column_names == ["text"]
        assert np.array_equal(some.vectors, want[rows])
        assert np.array_equal(some.has_vector, want_present[rows])


def test_the_slimmed_snapshot_gives_every_memory_as_the_store_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hits are made from the index's snapshot: with the text hashes it leaves out
    (recomputed) it gives back each memory exactly as ``get`` does
    (but for its use, which the index keeps apart), a forgotten memory's keyed hash
    included."""
    from graphmem._engine import memory_from_fields

    with _varied_store(tmp_path / "db") as store:  # below the threshold: as scanned
        index = store._recall_index.ensure_index()
        assert not index.half and index.rows is not None
        assert "" not in index.rows.column("text_sha256").to_pylist()
    monkeypatch.setattr(RecallIndex, "SIGN_BITS_FROM", 0)  # a half index: slimmed
    monkeypatch.setattr(index_module, "BLOCK_ROWS", 7)  # a block at a time
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        index = store._recall_index.ensure_index()
        assert index.half and index.rows is not None
        assert "" in index.rows.column("text_sha256").to_pylist()  # left out
        rows = index.rows_at(range(index.size))
        assert len(rows) == index.size > 120
        forgotten = 0
        for pos, row in rows.items():
            memory = store.get(index.ids[pos])
            assert memory is not None
            use = {"access_count", "last_accessed", "access_times"}  # the index's own arrays
            got = memory_from_fields(row).model_dump(exclude=use)
            assert got == memory.model_dump(exclude=use), index.ids[pos]
            forgotten += memory.status == "forgotten"
        assert forgotten == 1


def _mask_oracle(index: RecallIndex, owner: str | None, kinds: list[str] | None,
                 statuses: tuple[str, ...], at: datetime, as_of: bool) -> np.ndarray:
    """What ``RecallIndex.mask`` answers, one memory at a time."""
    from graphmem._models import KIND_CODE, STATUS_CODE
    t = at.timestamp()
    out = np.zeros(index.size, dtype=bool)
    for pos in range(index.size):
        start, end = index.valid_from[pos], index.valid_to[pos]
        out[pos] = (index.status[pos] in [STATUS_CODE[s] for s in statuses]
                    and (owner is None or index.owner[pos] == index.owner_codes.get(owner))
                    and (kinds is None or index.kind[pos] in [KIND_CODE[k] for k in kinds])
                    and (np.isnan(start) or start <= t) and (np.isnan(end) or end > t)
                    and (not as_of or index.created[pos] <= t))
    return out


def test_masks_are_made_once_per_change_and_answer_as_the_oracle(tmp_path: Path) -> None:
    """The status, owner and kinds part of a mask is kept (read-only, shared) until the
    index changes; times narrow a copy of it."""
    with _varied_store(tmp_path / "db") as store:
        index = store._recall_index.ensure_index()
        start = datetime(2024, 3, 1, tzinfo=UTC)
        for owner in (None, "ana", "nobody"):
            for kinds in (None, ["semantic", "episodic"]):
                for statuses in (("active",), ("active", "archived")):
                    for at in (start - timedelta(days=1), start + timedelta(days=5)):
                        for as_of in (False, True):
                            got = index.mask(owner=owner, kinds=kinds, statuses=statuses,
                                             now=at, as_of=at if as_of else None)
                            want = _mask_oracle(index, owner, kinds, statuses, at, as_of)
                            assert np.array_equal(got, want), (owner, kinds, statuses, at)
        first = index.mask(owner="ana", now=start + timedelta(days=1))  # all within bounds
        assert not first.flags.writeable
        assert index.mask(owner="ana", now=start + timedelta(days=2)) is first
        assert index.mask(owner="ana", now=start + timedelta(days=5)) is not first
        store.add("a new note of ana's about the orchard", owner="ana")
        again = index.mask(owner="ana", now=start + timedelta(days=1))
        assert again is not first and again.sum() == first.sum() + 1
