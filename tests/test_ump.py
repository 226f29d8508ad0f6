"""UMP import and export: lossless round trip, idempotent import, all-or-nothing on bad files."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem import MemoryStore, RecordError
from ingest.ump import export_ump, import_ump, ump_records
from tests.conftest import SAMPLE


def _records() -> list[dict[str, Any]]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def test_round_trip_of_the_sample_file(store: MemoryStore, tmp_path: Path) -> None:
    result = import_ump(store, SAMPLE)
    assert (len(result.created), result.edges_created) == (301, 11)
    out = tmp_path / "out.json"
    assert export_ump(store, out) == 301
    original = sorted(_records(), key=lambda r: r["id"])
    exported = json.loads(out.read_text(encoding="utf-8"))
    graphs = [r.pop("graph", None) for r in exported]  # what the store learnt from the texts
    assert exported == original  # equal up to key order, quirks included
    assert sum(1 for g in graphs if g) > 150


def test_the_graph_travels_with_the_file(tmp_path: Path) -> None:
    """Export, import into an empty store, export again: the same file, graph included
    (entities with their forms and merges, facts with their validity) even after a split
    and a correction that the texts alone would not give back."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2023, 5, 8, tzinfo=UTC)
    with MemoryStore(tmp_path / "a", embedder="hashing") as first:
        import_ump(first, SAMPLE)
        first.add("Melanie went hiking", owner="ann", session="s", created=t0)
        second = first.add("Mel said it rained", owner="ann", session="s", created=t0)
        first.add("Caroline lives in Ibadan", owner="ann", created=t0)
        first.add("Caroline moved to Lisbon", owner="ann", created=t0 + timedelta(days=9))
        [melanie] = first.find_entities("Melanie", owner="ann")
        first.split_entity(melanie.id, "mel", owner="ann")
        assert {m.entity_id for m in first.mentions(second.id)} != {melanie.id}
        export_ump(first, tmp_path / "one.json")
        facts_before = sorted((f.id, f.valid_to) for f in first.facts())
    with MemoryStore(tmp_path / "b", embedder="hashing") as other:
        import_ump(other, tmp_path / "one.json")
        export_ump(other, tmp_path / "two.json")
        assert sorted((f.id, f.valid_to) for f in other.facts()) == facts_before
        assert {e.name for e in other.find_entities("mel", owner="ann")} == {"mel"}
    one = json.loads((tmp_path / "one.json").read_text(encoding="utf-8"))
    two = json.loads((tmp_path / "two.json").read_text(encoding="utf-8"))
    assert one == two
    assert any(r.get("graph", {}).get("facts") for r in one)


def test_a_graph_that_recurs_across_chunks_imports_as_in_one(tmp_path: Path) -> None:
    """An import is written chunk after chunk into one transaction, which the store's
    reads do not show before the commit: an entity or fact that records of several
    chunks carry (or that a later record without a graph states again) is created once,
    and the store is the one a single chunk gives (each chunk planned them again and the
    import failed with nothing imported)."""
    with MemoryStore(tmp_path / "a", embedder="hashing") as first:
        for day in range(4):
            first.add(f"Ana visited Linz on day {day}.", owner="ann")
        first.add("Ana works at Acme.", owner="ann")
        first.add("Tom likes tea.", owner="bob")
        export_ump(first, tmp_path / "one.json")
    records = json.loads((tmp_path / "one.json").read_text(encoding="utf-8"))
    assert sum(1 for r in records if r.get("graph", {}).get("mentions")) >= 5
    mixed = copy.deepcopy(records)
    for record in mixed[1::2]:
        record.pop("graph", None)  # stated again by the text alone
    (tmp_path / "mixed.json").write_text(json.dumps(mixed), encoding="utf-8")

    def graph(path: Path, chunk: int) -> tuple[Any, ...]:
        with MemoryStore(tmp_path / f"{path.stem}-{chunk}", embedder="hashing") as store:
            result = import_ump(store, path, chunk=chunk)
            assert len(result.created) == len(records)
            # by name: entities the rules find get ids keyed by each store's own secret
            name = {e.id: e.name for e in store.entities()}
            return (sorted((name[f.subject], f.predicate, name[f.object],
                            tuple(sorted(f.sources))) for f in store.facts()),
                    sorted(name.values()),
                    sorted((m.memory_id, name[m.entity_id]) for m in store.mentions()))

    for path in (tmp_path / "one.json", tmp_path / "mixed.json"):
        whole = graph(path, 1000)
        assert whole[0] and whole[1]
        assert graph(path, 1) == graph(path, 2) == whole
    # a text before the graph that names the same place: two of them in any chunking
    # (which one a later text takes follows their ids, keyed by each store's secret)
    (tmp_path / "later.json").write_text(json.dumps(mixed[::-1]), encoding="utf-8")
    names = {chunk: graph(tmp_path / "later.json", chunk)[1] for chunk in (1, 2, 1000)}
    assert names[1] == names[2] == names[1000] and names[1].count("linz") == 2


