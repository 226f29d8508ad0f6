"""The recall index saved beside the store: read back whole, caught up with what the store
committed since, rebuilt (with a warning) when its file is damaged or another store's, and
never the cause of an answer a fresh build would not give."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from graphmem import PRESETS, Edge, MemoryStore, Settings
from graphmem._kuzu._journal import ChangeJournal
from graphmem._recall._bm25 import BM25Index, _Column
from graphmem._recall._entities import EntityIndex
from graphmem._recall._index import Adjacency, EdgeTable, RecallIndex
from graphmem._recall._persist._codec import ATTRIBUTES, FORMAT, read_index
from graphmem._recall._persist._file import DamagedFile, SnapshotFile
from graphmem._recall._vectors import SignCodes
from graphmem._store import _saved_index as _persist
from graphmem._store._saved_index import FILE_NAME

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
QUERIES = ["Where does Caroline work?", "Orchard deploy fly.io 2024", "what did Melanie paint",
           "greenhouse pump at dusk", "hiking trip in May 2023", "Nadia TypeScript frontend",
           "Caroline Acme Lisbon", "Melanie pottery class"]
TEXTS = [
    "Caroline works at Acme Inc. and moved to Lisbon in 2024",
    "Melanie paints sunsets by the lake to relax after work",
    "Orchard v3.2 was deployed on fly.io in March 2024 by Nadia",
    "The greenhouse pump runs at dusk and again at dawn",
    "Caroline and Melanie went hiking in May 2023 near Sintra",
    "Nadia prefers TypeScript over JavaScript for the Orchard frontend",
    "The lake house roof was fixed by Caroline's brother last winter",
    "Melanie's pottery class meets every Thursday evening",
    "Acme Inc. opened a new office in Porto with twelve desks",
    "The pump in the greenhouse failed twice during the heat wave",
]


def _clock() -> datetime:
    return NOW


def _open(path: Path, **settings: Any) -> MemoryStore:
    return MemoryStore(path, embedder="hashing", clock=_clock,
                       settings=Settings(**settings))


def _fill(store: MemoryStore) -> list[str]:
    """Memories of two owners with entities, facts, times, every edge kind, a superseded
    and a forgotten memory, feedback and recorded accesses; half of it committed after
    the index was built (so that its incremental parts hold something too)."""
    ids = []
    for i, text in enumerate(TEXTS * 2):
        created = NOW - timedelta(days=40 - i)
        ids.append(store.add(f"{text} ({i})", owner="ana" if i % 3 else "bo",
                             kind="semantic" if i % 4 else "episodic",
                             created=created).id)
    store.link_many([Edge("references", ids[0], ids[8]), Edge("references", ids[2], ids[5]),
                     Edge("co_occurs", ids[1], ids[7]), Edge("co_occurs", ids[3], ids[9])])
    store.recall("greenhouse pump", k=4)  # the index is built here
    store.link_many([Edge("references", ids[10], ids[18]), Edge("co_occurs", ids[11], ids[17])])
    store.update(ids[4], text="Caroline and Melanie went hiking in June 2023 near Sintra")
    store.supersede(ids[5], "Nadia now prefers Rust over TypeScript for the Orchard frontend")
    store.forget(ids[6], confirm=True)
    store.add("Melanie moved her pottery class to Tuesdays in Porto", owner="ana")
    hits = store.recall("Caroline Melanie hiking", k=3, owner="ana")
    for hit in hits[:2]:
        store.feedback(hit.memory.id, useful=True, query="Caroline Melanie hiking")
    store.flush()
    return ids


def _answers(store: MemoryStore) -> list[Any]:
    out = []
    for preset in sorted(PRESETS):
        for query in QUERIES:
            for owner in (None, "ana"):
                hits = store.recall(query, k=6, preset=preset, owner=owner,
                                    record_access=False)
                out.append([(h.memory.id, round(h.score, 9), sorted(
                    (name, c.rank) for name, c in h.explanation.channels.items()))
                            for h in hits])
    return out


def _fresh(path: Path) -> list[Any]:
    """The answers of an index built from the store, no file read or written."""
    with _open(path, persist_index=False) as store:
        return _answers(store)


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A store whose index was built, changed, then written when the store closed (as
    it is once enough changed)."""
    path = tmp_path / "db"
    with monkeypatch.context() as patch:
        patch.setattr(_persist, "SAVE_AFTER_IDS", 1)
        with _open(path) as store:
            _fill(store)
            mark = store._ctx.engine.change_mark()
    with _open(path) as store:
        store._recall_index.ensure_index()
        assert store._recall_index._saved.mark == mark  # written when the store closed
    yield path


