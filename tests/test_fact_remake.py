"""The FACT table made again as facts are added (``remake_facts``): Kuzu keeps a
relationship table's rows by the node group of their ends, and the few entities that
facts join make every checkpoint after new facts cost more as facts come in a few at a
time (6.0 s at 159k facts, 0.54 s once the table was made again)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from graphmem import MemoryStore
from graphmem._kuzu import KuzuEngine
from graphmem._kuzu._db import Database
from graphmem._kuzu._schema import _FACT_NEW, _FACT_TABLE, count_facts

CITIES = ["Oslo", "Lima", "Cork", "Kyiv", "Graz", "Bern", "Riga", "Turin"]


def _facts(store: MemoryStore) -> list[tuple[object, ...]]:
    return sorted((f.id, f.subject, f.predicate, f.object, f.sources, f.valid_from,
                   f.valid_to, f.confidence) for f in store.facts(owner="o"))


def _tables(store: MemoryStore) -> set[str]:
    return {r[0] for r in store._ctx.engine.db.read("CALL show_tables() RETURN name")}


def _add(store: MemoryStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        store.add(f"Dana Silva{i} lives in {CITIES[i % 8]}. Bo Lund{i} works at Globex.",
                  id=f"urn:{i}", owner="o")


def test_the_fact_table_is_made_again_as_facts_come_and_keeps_every_fact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once enough facts were added since the table was last made, it is made again,
    the facts as they were (ids, sources, validity, confidence), and the store goes on:
    recall, the walks over facts, a fact ended by a later one, forget, reopening."""
    monkeypatch.setattr(KuzuEngine, "REMAKE_FACTS", 12)
    monkeypatch.setattr(KuzuEngine, "REMAKE_SHARE", 0.5)
    made: list[int] = []  # facts held at each making
    remake = Database.swap_tables

    def counted(self: Database, old: str, new: str) -> None:
        made.append(count_facts(self, new))
        remake(self, old, new)

    monkeypatch.setattr(Database, "swap_tables", counted)
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        _add(store, 3)
        assert not made
        before = _facts(store)
        _add(store, 4, start=3)  # 12 facts at the sixth memory: made again once
        assert made == [12]
        assert set(before) <= set(_facts(store))
        assert store._ctx.engine.meta()["facts_made"] == "12"
        _add(store, 2, start=7)  # 16 facts: not yet half as many again
        assert len(made) == 1
        store.add("Dana Silva0 moved to Porto.", id="urn:moved", owner="o")
        hits = store.recall("Where does Dana Silva0 live?", owner="o", k=5,
                            record_access=False)
        assert hits and {h.memory.id for h in hits} & {"urn:0", "urn:moved"}
        store.forget("urn:1", confirm=True)
        after = _facts(store)
        assert all("urn:1" not in f[4] for f in after)
    with MemoryStore(path, embedder="hashing") as store:
        assert _facts(store) == after
        assert _FACT_NEW not in _tables(store)


def test_reads_going_on_while_the_fact_table_is_made_again_do_not_fail(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The swap takes the store alone (reads wait for it) and every connection plans
    its statements again after it: a plan kept named the dropped table."""
    monkeypatch.setattr(KuzuEngine, "REMAKE_FACTS", 4)
    monkeypatch.setattr(KuzuEngine, "REMAKE_SHARE", 0.0)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        _add(store, 2)
        errors: list[BaseException] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                try:
                    store.recall("Who works at Globex?", owner="o", k=5, record_access=False)
                    store.facts(owner="o")
                    store.cypher("MATCH ()-[f:FACT]->() RETURN count(*) AS n")
                except BaseException as exc:  # any failure is the finding
                    errors.append(exc)

        readers = [threading.Thread(target=read) for _ in range(2)]
        for thread in readers:
            thread.start()
        try:
            _add(store, 12, start=2)  # made again three times or more
        finally:
            stop.set()
            for thread in readers:
                thread.join()
        assert not errors, errors[:3]
        assert len(store.facts(owner="o")) >= 24
        assert int(store._ctx.engine.meta()["facts_made"]) >= 20  # made again 4 times


def test_a_making_cut_short_is_finished_when_the_store_opens(tmp_path: Path) -> None:
    """Killed after the new table was filled, the old one still holds every fact: the
    new one is dropped. Killed after the old one went, the new one takes its name."""
    for cut in ("filled", "dropped"):
        path = tmp_path / cut
        with MemoryStore(path, embedder="hashing") as store:
            _add(store, 3)
            facts = _facts(store)
        db = Database(str(path), buffer_pool_mb=128)
        try:
            db.run_auto(_FACT_TABLE.replace("TABLE FACT(", f"TABLE {_FACT_NEW}(", 1))
            db.run_auto(f"MATCH (a:Entity)-[f:FACT]->(b:Entity) CREATE (a)-[:{_FACT_NEW} {{"
                        "id: f.id, owner: f.owner, predicate: f.predicate, "
                        "confidence: f.confidence, valid_from: f.valid_from, "
                        "valid_to: f.valid_to, recorded: f.recorded, rule: f.rule, "
                        "ended_by: f.ended_by, gone: f.gone, sources: f.sources}]->(b)")
            if cut == "dropped":
                db.run_auto("DROP TABLE FACT")
        finally:
            db.close()
        with MemoryStore(path, embedder="hashing") as store:
            assert _facts(store) == facts
            assert _FACT_NEW not in _tables(store)
            assert "FACT" in _tables(store)


def test_a_making_that_fails_leaves_no_copy_beside_the_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The swap refused (here, injected; the fill's COMMIT finding the buffer pool full
    did it, from outside): the write stands, the filled copy is dropped at once (every
    later making failed on it, each reading every fact first), and the next making
    goes through."""
    import logging

    from graphmem import StoreError

    monkeypatch.setattr(KuzuEngine, "REMAKE_FACTS", 4)
    monkeypatch.setattr(KuzuEngine, "REMAKE_SHARE", 0.0)
    swap = Database.swap_tables
    refused: list[str] = []

    def refusing(self: Database, old: str, new: str) -> None:
        if not refused:
            refused.append(new)
            raise StoreError("the database needs more memory than its buffer pool")
        swap(self, old, new)

    monkeypatch.setattr(Database, "swap_tables", refusing)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        with caplog.at_level(logging.WARNING, logger="graphmem"):
            _add(store, 2)
        assert refused == [_FACT_NEW]
        assert "making the fact table again failed" in caplog.text
        assert _FACT_NEW not in _tables(store)
        assert len(store.facts(owner="o")) == 4
        _add(store, 2, start=2)
        assert store._ctx.engine.meta()["facts_made"] == "8"
