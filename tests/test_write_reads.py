"""A write's read of the memory it changes comes from the rows this process holds (the
recall index's snapshot, the row cache) when it holds them, and what it reads there is
what the store holds: every field, the access counters of recalls not yet written too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem import MemoryStore
from graphmem.algorithms import engine_of

TEXTS = [
    "Caroline went to the LGBTQ support group with Melanie on Sunday.",
    "Melanie painted a sunrise over the lake last week.",
    "Caroline is studying counseling to help transgender youth.",
    "Melanie's kids love the camping trips to the mountains.",
    "The support group meets every Sunday in the library.",
]


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=7)
        return self.now


def _same_as_stored(store: MemoryStore) -> None:
    """Every memory as a write would read it is the stored row, field for field."""
    engine = engine_of(store)
    ctx = store._ctx  # the read a write makes, beside the store's row
    for memory in engine.memories():
        assert ctx.current(memory.id, None).model_dump() == \
            engine.get(memory.id).model_dump(), memory.id  # type: ignore[union-attr]


def test_what_a_write_reads_is_what_the_store_holds(tmp_path: Path) -> None:
    with MemoryStore(str(tmp_path / "db"), embedder="hashing", clock=_Clock()) as store:
        ids = [store.add(t, importance=0.4, tags=["t"]).id for t in TEXTS]
        store.recall("support group", k=5)  # the index and its snapshot are loaded
        _same_as_stored(store)
        store.recall("Melanie painted", k=3, record_access=True)  # counters not yet written
        _same_as_stored(store)
        for memory_id in ids[:3]:
            assert store.update(memory_id, importance=0.8).model_dump() == \
                store.get(memory_id).model_dump()
        assert store.feedback(ids[1], useful=True).model_dump() == \
            store.get(ids[1]).model_dump()
        assert store.feedback(ids[2], useful=False).model_dump() == \
            store.get(ids[2]).model_dump()
        store.update(ids[0], importance=0.3)  # a row the commit handed over, changed again
        store.update(ids[3], text="Melanie's kids love fishing at the lake.")
        store.supersede(ids[4], "The support group meets on Mondays now.")
        assert store.tombstone(ids[1]).model_dump() == store.get(ids[1]).model_dump()
        store.restore(ids[1])
        store.recall("Caroline", k=5, record_access=True)
        _same_as_stored(store)


def test_a_write_does_not_read_a_row_it_holds(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with MemoryStore(str(tmp_path / "db"), embedder="hashing", clock=_Clock()) as store:
        ids = [store.add(t).id for t in TEXTS]
        store.recall("support group", k=5)
        engine = engine_of(store)
        reads: list[str] = []
        get = type(engine).get
        monkeypatch.setattr(type(engine), "get",
                            lambda self, memory_id: reads.append(memory_id)
                            or get(self, memory_id))
        store.update(ids[0], importance=0.9)
        store.update(ids[0], importance=0.2)  # the row the first commit handed over
        store.feedback(ids[1], useful=True)
        store.tombstone(ids[2])
        assert reads == []
        assert store.get(ids[0]).importance == 0.2  # a plain get reads the store
        assert reads == [ids[0]]
        with pytest.raises(Exception, match="no memory"):
            store.update(ids[0], importance=0.5, owner="someone-else")


def test_without_the_index_a_write_reads_the_store(tmp_path: Path) -> None:
    with MemoryStore(str(tmp_path / "db"), embedder="hashing", clock=_Clock()) as store:
        memory_id = store.add(TEXTS[0]).id
        # no recall yet: nothing is held, the row comes from the store
        assert store.update(memory_id, importance=0.7).importance == 0.7
        assert store.get(memory_id).importance == 0.7
