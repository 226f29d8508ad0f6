"""A commit hands its listeners what it wrote: setting a memory's fields (importance,
feedback counters, a tombstone) reaches the recall index without reading the store's
knowledge graph or the memory again, and the index then answers as a fresh build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore
from graphmem._engine import Patch, WriteBatch
from tests.test_persist_index import _answers, _fill, _fresh, _open


def _spy(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The engine reads that follow a commit (facts, mentions, entities, scans)."""
    engine = store._ctx.engine
    reads: list[str] = []
    for name in ("facts", "mentions", "entities", "scan"):
        original: Callable[..., Any] = getattr(engine, name)

        def counted(*args: Any, _name: str = name, _original: Any = original,
                    **kwargs: Any) -> Any:
            reads.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(engine, name, counted)
    return reads


def test_field_writes_reach_the_index_without_reading_the_store_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    with _open(path, persist_index=False) as store:
        ids = _fill(store)
        store.recall("Caroline", k=2)  # the index is loaded
        reads = _spy(store, monkeypatch)
        store.update(ids[1], importance=0.93)
        store.update(ids[2], confidence=0.4, kind="procedural")
        hits = store.recall("Orchard deploy", k=3, record_access=False)
        store.feedback(hits[0].memory.id, useful=True, query="Orchard deploy")
        store.feedback(ids[3], useful=False)
        store.tombstone(ids[8], reason="outdated")
        store.keep(ids[9])
        assert reads == [], "a field write read the store again"
        answers = _answers(store)
        monkeypatch.undo()
    assert answers == _fresh(path)


def test_a_text_change_still_reindexes_text_and_graph(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with _open(path, persist_index=False) as store:
        ids = _fill(store)
        store.recall("Caroline", k=2)
        store.update(ids[1], text="Melanie sculpts herons by the Porto harbour",
                     importance=0.8)
        assert store.recall("herons harbour", k=1, record_access=False)[0].memory.id == ids[1]
        answers = _answers(store)
    assert answers == _fresh(path)


def test_a_batch_says_what_it_patched_only_when_that_is_all_it_did() -> None:
    fields = WriteBatch(patches=[Patch("m1", set={"importance": 0.5}),
                                 Patch("m1", set={"useful_count": 2})])
    assert fields.patched() == {"m1": {"importance": 0.5, "useful_count": 2}}
    fields.unmentioned.append("m1")  # its text changed: its mentions go
    assert fields.patched() is None


def test_a_write_returns_the_memory_as_stored_without_reading_it_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """update, the transitions and feedback hand back the memory their commit left: equal,
    field for field, to reading it again, with no ``get`` after the commit."""
    with _open(tmp_path / "db", persist_index=False) as store:
        ids = _fill(store)
        engine = store._ctx.engine
        gets: list[str] = []
        original = engine.get

        def counted(memory_id: str) -> Any:
            gets.append(memory_id)
            return original(memory_id)

        monkeypatch.setattr(engine, "get", counted)
        writes: list[Callable[[], Any]] = [
            lambda: store.update(ids[10], importance=0.91),
            lambda: store.update(ids[11], tags=["garden", "Ops"], confidence=0.3),
            lambda: store.update(ids[12], kind="procedural", project="orchard",
                                 valid_from="2024-03-01T10:00:00+02:00"),
            lambda: store.update(ids[13], text="Caroline moved the deploy to Friday."),
            lambda: store.update(ids[14], provenance={"source": "chat", "turn": 3}),
            lambda: store.feedback(ids[15], useful=True),
            lambda: store.feedback(ids[15], useful=False),
            lambda: store.tombstone(ids[16], reason="outdated"),
            lambda: store.tombstone(ids[17], reason="duplicate", actor="reviewer"),
        ]
        for write in writes:
            gets.clear()
            returned = write()
            after_commit = len(gets)
            assert after_commit <= 1, f"{returned.id}: read {gets}"  # the check before
            monkeypatch.undo()
            assert returned == store.get(returned.id), returned.id
            monkeypatch.setattr(engine, "get", counted)


def test_a_text_change_lists_the_facts_it_wrote_without_reading_every_fact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text update, an add, a supersede: the index's facts change by what the commit
    wrote (and the facts of entities that came or went), listed as reading every fact
    again lists them, and the index answers as a fresh build."""
    path = tmp_path / "db"
    with _open(path, persist_index=False) as store:
        ids = _fill(store)
        store.recall("Caroline", k=2)
        engine = store._ctx.engine
        every: list[bool] = []
        original = engine.facts

        def facts(**kwargs: Any) -> Any:
            every.append(kwargs.get("all_owners", False) and not kwargs.get("entity_ids"))
            return original(**kwargs)

        monkeypatch.setattr(engine, "facts", facts)
        graph = store._recall_index.ensure_index().entities
        for write in (
                lambda: store.update(ids[13], text="Caroline moved to Zanzibar in 2024."),
                lambda: store.update(ids[13], text="Caroline moved to Porto in 2025 with "
                                                   "Melanie."),
                lambda: store.update(ids[1], text="Nadia joined Globex as an engineer."),
                lambda: store.add("Caroline lives in Berlin and works at Initech.",
                                  owner="ana"),
                lambda: store.supersede(ids[2], "Nadia moved to Oslo in 2025.")):
            write()
            assert not any(every), "a write read every fact again"
            listed = dict(graph.facts_of)
            graph.set_facts(original(all_owners=True))
            assert listed == graph.facts_of
            assert graph.facts_of, "the store holds facts"
        answers = _answers(store)
        monkeypatch.undo()
    assert answers == _fresh(path)
