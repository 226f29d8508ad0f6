"""The FACT table made again when the store opens, once enough facts were added since it
was last made (``remake_facts``): Kuzu keeps a relationship table's rows by the node
group of their ends, and the few entities that facts join make every checkpoint after
new facts cost more as facts come in a few at a time (6.0 s at 159k facts, 0.54 s once
the table was made again)."""

from __future__ import annotations

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


def test_the_fact_table_is_made_again_on_opening_and_keeps_every_fact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once enough facts were added since the table was last made, the store opening
    makes it again, the facts as they were (ids, sources, validity, confidence), and the
    store goes on: recall, a fact ended by a later one, forget, opening again."""
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
        _add(store, 5)  # 10 facts: not yet
    with MemoryStore(path, embedder="hashing") as store:
        assert not made
        _add(store, 2, start=5)  # 14 facts
        before = _facts(store)
        assert not made  # not while the store is open
    with MemoryStore(path, embedder="hashing") as store:
        assert made == [14]
        assert _facts(store) == before
        assert store._ctx.engine.meta()["facts_made"] == "14"
        _add(store, 3, start=7)  # 20 facts: not yet half as many again
        store.add("Dana Silva0 moved to Porto.", id="urn:moved", owner="o")
        hits = store.recall("Where does Dana Silva0 live?", owner="o", k=5,
                            record_access=False)
        assert hits and {h.memory.id for h in hits} & {"urn:0", "urn:moved"}
        store.forget("urn:1", confirm=True)
        after = _facts(store)
        assert all("urn:1" not in f[4] for f in after)
    with MemoryStore(path, embedder="hashing") as store:
        assert made == [14]
        assert _facts(store) == after
        assert _FACT_NEW not in _tables(store)


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
    did it, from outside): the store opens all the same, the filled copy is dropped at
    once (every later making failed on it, each reading every fact first), and the next
    opening makes the table again."""
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
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        _add(store, 2)
    with caplog.at_level(logging.WARNING, logger="graphmem"), \
            MemoryStore(path, embedder="hashing") as store:
        assert refused == [_FACT_NEW]
        assert "making the fact table again failed" in caplog.text
        assert _FACT_NEW not in _tables(store)
        assert len(store.facts(owner="o")) == 4
        assert "facts_made" not in store._ctx.engine.meta()
    with MemoryStore(path, embedder="hashing") as store:
        assert store._ctx.engine.meta()["facts_made"] == "4"