def test_a_later_chunk_may_not_name_an_earlier_chunks_entity_of_another_owner(
        tmp_path: Path, store_location: str) -> None:
    """On either engine: a later chunk sees what an earlier one planned, to refuse another
    owner's entity (a RecordError naming the record, nothing written) and to join its
    owner's facts (one fact stated by both)."""
    with MemoryStore(tmp_path / "a", embedder="hashing") as first:
        first.add("Ana visited Linz.", owner="ann")
        export_ump(first, tmp_path / "one.json")
    [record] = json.loads((tmp_path / "one.json").read_text(encoding="utf-8"))

    def copy_of(owner: str) -> dict[str, Any]:
        other = copy.deepcopy(record)
        other["id"], other["scope"]["owner"] = f"urn:{owner}", owner
        for fact in other["graph"]["facts"]:
            fact["sources"] = [other["id"]]
        return other

    (tmp_path / "bob.json").write_text(json.dumps([record, copy_of("bob")]), encoding="utf-8")
    (tmp_path / "ann.json").write_text(json.dumps([record, copy_of("ann")]), encoding="utf-8")
    with MemoryStore(store_location, embedder="hashing") as store:
        with pytest.raises(RecordError, match="another owner") as caught:
            import_ump(store, tmp_path / "bob.json", chunk=1)
        assert caught.value.index == 1
        assert store.stats().memories == 0 and not store.entities() and not store.facts()
        # nor a memory of another owner that an earlier chunk's text alone brings
        text_only = {k: v for k, v in copy_of("ann").items() if k != "graph"}
        cites = copy_of("bob")
        cites["graph"]["facts"][0]["sources"] = [text_only["id"]]
        (tmp_path / "cites.json").write_text(json.dumps([text_only, cites]), encoding="utf-8")
        with pytest.raises(RecordError, match="another owner") as caught:
            import_ump(store, tmp_path / "cites.json", chunk=1)
        assert caught.value.index == 1 and caught.value.field == "graph.facts[0].sources"
        import_ump(store, tmp_path / "ann.json", chunk=1)  # the store was as it was
        [fact] = store.facts()
        assert sorted(fact.sources) == sorted([record["id"], "urn:ann"])
        assert len(store.entities()) == 2


def test_after_an_import_a_process_resolves_and_records_as_a_reopened_store(
        tmp_path: Path) -> None:
    """What an import adds to the process's caches is what a reopened store reads: a
    text naming a person that the store and the file each hold (two entities of one
    name) goes to the same one (the one of lower id, in both), and a fact added next is
    recorded after the file's facts, even those recorded ahead of this clock."""
    from datetime import timedelta

    for trial in range(6):  # the entities' ids are keyed by each store's own secret
        where = tmp_path / str(trial)
        where.mkdir()
        with MemoryStore(where / "src", embedder="hashing") as source:
            source.add("Ana works at Acme.", owner="ann")
            export_ump(source, where / "f.json")
        records = json.loads((where / "f.json").read_text(encoding="utf-8"))
        for fact in records[0]["graph"]["facts"]:
            fact["recorded"] = (datetime.fromisoformat(fact["recorded"])
                                + timedelta(hours=2)).isoformat()
        (where / "f.json").write_text(json.dumps(records), encoding="utf-8")
        seen = []
        for reopen in (False, True):
            path = where / f"dst{reopen}"
            store = MemoryStore(path, embedder="hashing")
            store.add("Ana visited Linz.", owner="ann", id="urn:old")
            import_ump(store, where / "f.json")
            if reopen:
                store.close()
                store = MemoryStore(path, embedder="hashing")
            with store:
                store.add("Ana likes tea.", owner="ann", id="urn:new")
                anas = sorted(e.id for e in store.entities(owner="ann") if e.name == "ana")
                [chosen] = [anas.index(m.entity_id) for m in store.mentions("urn:new")
                            if m.entity_id in anas]
                facts = sorted(store.facts(owner="ann"), key=lambda f: f.recorded)
                seen.append((chosen, [f.sources for f in facts]))
        assert len(anas) == 2 and seen[0] == seen[1]
        assert seen[0][1][-1] == ("urn:new",)