def _same(a: Any, b: Any, where: str = "index") -> None:
    """``a`` and ``b`` hold the same values, attribute by attribute (``ATTRIBUTES``)."""
    kind = type(a)
    assert type(b) is kind, where
    if kind in ATTRIBUTES:
        for name in sorted(ATTRIBUTES[kind]):
            if name in ("_index", "_selves", "_forms", "changes", "_derived", "_derived_at",
                        "_replaced"):
                # the adjacency's back reference; caches of the owners' own entities, and
                # of what recall derives until a change, with the count of changes, and
                # the map of what replaced what (its sets in another order; compared
                # through ``replaced`` below)
                continue
            _same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, _Column):
        assert np.array_equal(a.view(), b.view()), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        n = min(len(a), len(b)) if a.ndim else None
        assert np.array_equal(a[:n], b[:n], equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, pa.Table):
        assert a.equals(b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple) and a and not isinstance(a[0], str | int | float):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _index(store: MemoryStore) -> RecallIndex:
    return store._recall_index.ensure_index()


def test_the_file_holds_the_index_as_it_is(tmp_path: Path) -> None:
    with _open(tmp_path / "db") as store:
        _fill(store)
        index = _index(store)
        saved = store._recall_index._saved
        saved._write(index, store._ctx.engine.change_mark())
        path = saved.path()
        assert path is not None
        read = read_index(SnapshotFile.open(path, FORMAT))
        # what the first recall would build is in the file already
        assert read._signs is not None or not read.uses_sign_bits(read.size)
        assert list(read._adjacency) == list(index._adjacency) != []
        _same(read, index)
        replaced = {i: index.replaced(i) for i in index.ids}
        assert {i: read.replaced(i) for i in read.ids} == replaced
        assert any(replaced.values())  # the superseded memory of ``_fill``


def test_what_commits_handed_over_is_what_a_build_reads(tmp_path: Path) -> None:
    """The per-memory values a live index took from commits (feedback's counts, a
    lifecycle run's graph signals) are the ones an index built from the store reads."""
    path = tmp_path / "db"
    names = ("useful", "ignored", "centrality", "xrefs", "importance", "status", "kind",
             "hot")
    with _open(path, persist_index=False) as store:
        ids = _fill(store)
        store.feedback(ids[1], useful=False)
        jobs = store.run_lifecycle(apply=True).jobs
        assert jobs.decayed and jobs.hot_added  # besides the graph signals
        live = _index(store)
        kept = {name: {i: getattr(live, name)[p] for i, p in live.pos.items()}
                for name in names}
    assert any(kept["useful"].values()) and any(kept["xrefs"].values())
    with _open(path, persist_index=False) as store:
        built = _index(store)
        for name in names:
            read = {i: getattr(built, name)[p] for i, p in built.pos.items()}
            assert read == pytest.approx(kept[name], nan_ok=True), name


def test_a_half_index_keeps_new_vectors_as_a_build_reads_them(tmp_path: Path) -> None:
    """Where sign bits choose the candidates, a build reads the vectors at half precision:
    a memory added to the live index is kept as rounded the same way, so the scores a
    live process gives are the ones a reopened store gives (with the real model's
    vectors they were up to ~1e-3 apart)."""
    path = tmp_path / "db"

    def opened() -> MemoryStore:
        return MemoryStore(path, embedder="minilm", clock=_clock,
                           settings=Settings(persist_index=False, sign_bits_from=5))

    with opened() as store:
        for text in TEXTS[:6]:
            store.add(text)
        store.recall("greenhouse pump", k=3)  # built here, at half precision
        assert _index(store).half
        ids = [store.add(text).id for text in TEXTS[6:]]
        live = _index(store)
        kept = {i: live.vectors[live.pos[i]].copy() for i in ids}
        answers = [[(h.memory.id, h.score) for h in store.recall(q, k=8, record_access=False)]
                   for q in QUERIES]
    with opened() as store:
        built = _index(store)
        assert all(np.array_equal(built.vectors[built.pos[i]], v) for i, v in kept.items())
        assert [[(h.memory.id, h.score) for h in store.recall(q, k=8, record_access=False)]
                for q in QUERIES] == answers


def test_a_reopened_store_reads_its_file_and_answers_as_a_fresh_build(
        saved: Path, no_build: list[int]) -> None:
    with _open(saved) as store:
        answers = _answers(store)
    assert not no_build, "the store built its index instead of reading the file"
    assert answers == _fresh(saved)


