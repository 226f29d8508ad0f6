"""What recall makes of the index alike for every query is made once and kept until the
index changes: the graph walk's rows (memories and the entities they mention), and the
rows of hits materialised from the index snapshot. A change is seen at once: a store that
recalled before a write answers as one that never recalled before it, score for score."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem import MemoryStore
from graphmem._recall._entities import EntityIndex
from graphmem._store import _row_cache

TEXTS = [
    "Caroline went to the LGBTQ support group with Melanie on Sunday.",
    "Melanie painted a sunrise over the lake last week.",
    "Caroline is studying counseling to help transgender youth.",
    "Melanie's kids love the camping trips to the mountains.",
    "Caroline and Melanie talked about adoption agencies.",
    "The support group meets every Sunday in the library.",
]
LATER = ["Melanie signed Caroline up for a pottery class at the library.",
         "Caroline adopted a golden retriever named Oscar."]
QUESTIONS = ["What did Melanie paint?", "Where does the support group meet?",
             "What did Caroline and Melanie talk about?", "Who went camping with Melanie?"]


NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)


def _open(path: Path) -> MemoryStore:
    return MemoryStore(str(path), embedder="hashing", clock=lambda: NOW)


def _answers(store: MemoryStore, questions: list[str]) -> list[list[tuple[str, float, str]]]:
    return [[(h.memory.id, h.score, repr(h.explanation)) for h in store.recall(q, k=5)]
            for q in questions]


def test_a_second_recall_walks_the_rows_the_first_one_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _open(tmp_path / "db") as store:
        for text in TEXTS:
            store.add(text)
        first = _answers(store, QUESTIONS)
        made: list[int] = []
        row = EntityIndex.row
        monkeypatch.setattr(EntityIndex, "row",
                            lambda self, entity: made.append(entity) or row(self, entity))
        assert _answers(store, QUESTIONS) == first
        assert made == []  # no entity's row was made again


def test_a_second_recall_materialises_no_row_of_its_hits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _open(tmp_path / "db") as store:
        for text in TEXTS:
            store.add(text)
    with _open(tmp_path / "db") as store:  # hits come from the index snapshot now
        first = _answers(store, QUESTIONS)
        made: list[str] = []
        materialise = _row_cache.memory_from_fields
        monkeypatch.setattr(_row_cache, "memory_from_fields",
                            lambda row: made.append(row["id"]) or materialise(row))
        assert _answers(store, QUESTIONS) == first
        assert made == []


def test_a_write_after_a_recall_is_walked_as_if_no_recall_came_before(
        tmp_path: Path) -> None:
    with _open(tmp_path / "a") as recalled, _open(tmp_path / "b") as fresh:
        for text in TEXTS:
            recalled.add(text)
            fresh.add(text)
        _answers(recalled, QUESTIONS)  # the walk's rows and the hits' rows are kept
        for text in LATER:
            recalled.add(text)
            fresh.add(text)
        asked = [*QUESTIONS, "What did Caroline do at the library?", "Who is Oscar?"]
        after = _answers(recalled, asked)
        assert any(h[0] == recalled.recall("Oscar", k=1)[0].memory.id
                   for hits in after for h in hits)
        # the same texts in another store: other ids, the same scores and explanations
        assert [[h[1:] for h in hits] for hits in after] == \
            [[h[1:] for h in hits] for hits in _answers(fresh, asked)]
        recalled.forget(recalled.recall("Oscar", k=1)[0].memory.id, confirm=True)
        fresh.forget(fresh.recall("Oscar", k=1)[0].memory.id, confirm=True)
        assert [[h[1:] for h in hits] for hits in _answers(recalled, asked)] == \
            [[h[1:] for h in hits] for hits in _answers(fresh, asked)]


def test_a_recall_beside_a_commit_never_keeps_the_row_it_changed(tmp_path: Path) -> None:
    """Another thread's recall that materialises a hit from the index snapshot while one
    commit's listeners run (after the first of the row cache and the index heard of it,
    before the second) keeps no row of the old text: the next recall shows the new."""
    import threading

    with _open(tmp_path / "db") as store:
        ids = [store.add(text).id for text in TEXTS[:3]]
        store.recall("Caroline Melanie", k=3)  # the index and its snapshot
        store.drop_caches()  # hits come from the snapshot rows
        ctx, index = store._ctx, store._recall_index.current
        assert index is not None
        pos = index.pos[ids[0]]
        ours = {store._rows._on_change, store._recall_index._on_change}
        first = next(n for n, listener in enumerate(ctx._listeners) if listener in ours)
        heard = ctx._listeners[first]

        def then_a_recall(change: object) -> None:
            heard(change)
            other = threading.Thread(target=store._rows.from_snapshot, args=(index, [pos]))
            other.start()
            other.join()

        ctx._listeners[first] = then_a_recall
        store.update(ids[0], text="Caroline moved to Lisbon to study counseling.")
        ctx._listeners[first] = heard
        [hit] = [h for h in store.recall("Caroline counseling", k=3) if h.memory.id == ids[0]]
        assert hit.memory.text == store.get(ids[0]).text == \
            "Caroline moved to Lisbon to study counseling."