def test_sample_covers_the_protocol(store: MemoryStore) -> None:
    records = _records()
    assert {r["kind"] for r in records} == {"working", "episodic", "semantic", "procedural",
                                            "identity", "note"}
    assert {r["lifecycle"]["status"] for r in records} == {"active", "candidate", "archived",
                                                           "tombstoned"}
    assert any(r.get("superseded_by") is None for r in records)
    assert any("valid_to" not in r["time"] for r in records)
    assert any(r["time"]["created"].endswith("+01:00") for r in records)
    assert any("x_wren" in r for r in records)


def test_reimport_changes_nothing(store: MemoryStore) -> None:
    import_ump(store, SAMPLE)
    before = store.export()
    again = import_ump(store, SAMPLE)
    assert (again.created, again.updated, again.edges_created) == ([], [], 0)
    assert len(again.unchanged) == 301
    after = store.export()
    before.pop("generated"), after.pop("generated")
    assert after == before


def test_changed_record_is_updated_with_a_version(store: MemoryStore, tmp_path: Path) -> None:
    records = _records()
    import_ump(store, SAMPLE)
    changed = copy.deepcopy(records)
    changed[0]["body"]["text"] = "Nadia now prefers Rust for anything with more than one file."
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    result = import_ump(store, path)
    assert result.updated == [records[0]["id"]]
    history = store.history(records[0]["id"])
    assert [v.change_type.value for v in history] == ["created", "manual_edit"]
    out = tmp_path / "out.json"
    export_ump(store, out)
    exported = {r["id"]: r for r in json.loads(out.read_text(encoding="utf-8"))}
    graph = exported[records[0]["id"]].pop("graph")
    assert exported[records[0]["id"]] == changed[0]
    assert {m["entity"]["name"] for m in graph["mentions"]} >= {"nadia", "rust"}


def _broken(case: str) -> tuple[Any, str]:
    """A broken UMP file's content and what the error must mention."""
    records = _records()[:5]
    if case == "not_json":
        return '[{"id": "urn:x", ', "not valid JSON"
    if case == "not_array":
        return {"records": records}, "JSON array"
    if case == "missing_id":
        del records[3]["id"]
        return records, "record 3, field id"
    if case == "unknown_kind":
        records[2]["kind"] = "dream"
        return records, f"record 2, id {records[2]['id']}, field kind"
    if case == "confidence":
        records[4]["lifecycle"]["confidence"] = 1.5
        return records, "field lifecycle.confidence"
    if case == "timestamp":
        records[1]["time"]["created"] = "last tuesday"
        return records, "field time.created"
    if case == "status":
        records[0]["lifecycle"]["status"] = "forgotten"
        return records, "field lifecycle.status"
    if case == "duplicate":
        records[4]["id"] = records[0]["id"]
        return records, "record 4"
    if case == "no_text":
        records[2]["body"] = {}
        return records, "field body.text"
    if case == "tags":
        records[2]["scope"]["tags"] = "orchard"
        return records, "field scope.tags"
    if case == "record_type":
        records[1] = ["not", "an", "object"]
        return records, "record 1"
    if case == "nan":
        # Python's json reads NaN; the importer must still refuse it.
        return re.sub(r'"confidence": [0-9.]+', '"confidence": NaN', json.dumps(records),
                      count=1), "field lifecycle.confidence"
    raise AssertionError(case)


BROKEN = ["not_json", "not_array", "missing_id", "unknown_kind", "confidence", "timestamp",
          "status", "duplicate", "no_text", "tags", "record_type", "nan"]


@pytest.mark.parametrize("case", BROKEN)
def test_broken_file_changes_nothing(store: MemoryStore, tmp_path: Path, case: str) -> None:
    store.add("already here")
    before = store.export()
    content, expected = _broken(case)
    path = tmp_path / f"{case}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")
    with pytest.raises(RecordError) as info:
        import_ump(store, path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)
    after = store.export()
    before.pop("generated"), after.pop("generated")
    assert after == before