def test_commits_made_without_the_index_are_caught_up(saved: Path, no_build: list[int]
                                                      ) -> None:
    with _open(saved, persist_index=False) as store:  # writes, never loads the index
        ids = [m.id for m in store.memories()]
        new = store.add("Caroline started a pottery class with Melanie in Porto", owner="ana")
        store.update(ids[1], text="Melanie paints sunrises by the sea to relax")
        store.forget(ids[2], confirm=True)
        store.link_many([Edge("references", new.id, ids[0]),
                         Edge("co_occurs", ids[3], ids[5])])
        store.recall("pump", k=3)  # accesses recorded (by an index of its own)
        store.flush()
    no_build.clear()
    with _open(saved) as store:
        answers = _answers(store)
        assert new.id in _index(store).pos
    assert not no_build, "a few commits rebuilt the index instead of being caught up"
    assert answers == _fresh(saved)


def test_closing_writes_the_file_again_once_enough_changed(saved: Path) -> None:
    before = (saved / FILE_NAME).stat().st_mtime_ns
    with _open(saved) as store:
        store.recall("pump", k=2)  # a few accesses: not worth writing the file for
    assert (saved / FILE_NAME).stat().st_mtime_ns == before
    with _open(saved) as store:
        store.add_many([{"text": f"note {i} about the Porto office"} for i in range(80)])
        store.recall("Porto office", k=2)  # reads the file, catches up on the 80
    assert (saved / FILE_NAME).stat().st_mtime_ns != before
    with _open(saved) as store:  # the file is current: nothing to catch up on
        _index(store)
        assert store._recall_index._saved.mark == store._ctx.engine.change_mark()


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def _section_at(path: Path, name: str) -> int:
    """Where section ``name`` of the file starts (its checks done: the file may then be
    written over in place, which a mapping being read would not survive)."""
    snapshot = SnapshotFile.open(path, FORMAT)
    with contextlib.suppress(DamagedFile):
        snapshot.verified()
    return int(snapshot._sections[name]["offset"])


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size * 2 // 3]),
    "empty": lambda p: p.write_bytes(b""),
    "not an index": lambda p: p.write_bytes(b"GMRECALL" + bytes(range(256)) * 64),
    "a flipped byte in the vectors": lambda p: _flip(p, 4096 + 100),
    "a flipped byte in the manifest": lambda p: _flip(p, p.stat().st_size - 40),
    "a flipped byte in the header": lambda p: _flip(p, 20),
    # an Arrow table: checked before Arrow parses it
    "a flipped byte in a table": lambda p: _flip(p, _section_at(p, "memory_lists") + 200),
    # the last array written: checked by the thread after everything else was decoded
    "a flipped byte in the last array": lambda p: _flip(
        p, _section_at(p, "entities.times.values") + 3),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_file_is_rebuilt_with_a_warning(saved: Path, damage: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    DAMAGE[damage](saved / FILE_NAME)
    with caplog.at_level(logging.WARNING, logger="graphmem"), _open(saved) as store:
        answers = _answers(store)
    assert any("recall index" in r.message and "damaged" in r.message
               for r in caplog.records), caplog.text
    assert answers == _fresh(saved)
    with _open(saved) as store:  # the file was written again, whole
        store._recall_index.ensure_index()
        assert store._recall_index._saved.mark is not None


def test_a_file_whose_sections_fail_their_checksums_is_never_used(saved: Path) -> None:
    path = saved / FILE_NAME
    _flip(path, _section_at(path, "vectors") + 7)
    snapshot = SnapshotFile.open(path, FORMAT)  # the arrays are checked meanwhile
    with pytest.raises(DamagedFile, match="section vectors fails its checksum"):
        snapshot.verified()
    with pytest.raises(DamagedFile, match="section vectors"):  # nothing more is read
        snapshot.table("entities")
    _flip(path, _section_at(path, "vectors") + 7)  # mended
    _flip(path, _section_at(path, "entities") + 100)
    snapshot = SnapshotFile.open(path, FORMAT)
    with pytest.raises(DamagedFile, match="section entities fails its checksum"):
        snapshot.table("entities")  # before Arrow parses it
    with pytest.raises(DamagedFile, match="section entities"):
        snapshot.verified()


def test_what_decoding_a_corrupt_file_raises_is_damage_not_a_crash(
        saved: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Sections are decoded while their checksums are checked: whatever decoding a
    corrupt one raises (here an OverflowError, as a wild time would) rebuilds the index
    with a warning; on a sound file the same error is raised, not hidden."""
    real = _persist.read_index

    def overflow(snapshot: SnapshotFile) -> RecallIndex:
        real(snapshot)
        raise OverflowError("date value out of range")

    monkeypatch.setattr(_persist, "read_index", overflow)
    with _open(saved) as store, pytest.raises(OverflowError):
        store.recall("pump", k=2)
    _flip(saved / FILE_NAME, _section_at(saved / FILE_NAME, "vectors") + 11)
    with caplog.at_level(logging.WARNING, logger="graphmem"), _open(saved) as store:
        answers = _answers(store)
    assert any("damaged" in r.message and "checksum" in r.message
               for r in caplog.records), caplog.text
    assert answers == _fresh(saved)


def test_another_stores_file_is_not_read(saved: Path, tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    other = tmp_path / "other"
    with _open(other) as store:
        store.add("A memory of another store about Caroline and Acme Inc.")
        store.recall("Caroline", k=1)
    shutil.copy(other / FILE_NAME, saved / FILE_NAME)
    with caplog.at_level(logging.WARNING, logger="graphmem"), _open(saved) as store:
        answers = _answers(store)
    assert any("belongs to store" in r.message for r in caplog.records), caplog.text
    assert answers == _fresh(saved)


def test_a_file_the_change_log_no_longer_reaches_is_rebuilt(
        saved: Path, monkeypatch: pytest.MonkeyPatch, no_build: list[int]) -> None:
    monkeypatch.setattr(ChangeJournal, "SLOTS", 4)
    with _open(saved, persist_index=False) as store:
        for i in range(5):  # five commits: the first falls out of a ring of four
            store.add(f"Nadia reviewed the Orchard release notes, part {i}")
    with _open(saved) as store:
        answers = _answers(store)
    assert no_build, "a file older than the change log was read"
    assert answers == _fresh(saved)


def test_a_new_field_of_the_index_makes_old_files_outdated(
        saved: Path, monkeypatch: pytest.MonkeyPatch, no_build: list[int]) -> None:
    monkeypatch.setattr(_persist, "INDEX_FIELDS", (*_persist.INDEX_FIELDS, "tags"))
    with _open(saved) as store:
        _index(store)
    assert no_build


def test_every_attribute_of_the_index_is_written() -> None:
    """A new attribute of the index or its parts must be written (and ``FORMAT`` raised):
    this fails until ``ATTRIBUTES`` and the codec know it."""
    index = RecallIndex(8)
    index._adjacency[(1.0, 1.0, 50)] = Adjacency(index, 1.0, 1.0, 50)
    found = {
        RecallIndex: vars(index), BM25Index: vars(BM25Index()), EdgeTable: vars(EdgeTable()),
        Adjacency: vars(index._adjacency[(1.0, 1.0, 50)]), EntityIndex: vars(EntityIndex()),
        SignCodes: vars(SignCodes(8))}
    for kind, attributes in found.items():
        assert set(attributes) == ATTRIBUTES[kind], kind.__name__


@pytest.mark.parametrize("loaded", [True, False], ids=["index loaded", "index not loaded"])
def test_a_forget_leaves_no_trace_in_the_file_even_before_the_store_closes(
        saved: Path, loaded: bool) -> None:
    secret = "Zorbamek"
    with _open(saved) as store:
        gone = store.add(f"{secret} keeps the spare key under the lake house mat", owner="ana")
        store.recall("spare key lake house", k=2)
        store._recall_index._saved._write(_index(store), store._ctx.engine.change_mark())
    assert secret.lower().encode() in (saved / FILE_NAME).read_bytes().lower()  # the trap
    with _open(saved) as store:
        if loaded:
            _index(store)
        store.forget(gone.id, confirm=True)
        file = saved / FILE_NAME  # as a process killed now would leave it
        assert not file.exists() or secret.lower().encode() not in file.read_bytes().lower()
    with _open(saved) as store:  # written again when it closed, or built here
        answers = _answers(store)
    assert answers == _fresh(saved)
    assert secret.lower().encode() not in (saved / FILE_NAME).read_bytes().lower()


def test_list_columns_of_new_memory_survive_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with _open(path, persist_index=False) as store:  # 20 rows checkpointed at close
        ids = [store.add(f"Note {i} about the year {2000 + i}.").id for i in range(20)]
    with _open(path, persist_index=False) as store:
        store.update(ids[3], text="Note 3 has no date any more.")  # times_from: [] now
        new = store.add("Nadia moved to Oslo in 2025.")
        assert [t.year for t in new.times_from] == [2025]  # what was written
    with _open(path, persist_index=False) as store:  # after the checkpoint at close
        assert [t.year for t in store.get(new.id).times_from] == [2025]
