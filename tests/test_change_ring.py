"""The change ring of a Kuzu store (``graphmem._kuzu._journal``): a write transaction's
row goes into its slot by CREATE on the ring's first lap and by MATCH once the slot holds
a row (a MERGE cost a field write 0.3-0.7 ms of CPU at 100k memories), a row that went
missing is written again, and the ring reads back every change in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore
from graphmem._kuzu import KuzuEngine
from graphmem._kuzu._db import Tx
from graphmem._kuzu._journal import ChangeJournal


def _ring_writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word (CREATE, MATCH, MERGE) of each statement that writes a ring row."""
    seen: list[str] = []
    original = Tx.run

    def run(self: Tx, query: str, params: Any = None) -> Any:
        if "(c:Change" in query and ("SET" in query or query.startswith("CREATE")):
            seen.append(query.split()[0])
        return original(self, query, params)

    monkeypatch.setattr(Tx, "run", run)
    return seen


def _engine(store: MemoryStore) -> KuzuEngine:
    engine = store._ctx.engine
    assert isinstance(engine, KuzuEngine)
    return engine


def follows_an_update_and_a_forget(store: MemoryStore, updated: str, forgotten: str) -> str:
    """Check that the ring reads back an update of ``updated`` then a forget of
    ``forgotten``, in order; the mark from before them."""
    engine = _engine(store)
    mark = engine.change_mark()
    store.update(updated, importance=0.3)
    store.forget(forgotten, confirm=True)
    changes = engine.changes_since(mark)
    assert changes is not None
    assert [(c.ids, c.removed, c.bulk) for c in changes] == [
        ((updated,), (), False), ((forgotten,), (forgotten,), False)]
    return mark


def _rows(engine: KuzuEngine) -> int:
    return int(engine.db.read("MATCH (c:Change) RETURN count(c)")[0][0])


def _changed_since(engine: KuzuEngine, mark: str) -> list[tuple[str, ...]] | None:
    changes = engine.changes_since(mark)
    return None if changes is None else [c.ids for c in changes]


def test_rows_are_created_on_the_first_lap_then_matched(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(ChangeJournal, "SLOTS", 4)
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        ids = [store.add(f"note {i} about the harbour").id for i in range(3)]
        engine = _engine(store)
        missing = 4 - _rows(engine)
        seen = _ring_writes(monkeypatch)
        marks, written = [], []
        for step in range(10):  # past two laps of the ring
            marks.append(engine.change_mark())
            store.update(ids[step % 3], importance=0.1 + step / 20)
            written.append((ids[step % 3],))
        assert seen == ["CREATE"] * missing + ["MATCH"] * (10 - missing)
        assert _rows(engine) == 4
        for back in (1, 2, 3):  # what the ring still holds, in order
            assert _changed_since(engine, marks[-back]) == written[-back:]
        assert _changed_since(engine, marks[-5]) is None  # no longer held
        mark = engine.change_mark()
    with MemoryStore(path, embedder="hashing") as store:  # a new process reads the slots
        seen.clear()
        store.update(ids[0], importance=0.95)
        assert seen == ["MATCH"]
        assert _changed_since(_engine(store), mark) == [(ids[0],)]


def test_a_row_that_went_missing_is_written_again(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ChangeJournal, "SLOTS", 4)
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        ids = [store.add(f"note {i} about the harbour").id for i in range(5)]
        engine = _engine(store)
        store.update(ids[0], importance=0.2)  # the ring is full and its slots known
        assert _rows(engine) == 4
        mark = engine.change_mark()
        next_slot = (int(mark.split(":")[0]) + 1) % 4
        engine.db.run_auto("MATCH (c:Change {slot: $s}) DELETE c", {"s": next_slot})
        seen = _ring_writes(monkeypatch)
        store.update(ids[1], importance=0.3)
        assert seen == ["MATCH", "MERGE"]
        assert _changed_since(engine, mark) == [(ids[1],)]


def test_a_row_s_text_is_read_back_whole_and_a_text_not_so_made_as_bulk(
        tmp_path: Path) -> None:
    """A ring row keeps what its transaction changed as one JSON text (schema v10): ids
    with quotes, commas and non-ASCII come back as written, erasures with them; a text
    that does not parse says anything may have changed."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        engine = _engine(store)
        odd = ['urn:"a",b', "urn:ümlaut ☃", "urn:[x]"]
        for memory_id in odd:
            store.add(f"note about {memory_id}", id=memory_id)
        mark = follows_an_update_and_a_forget(store, odd[0], odd[1])
        seq = int(engine.change_mark().split(":")[0])
        engine.db.run_auto("MATCH (c:Change {seq: $s}) SET c.body = 'not json'", {"s": seq})
        changes = engine.changes_since(mark)
        assert changes is not None and changes[-1].bulk and not changes[-1].ids