def test_invalid_utf8_and_missing_file(store: MemoryStore, tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"id": "urn:x", "kind": "note", "body": {"text": "caf\xe9"}}]')
    with pytest.raises(RecordError, match="not UTF-8"):
        import_ump(store, path)
    with pytest.raises(RecordError, match="cannot read"):
        import_ump(store, tmp_path / "missing.json")
    assert store.stats().memories == 0


def test_superseded_by_pointing_outside_the_file_is_kept(store: MemoryStore,
                                                         tmp_path: Path) -> None:
    record = _records()[0]
    record["superseded_by"] = ["urn:ump:elsewhere"]
    path = tmp_path / "one.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    result = import_ump(store, path)
    assert result.edges_created == 0
    assert store.get(record["id"]).superseded_by == ("urn:ump:elsewhere",)
    assert result.skipped == [f"{path}: record 0 ({record['id']}): superseded_by names "
                              "urn:ump:elsewhere, which is neither in the file nor in the "
                              "store: no supersede edge was made"]
    # once the successor is in the store, the same file makes the edge and says nothing
    later = _records()[1] | {"id": "urn:ump:elsewhere", "superseded_by": []}
    (tmp_path / "later.json").write_text(json.dumps([later]), encoding="utf-8")
    assert import_ump(store, tmp_path / "later.json").skipped == []
    again = import_ump(store, path)
    assert again.skipped == [] and again.edges_created == 1


def test_export_of_one_owner(store: MemoryStore, tmp_path: Path) -> None:
    import_ump(store, SAMPLE)
    records = sorted(_records(), key=lambda r: r["id"])
    owners = {r["scope"]["owner"] for r in records}
    assert len(owners) == 2
    owned_entities = {o: {e.id for e in store.entities(owner=o)} for o in owners}
    total = 0
    for owner in sorted(owners):
        out = tmp_path / f"{owner.rsplit(':', 1)[-1]}.json"
        count = export_ump(store, out, owner=owner)
        exported = json.loads(out.read_text(encoding="utf-8"))
        for record in exported:
            for mention in record.pop("graph", {}).get("mentions", ()):
                assert not {mention["entity"]["id"]} - owned_entities[owner]
        assert exported == [r for r in records if r["scope"]["owner"] == owner]
        assert count == len(exported) > 0
        total += count
    assert total == len(records)
    nobody = tmp_path / "nobody.json"
    assert export_ump(store, nobody, owner="did:key:nobody") == 0
    assert json.loads(nobody.read_text(encoding="utf-8")) == []
    tomas = "did:key:z6MkwrenTomasRuiz2p8d4m"
    forgotten = next(r["id"] for r in records if r["scope"]["owner"] == tomas)
    store.forget(forgotten, confirm=True, purge=False)
    out = tmp_path / "tomas.json"
    assert export_ump(store, out, owner=tomas) == 9  # nothing of a forgotten one remains
    assert forgotten not in out.read_text(encoding="utf-8")


def test_reimport_after_use_changes_nothing(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    with MemoryStore(tmp_path / "db", embedder="hashing",
                     clock=lambda: datetime(2026, 7, 15, 18, tzinfo=UTC)) as store:
        import_ump(store, SAMPLE)
        [hit] = store.recall("deploy orchard release", k=1)
        used = store.feedback(hit.memory.id, useful=True)
        again = import_ump(store, SAMPLE)
        assert again.updated == []
        assert store.get(used.id).modified == used.modified


# -- reading a file one record at a time ------------------------------------------------
def test_records_are_read_one_at_a_time_across_blocks(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import ingest.ump as ump

    records = [{"id": f"urn:s:{i}", "n": i * 1.5, "text": "é" * (i % 7) + "x", "t": True}
               for i in range(200)]
    path = tmp_path / "many.json"
    path.write_text(" [\n" + ",\n ".join(json.dumps(r, ensure_ascii=False) for r in records)
                    + "\n] \n", encoding="utf-8")
    for block in (1, 3, 7, 64, 1 << 20):  # blocks that cut records, numbers and characters
        monkeypatch.setattr(ump, "_BLOCK", block)
        assert [r for _, r in ump.iter_records(path)] == records
    path.write_text("[]", encoding="utf-8")
    assert list(ump.iter_records(path)) == []


@pytest.mark.parametrize("text,message", [
    ('{"a": 1}', "JSON array"),
    ('[{"a": 1},\n {"b": }]', "line 2 column 8"),
    ('[\n\n  {"a": 1},\n  {"a": 2},\n    {"b": tru}]', "line 5 column 11"),
    ('[{"a": 1} {"b": 2}]', "expected ',' or ']'"),
    ('[{"a": 1}] [', "extra data"),
    ('[{"a": 1},', "not valid JSON"),
    ('[1, 2', "not closed"),
    ('[' + '[' * 100_000 + ']' * 100_000 + ']', "nested too deeply"),
    ('[{"importance": 1' + '0' * 5000 + '}]', "4300 digits"),
    ('1' + '0' * 5000, "4300 digits"),
])
@pytest.mark.parametrize("block", [2, 5, 1 << 20])
def test_a_broken_file_names_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   text: str, message: str, block: int) -> None:
    import ingest.ump as ump

    monkeypatch.setattr(ump, "_BLOCK", block)
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RecordError, match=message) as caught:
        list(ump.iter_records(path))
    assert str(path) in str(caught.value)


