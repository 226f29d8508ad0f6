"""A write starts from the row the store holds current (the recall index's snapshot, the
row cache, which a commit that only sets fields keeps current) instead of reading it
again; what it writes is what it wrote when it read the row."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from graphmem import InvalidInputError, MemoryStore, ReadOnlyStoreError, Settings
from graphmem.algorithms import engine_of


def _store(path: Path, n: int = 24) -> tuple[MemoryStore, list[str]]:
    store = MemoryStore(path, embedder="hashing", settings=Settings())
    ids = [m.id for m in store.add_many(
        [{"text": f"Person{i} lives in City{i % 5} and works at Org{i % 3}.", "owner": "o"}
         for i in range(n)])]
    return store, ids


def _reads(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids the engine is asked for one at a time from now on."""
    engine = engine_of(store)
    asked: list[str] = []
    get = engine.get

    def counted(memory_id: str):  # type: ignore[no-untyped-def]
        asked.append(memory_id)
        return get(memory_id)

    monkeypatch.setattr(engine, "get", counted)
    return asked


def test_writes_after_a_recall_read_no_row_and_write_what_the_store_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = _store(tmp_path / "db")
    with store:
        store.recall("Person3 City3", owner="o", k=5)  # the recall index is loaded
        asked = _reads(store, monkeypatch)
        updated = store.update(ids[0], importance=0.9, tags=["x"], owner="o")
        again = store.update(ids[0], importance=0.2, owner="o")  # from the row cache
        helped = store.feedback(ids[1], useful=True, owner="o")
        gone = store.tombstone(ids[2], reason="test")
        assert asked == []
        store.restore(ids[2])  # from the row the tombstone left in the cache
        stored = {i: engine_of(store).get(i) for i in ids[:3]}
        assert (updated.importance, updated.tags) == (0.9, ("x",))
        assert again == stored[ids[0]]
        assert (again.importance, again.tags, again.version) == (0.2, ("x",), 3)
        assert helped == stored[ids[1]] and helped.useful_count == 1
        assert gone.status.value == "tombstoned" and stored[ids[2]].status.value == "active"
        # two version rows each, the second built on the first
        assert [v.importance for v in store.history(ids[0])][-2:] == [0.9, 0.2]


def test_a_store_whose_index_is_not_loaded_reads_the_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = _store(tmp_path / "db")
    with store:
        asked = _reads(store, monkeypatch)
        store.update(ids[0], importance=0.9)
        assert asked == [ids[0]]


def test_held_rows_equal_the_stored_rows_after_every_kind_of_write(tmp_path: Path) -> None:
    rng = random.Random(0)
    store, ids = _store(tmp_path / "db", 40)
    engine = engine_of(store)

    def check(step: str, least: int = len(ids) - 3) -> None:
        store.get(ids[0])  # a read: the accesses recorded so far are written first
        held = {i: store._recall.held(i) for i in ids}
        assert sum(m is not None for m in held.values()) >= least, step
        wrong = [i for i, m in held.items() if m is not None and m != engine.get(i)]
        assert wrong == [], step

    with store:
        store.recall("Person3 City3", owner="o", k=5)
        check("loaded")
        for round_ in range(3):
            for query in ("Person1 City1", "City2 Org2", "works at Org1"):
                store.recall(query, owner="o", k=5, record_access=True)
            check(f"recalls recorded, round {round_}")
            for memory_id in rng.sample(ids, 6):
                store.feedback(memory_id, useful=rng.random() < 0.6, owner="o")
            check(f"feedback, round {round_}")
            for memory_id in rng.sample(ids, 6):
                store.update(memory_id, importance=rng.random(), tags=["t"], owner="o")
            check(f"updates, round {round_}")
        for memory_id in ids[:3]:
            store.tombstone(memory_id, reason="test")
        check("tombstones")
        for memory_id in ids[:3]:
            store.restore(memory_id)
        check("restores")
        store.update(ids[5], text="Person5 moved to Lisbon.")
        check("a new text")
        store.supersede(ids[6], ids[7])
        check("a supersede")
        # the jobs hand the index what they set, not the version they set from the row's
        store.run_lifecycle(apply=True)
        check("a lifecycle run", least=0)
        for memory_id in ids[:10]:
            store.update(memory_id, importance=0.5, owner="o")
        check("updates after the run", least=10)


def test_feedback_after_recorded_recalls_counts_every_access(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "db")
    with store:
        hit = store.recall("Person4 City4", owner="o", k=1, record_access=True)[0].memory.id
        for _ in range(2):
            store.recall("Person4 City4", owner="o", k=1, record_access=True)
        # the accesses are counted in the index at once, written in the background
        memory = store.feedback(hit, useful=True, owner="o")
        assert memory.access_count == 4
        assert store.get(hit).access_count == 4
        assert len(store.get(hit).access_times) == 4


