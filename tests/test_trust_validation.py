"""Writes fail before they commit, never after; validation gaps that let bad state in.

Each refused call leaves the store exactly as it was."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import (
    ConflictError,
    HashingEmbedder,
    InvalidInputError,
    MemoryStore,
    RecordError,
)
from ingest.ump import import_ump


def _state(store: MemoryStore) -> str:
    return json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)


@pytest.mark.parametrize("provenance", [{1: 2}, {"a": {1: 2}}, {"a": (1, 2)},
                                        {"n": {"m": [1, {2: 3}]}}])
def test_odd_json_is_stored_as_json_and_read_back(mem_store: MemoryStore,
                                                  provenance: dict[Any, Any]) -> None:
    memory = mem_store.add("a note", provenance=provenance)
    expected = json.loads(json.dumps(provenance))
    assert memory.provenance == expected  # what the call returned ...
    assert mem_store.get(memory.id).provenance == expected  # ... is what was stored


@pytest.mark.parametrize("field,value", [
    ("provenance", {"a": float("nan")}), ("provenance", {"a": b"bytes"}),
    ("extra", {"x": {1, 2}}), ("integrity", "not an object"), ("tags", ["ok"] * 65),
    ("tags", ["x" * 201]), ("visibility", "v" * 201), ("visibility", ""),
    ("entities", ["e"] * 300), ("valid_from", "not a time"),
    # deeper than export and --json can write out (their serializer stops at 254 levels)
    ("extra", functools.reduce(lambda inner, _: {"a": inner}, range(150), {})),
])
def test_bad_fields_fail_before_anything_is_written(mem_store: MemoryStore, field: str,
                                                    value: Any) -> None:
    before = _state(mem_store)
    with pytest.raises(InvalidInputError) as caught:
        mem_store.add("a note", **{field: value})
    assert caught.value.field == field
    assert _state(mem_store) == before


class _FailingEmbedder(HashingEmbedder):
    """Fails on the n-th call: a later batch of a bulk add."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.calls, self.fail_on = 0, fail_on

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise InvalidInputError("the embedding service failed", field="text")
        return super().embed(texts)


def test_a_bulk_add_is_all_or_nothing(tmp_path: Path) -> None:
    embedder = _FailingEmbedder(fail_on=3)
    with MemoryStore(tmp_path / "db", embedder=embedder) as store:
        records = [{"text": f"memory {i}"} for i in range(50)]
        with pytest.raises(InvalidInputError, match="embedding service"):
            store.add_many(records, batch_size=10)
        assert store.stats().memories == 0 and store.stats().versions == 0
        with pytest.raises(InvalidInputError, match="record 37"):
            store.add_many([*records[:37], {"text": ""}], batch_size=10)
        assert store.stats().memories == 0


def test_valid_from_after_valid_to_is_refused(mem_store: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="valid_from") as caught:
        mem_store.add("x", valid_from="2025-02-01T00:00:00Z", valid_to="2025-01-01T00:00:00Z")
    assert caught.value.field == "valid_to"
    memory = mem_store.add("x", valid_from="2025-01-01T00:00:00Z")
    before = _state(mem_store)
    with pytest.raises(InvalidInputError, match="valid_from"):
        mem_store.update(memory.id, valid_to=memory.valid_from.replace(year=2024))
    assert _state(mem_store) == before
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"id": "urn:v:1", "kind": "note", "body": {"text": "x"},
                                 "time": {"valid_from": "2025-02-01T00:00:00Z",
                                          "valid_to": "2025-01-01T00:00:00Z"}}]))
    with pytest.raises(RecordError, match="valid"):
        import_ump(mem_store, path)
    assert _state(mem_store) == before


def _record(memory_id: str, superseded_by: list[str]) -> dict[str, Any]:
    return {"id": memory_id, "kind": "semantic", "body": {"text": f"text of {memory_id}"},
            "superseded_by": superseded_by}


@pytest.mark.parametrize("records,culprit", [
    ([_record("urn:c:a", ["urn:c:a"])], "urn:c:a"),
    ([_record("urn:c:a", ["urn:c:b"]), _record("urn:c:b", ["urn:c:a"])], "urn:c:"),
    ([_record("urn:c:a", ["urn:c:b"]), _record("urn:c:b", ["urn:c:c"]),
      _record("urn:c:c", ["urn:c:a"])], "urn:c:"),
])
def test_supersede_cycles_in_files_are_refused(mem_store: MemoryStore, tmp_path: Path,
                                               records: list[dict[str, Any]],
                                               culprit: str) -> None:
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(records))
    before = _state(mem_store)
    with pytest.raises(RecordError, match="cycle") as caught:
        import_ump(mem_store, path)
    assert str(path) in str(caught.value) and culprit in str(caught.value)
    assert _state(mem_store) == before


def test_a_cycle_through_the_store_is_refused(mem_store: MemoryStore, tmp_path: Path) -> None:
    old = mem_store.add("v1", id="urn:c:1")
    new = mem_store.supersede(old.id, "v2")
    with pytest.raises(ConflictError, match="cycle"):
        mem_store.supersede(new.id, old.id)
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps([_record("urn:c:1", []), _record(new.id, ["urn:c:1"])]))
    with pytest.raises(RecordError, match="cycle"):
        import_ump(mem_store, path)


def test_supersede_says_nothing_about_another_owners_ids(mem_store: MemoryStore) -> None:
    hidden = mem_store.add("bob's secret", owner="bob")
    mine = mem_store.add("ann's note", owner="ann")
    with_hidden = mem_store.supersede(mine.id, hidden.id, owner="ann")
    other = mem_store.add("ann's other note", owner="ann")
    with_unknown = mem_store.supersede(other.id, "urn:graphmem:doesnotexist", owner="ann")
    # both ids were taken as the text of a new memory of ann: the same answer
    assert (with_hidden.text, with_hidden.owner) == (hidden.id, "ann")
    assert (with_unknown.text, with_unknown.owner) == ("urn:graphmem:doesnotexist", "ann")
    assert mem_store.get(hidden.id).superseded_by == ()