def test_a_huge_record_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ingest.ump as ump

    monkeypatch.setattr(ump, "MAX_RECORD_BYTES", 1000)
    monkeypatch.setattr(ump, "_BLOCK", 100)
    path = tmp_path / "huge.json"
    path.write_text('[{"id": "a"}, {"id": "b", "text": "' + "x" * 5000 + '"}]')
    with pytest.raises(RecordError, match="record 1: larger than"):
        list(ump.iter_records(path))


def test_reading_holds_a_block_and_a_record_not_the_file(tmp_path: Path) -> None:
    """A 12 MB file is read with a few MB of Python memory at most."""
    import tracemalloc

    from ingest.ump import iter_records

    path = tmp_path / "big.json"
    record = json.dumps({"id": "urn:b", "body": {"text": "word " * 200}})
    path.write_text("[" + ",".join([record] * 12_000) + "]", encoding="utf-8")
    assert path.stat().st_size > 12_000_000
    tracemalloc.start()
    count = sum(1 for _ in iter_records(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 12_000
    assert peak < 6_000_000, f"reading took {peak / 1e6:.1f} MB"


def test_context_and_session_travel_with_the_file(tmp_path: Path) -> None:
    """A memory's context (indexed beside its text) and session come back from an export,
    so the importing store indexes and embeds it the same; a memory without them gets no
    such keys, and a file's explicit null is kept."""
    with MemoryStore(tmp_path / "a", embedder="hashing+pooled") as first:
        made = first.add("we met at the pier", session="s1",
                         context="Ann: where?\nBo: by the water")
        plain = first.add("a plain note")
        export_ump(first, tmp_path / "one.json")
        vector = dict(zip(*first.vectors(), strict=True))[made.id]
    records = {r["id"]: r for r in json.loads((tmp_path / "one.json").read_text("utf-8"))}
    assert records[made.id]["body"]["context"] == "Ann: where?\nBo: by the water"
    assert records[made.id]["scope"]["session"] == "s1"
    assert "context" not in records[plain.id]["body"]
    assert "session" not in records[plain.id]["scope"]
    records[plain.id]["body"]["context"] = None  # an explicit null is given back
    (tmp_path / "one.json").write_text(json.dumps(list(records.values())), "utf-8")
    with MemoryStore(tmp_path / "b", embedder="hashing+pooled") as other:
        import_ump(other, tmp_path / "one.json")
        got = other.get(made.id)
        assert (got.context, got.session) == ("Ann: where?\nBo: by the water", "s1")
        again = dict(zip(*other.vectors(), strict=True))[made.id]
        assert float(again @ vector) > 0.9999
        export_ump(other, tmp_path / "two.json")
    two = json.loads((tmp_path / "two.json").read_text("utf-8"))
    assert {r["id"]: r for r in two}[plain.id]["body"]["context"] is None
    bad = [dict(records[made.id], body={"text": "x", "context": 3})]
    (tmp_path / "bad.json").write_text(json.dumps(bad), "utf-8")
    with MemoryStore(tmp_path / "c", embedder="hashing") as third, \
            pytest.raises(RecordError, match=r"field body\.context"):
        import_ump(third, tmp_path / "bad.json")


def test_times_of_any_year_travel_with_the_file(tmp_path: Path) -> None:
    """A time before the year 1000 (a conversation's "0001-01-01" timestamp) is written
    with four digits, so the file it is exported to imports again."""
    early, late = datetime(1, 1, 1, tzinfo=UTC), datetime(987, 6, 5, 4, 3, 2, 1000, tzinfo=UTC)
    with MemoryStore(tmp_path / "a", embedder="hashing") as first:
        made = first.add("the oldest note", created=early, observed=late)
        export_ump(first, tmp_path / "one.json")
    record = json.loads((tmp_path / "one.json").read_text("utf-8"))[0]
    assert record["time"]["created"] == "0001-01-01T00:00:00Z"
    assert record["time"]["observed"] == "0987-06-05T04:03:02.001Z"
    with MemoryStore(tmp_path / "b", embedder="hashing") as other:
        import_ump(other, tmp_path / "one.json")
        got = other.get(made.id)
        assert (got.created, got.observed) == (early, late)


def test_a_version_this_reader_does_not_know_is_named_once(store: MemoryStore,
                                                           tmp_path: Path) -> None:
    records = _records()[:3]
    for record in records[1:]:
        record["ump"] = "9.9"
    path = tmp_path / "future.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    result = import_ump(store, path)
    assert len(result.created) == 3
    assert result.skipped == [f"{path}: record 1 (and any other) says ump '9.9', a version "
                              "this reader does not know: read as 0.1, and kept as said"]
    assert [r["ump"] for r in ump_records(store) if r["id"] == records[2]["id"]] == ["9.9"]


@pytest.mark.parametrize("stored", [False, True])
def test_a_record_may_not_be_superseded_by_another_owners_memory(
        store: MemoryStore, tmp_path: Path, stored: bool) -> None:
    """``superseded_by`` naming another owner's memory (in the file, or in the store) is
    refused, naming the record: it made one owner's memory stale by another's and showed
    that memory's id; nothing is written."""
    records = sorted(_records(), key=lambda r: r["id"])
    mine = next(r for r in records if r["scope"]["owner"] != records[0]["scope"]["owner"])
    theirs = records[0]
    if stored:
        import_ump(store, _written(tmp_path / "theirs.json", [theirs]))
    mine = copy.deepcopy(mine)
    mine["superseded_by"] = [theirs["id"]]
    chosen = [mine] if stored else [theirs, mine]
    before = store.stats().memories
    with pytest.raises(RecordError, match="an edge stays within one owner") as info:
        import_ump(store, _written(tmp_path / "mine.json", chosen))
    assert info.value.record_id == mine["id"] and info.value.field == "superseded_by"
    assert store.stats().memories == before


def _written(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.mark.parametrize(("where", "value", "message"), [
    ("role", "overlord", r"mentions\[0\]\.role 'overlord' is not one of subject, object"),
    ("type", "alien", r"mentions\[0\]\.entity\.type 'alien' is not one of person, place"),
])
def test_a_graph_names_only_the_roles_and_types_graphmem_knows(
        store: MemoryStore, tmp_path: Path, where: str, value: str, message: str) -> None:
    """A mention's role and an entity's type are those the store's own graph uses (a
    crafted file stored 'overlord' and 'alien', found by named queries and backups)."""
    record = copy.deepcopy(sorted(_records(), key=lambda r: r["id"])[0])
    mention = {"entity": {"id": "ent_crafted", "name": "zed", "type": "person",
                          "aliases": ["zed"]}, "role": "mention", "weight": 1.0}
    if where == "role":
        mention["role"] = value
    else:
        mention["entity"]["type"] = value
    record["graph"] = {"mentions": [mention], "facts": []}
    with pytest.raises(RecordError, match=message):
        import_ump(store, _written(tmp_path / "crafted.json", [record]))
    assert store.stats().memories == 0


def test_a_refused_id_is_named_short(store: MemoryStore, tmp_path: Path) -> None:
    """A crafted id of 10,000 characters is named by its start and length (the whole id
    made a 10 KB error line); the error keeps it whole."""
    record = {"ump": "0.1", "id": "urn:" + "x" * 10_000, "kind": "episodic",
              "body": {"text": "hi"}, "scope": {}}
    with pytest.raises(RecordError) as refused:
        import_ump(store, _written(tmp_path / "long.json", [record]))
    assert len(str(refused.value)) < 400 and "(10,004 characters)" in str(refused.value)
    assert refused.value.record_id == record["id"]