def test_writes_after_counted_accesses_do_not_wait_for_their_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The accesses a recall or a useful feedback counts are in the held rows: a write
    starts from them without committing them first; a read of the store does."""
    store, ids = _store(tmp_path / "db")
    with store:
        store._recall._access._window = 60.0  # written on a flush alone
        hit = store.recall("Person4 City4", owner="o", k=1, record_access=True)[0].memory.id
        written: list[list[str]] = []
        engine = engine_of(store)
        record = engine.record_access
        monkeypatch.setattr(engine, "record_access",
                            lambda rows: (written.append(sorted(rows)), record(rows))[1])
        helped = store.feedback(hit, useful=True, owner="o")
        others = [i for i in ids if i != hit]
        store.update(others[0], importance=0.3, owner="o")
        store.tombstone(others[1], reason="test")
        store.feedback(hit, useful=False, owner="o")
        assert written == []
        assert helped.access_count == 2 and helped.useful_count == 1
        assert store.get(hit).access_count == 2  # a read: the accesses are written first
        assert written == [[hit]]


@pytest.mark.parametrize("write", ["text", "subject", "supersede"])
def test_accesses_not_yet_written_survive_a_write_that_reads_the_memory_again(
        tmp_path: Path, write: str) -> None:
    """A new text or subject, or a supersede, makes the index read the memory again:
    what the store held then had not the accesses recalls and feedback had counted
    (written later), and the next count was written over them."""
    path = tmp_path / "db"
    store, ids = _store(path)
    with store:
        hit = store.recall("Person4 City4", owner="o", k=1, record_access=True)[0].memory.id
        store.recall("Person4 City4", owner="o", k=1, record_access=True)
        store.feedback(hit, useful=True, owner="o")
        if write == "supersede":
            store.supersede(hit, next(i for i in ids if i != hit))
        else:
            store.update(hit, owner="o", **{write: f"Person4 moved, {write} edited."})
        assert store._recall.held(hit).access_count == 3
        store.feedback(hit, useful=True, owner="o")
    with MemoryStore(path, embedder="hashing") as again:
        memory = again.get(hit)
        assert (memory.access_count, len(memory.access_times)) == (4, 4)


def test_accesses_not_yet_written_survive_an_index_built_again(tmp_path: Path) -> None:
    """A reembed is a bulk change: the index is dropped and built again from the store,
    which had not the accesses counted in the old one yet."""
    path = tmp_path / "db"
    store, _ = _store(path)
    with store:
        store._recall._access._window = 60.0  # written on a flush alone
        for _ in range(3):
            hit = store.recall("Person4 City4", owner="o", k=1,
                               record_access=True)[0].memory.id
        store.reembed("hashing")
        assert store.recall("Person4 City4", owner="o", k=1)[0].memory.access_count == 3
        store.recall("Person4 City4", owner="o", k=1, record_access=True)
    with MemoryStore(path, embedder="hashing") as again:
        assert again.get(hit).access_count == 4


def test_a_refused_feedback_counts_no_access(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "db")
    with store:
        store.recall("Person4 City4", owner="o", k=1)
    with MemoryStore(tmp_path / "db", embedder="hashing", read_only=True) as reader:
        hit = reader.recall("Person4 City4", owner="o", k=1)[0].memory.id
        with pytest.raises(ReadOnlyStoreError):
            reader.feedback(hit, useful=True, owner="o")
        assert reader.recall("Person4 City4", owner="o", k=1)[0].memory.access_count == 0
        assert reader.get(hit).access_count == 0


def test_a_read_two_commits_overtake_is_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row read outside the pool (a hit's, a write's) while one commit changed it and
    another changed something else is not cached: the next write starts from the new row."""
    store, ids = _store(tmp_path / "db", 3)
    with store:
        store.recall("Person1", k=3)
        store.update(ids[0], importance=0.1)  # its snapshot row is old now
        store.drop_caches()
        engine = engine_of(store)
        get, read, go = engine.get, threading.Event(), threading.Event()

        def slow(memory_id: str):  # type: ignore[no-untyped-def]
            row = get(memory_id)
            if threading.current_thread().name == "reader":
                read.set()
                go.wait(10)
            return row

        monkeypatch.setattr(engine, "get", slow)
        reader = threading.Thread(target=store._rows.held, name="reader",
                                  args=(ids[0], store._recall_index.current))
        reader.start()
        assert read.wait(10)
        store.update(ids[0], importance=0.9)
        store.update(ids[1], importance=0.7)
        go.set()
        reader.join()
        again = store.update(ids[0], tags=["kept"])
        assert (again.importance, again.version) == (0.9, 4)
        assert engine.get(ids[0]) == again
        assert [v.seq for v in store.history(ids[0])] == [1, 2, 3, 4]


@pytest.mark.parametrize("project", [5, "p" * 3000, "a\x00b"])
def test_an_update_of_a_bad_project_is_refused_and_writes_nothing(
        tmp_path: Path, project: object) -> None:
    store, ids = _store(tmp_path / "db", 2)
    with store:
        store.recall("Person1", k=3)
        with pytest.raises(InvalidInputError, match="project"):
            store.update(ids[0], project=project)  # type: ignore[arg-type]
        assert store.get(ids[0]).version == 1 and store.get(ids[0]).project is None
        assert store.update(ids[0], project="kept").version == 2
