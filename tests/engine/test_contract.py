"""The engine contract: what every engine behind ``graphmem._engine.Engine`` must do, in
graphmem's own types. Parametrized by engine (``conftest.ENGINES``)."""

from __future__ import annotations

import functools
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from graphmem import (
    ConflictError,
    GraphmemError,
    HashingEmbedder,
    InvalidInputError,
    MemoryInput,
    Status,
)
from graphmem._derive import TextItem, derive_fields, lifecycle_event, new_memory, patch_of
from graphmem._embed import embed_memories
from graphmem._engine import (
    Decision,
    EdgeRecord,
    Engine,
    Erasure,
    EventQuery,
    Job,
    NewMemory,
    Patch,
    WriteBatch,
)
from graphmem._models import ChangeType, EventType, Kind
from graphmem._records import sentences_matrix, sentences_text

from .conftest import stored_files

NOW = datetime(2026, 7, 15, 12, 0, tzinfo=UTC)
EMBED = functools.partial(embed_memories, HashingEmbedder(384))


def _new(*records: dict[str, object]) -> list[NewMemory]:
    items = [MemoryInput.parse(r) for r in records]
    derived = derive_fields(EMBED, [TextItem(i.subject, i.text, i.context) for i in items])
    return [new_memory(i, d, now=NOW) for i, d in zip(items, derived, strict=True)]


def _seed(engine: Engine) -> list[NewMemory]:
    new = _new({"id": "m:a", "text": "Orchard runs on PostgreSQL 16", "owner": "ann",
                "tags": ["db"], "provenance": {"source": "test", "n": 1}},
               {"id": "m:b", "text": "Deploys go through fly.io", "owner": "ann",
                "subject": "deploys", "payload": "raw"},
               {"id": "m:c", "text": "Bob likes tea", "owner": "bob"})
    engine.commit(WriteBatch(memories=new))
    return new


def test_new_memories_read_back_whole(engine: Engine) -> None:
    new = _seed(engine)
    for n in new:
        assert engine.get(n.memory.id) == n.memory
    assert list(engine.get_many(["m:c", "m:x", "m:a"])) == ["m:c", "m:a"]
    assert engine.existing(["m:a", "m:x"]) == {"m:a"}
    assert [m.id for m in engine.memories(owner="ann")] == ["m:a", "m:b"]
    # a page reads only its rows, in id order, within the owner's
    assert [m.id for m in engine.memories(offset=1, limit=1)] == ["m:b"]
    assert [m.id for m in engine.memories(owner="ann", offset=1)] == ["m:b"]
    assert [m.id for m in engine.memories(offset=1, limit=5)] == ["m:b", "m:c"]
    assert engine.memories(owner="ann", offset=2, limit=1) == []
    assert engine.memories(offset=0, limit=2)[1] == new[1].memory
    assert (engine.memory_count(), engine.memory_count(owner="bob")) == (3, 1)
    assert [v.seq for v in engine.history("m:a")] == [1]
    assert engine.history("m:a")[0].change_type is ChangeType.CREATED
    counts = engine.counts()
    assert (sum(counts.by_kind.values()), counts.versions, counts.owners) == (3, 3, 2)


def test_scans_return_fields_and_vectors(engine: Engine) -> None:
    new = _seed(engine)
    scan = engine.scan(["id", "owner", "tags", "created", "vector"])
    assert scan.table.column("id").to_pylist() == ["m:a", "m:b", "m:c"]
    assert scan.table.column("tags").to_pylist() == [["db"], [], []]
    assert scan.table.column("created").to_pylist()[0] == NOW
    assert scan.vectors is not None and scan.has_vector is not None
    assert scan.has_vector.all()
    np.testing.assert_array_equal(scan.vectors[1], new[1].vector)
    few = engine.scan(["id", "text"], ids=["m:c", "m:a"])
    assert sorted(few.table.column("id").to_pylist()) == ["m:a", "m:c"]
    assert engine.scan(["id"], owner="bob").table.column("id").to_pylist() == ["m:c"]
    with pytest.raises(ValueError, match="not a memory field"):
        engine.scan(["id", "no_such_field"])


def test_a_patch_lands_with_its_version_and_event(engine: Engine) -> None:
    _seed(engine)
    memory = engine.get("m:a")
    assert memory is not None
    event = lifecycle_event("m:a", EventType.ARCHIVE, from_state="active", to_state="archived",
                            reason="age", at=NOW, agent_id="test")
    patch = patch_of(memory, {"status": "archived", "prev_status": "active",
                              "vector": np.ones(384, dtype=np.float32)},
                     ChangeType.ARCHIVED, NOW, reason="age", actor="test", event=event)
    engine.commit(WriteBatch(patches=[patch]))
    after = engine.get("m:a")
    assert after is not None and after.status is Status.ARCHIVED and after.version == 2
    assert [(v.seq, v.change_type, v.status) for v in engine.history("m:a")] == [
        (1, ChangeType.CREATED, Status.ACTIVE), (2, ChangeType.ARCHIVED, Status.ARCHIVED)]
    assert engine.events(EventQuery(memory_id="m:a")) == [event]
    vectors = engine.scan(["id", "vector"], ids=["m:a"]).vectors
    assert vectors is not None and float(vectors[0].sum()) == 384.0
    assert engine.memory_count() == engine.scan(["id"]).table.num_rows == 3
    for ids in (["m:a"], None):  # looked up, and scanned
        half = engine.scan(["id", "vector"], ids=ids, vector_dtype=np.float16).vectors
        assert half is not None and half.dtype == np.float16 and float(half[0].sum()) == 384.0
    with pytest.raises(InvalidInputError, match="vector_dtype"):
        engine.scan(["id", "vector"], vector_dtype=np.int8)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a memory field"):
        Patch("m:a", set={"vec": None})


def test_a_failed_batch_leaves_nothing(engine: Engine) -> None:
    _seed(engine)
    before = (engine.memories(), engine.counts())
    memory = engine.get("m:a")
    assert memory is not None
    batch = WriteBatch(
        memories=_new({"id": "m:new", "text": "fresh"}) + _new({"id": "m:a", "text": "dup"}),
        patches=[patch_of(memory, {"importance": 0.9}, ChangeType.MANUAL_EDIT, NOW)],
        merged_edges=[EdgeRecord("references", "m:a", "m:b", at=NOW)])
    with pytest.raises(ConflictError):
        engine.commit(batch)
    assert (engine.memories(), engine.counts()) == before
    engine.commit(WriteBatch(memories=_new({"id": "m:new", "text": "fresh"})))  # usable
    assert engine.existing(["m:new"]) == {"m:new"}


def test_a_failed_field_write_leaves_nothing(engine: Engine) -> None:
    """One memory's patch with its version row and event (the shape of every field
    write) that fails on its event leaves neither the fields, the version row, nor a
    change in the change log."""
    _seed(engine)
    memory = engine.get("m:a")
    assert memory is not None
    first = lifecycle_event("m:a", EventType.TOMBSTONE, from_state="active",
                            to_state="tombstoned", reason="x", at=NOW, agent_id="t")
    engine.commit(WriteBatch(events=[first]))
    before = (engine.memories(), engine.counts(), engine.history("m:a"))
    mark = engine.change_mark()
    patch = patch_of(memory, {"status": "tombstoned", "prev_status": "active"},
                     ChangeType.TOMBSTONED, NOW, reason="x", actor="t", event=first)
    with pytest.raises(GraphmemError):
        engine.commit(WriteBatch(patches=[patch]))  # the event is there already
    assert (engine.memories(), engine.counts(), engine.history("m:a")) == before
    assert engine.changes_since(mark) == []
    engine.commit(WriteBatch(patches=[patch_of(memory, {"importance": 0.7},
                                               ChangeType.MANUAL_EDIT, NOW)]))  # usable
    assert [v.seq for v in engine.history("m:a")] == [1, 2]


def test_edges_are_created_merged_and_read(engine: Engine) -> None:
    _seed(engine)
    engine.commit(WriteBatch(new_edges=[
        EdgeRecord("references", "m:a", "m:b", weight=0.5, source="entity:x", at=NOW),
        EdgeRecord("supersedes", "m:b", "m:a", reason="newer", at=NOW)]))
    engine.commit(WriteBatch(merged_edges=[
        EdgeRecord("references", "m:a", "m:b", weight=0.8, at=NOW),  # keeps the larger
        EdgeRecord("co_occurs", "m:a", "m:c", weight=1.0, at=NOW),
        EdgeRecord("co_occurs", "m:a", "m:c", weight=0.5, at=NOW)]))  # adds up
    refs = engine.edges("references")
    assert [(e.src, e.dst, e.weight, e.source) for e in refs] == [("m:a", "m:b", 0.8,
                                                                    "entity:x")]
    co = engine.edges("co_occurs")
    assert [(e.src, e.dst, e.weight, e.count) for e in co] == [("m:a", "m:c", 1.5, 2)]
    assert engine.edges("co_occurs", owner="ann") == []  # both ends must be the owner's
    assert [(e.src, e.dst, e.reason) for e in engine.edges("supersedes")] == [
        ("m:b", "m:a", "newer")]
    arrays = engine.edge_arrays("co_occurs")
    assert (arrays.src, arrays.dst, arrays.weight) == (["m:a"], ["m:c"], [1.5])
    links = sorted((x.kind, x.other, x.direction) for x in engine.links_of("m:a"))
    assert links == [("co_occurs", "m:c", "out"), ("references", "m:b", "out"),
                     ("supersedes", "m:b", "in")]
    assert engine.counts().edges == {"references": 1, "co_occurs": 1, "supersedes": 1}


def test_lifecycle_decisions_apply_state_version_and_event(engine: Engine) -> None:
    _seed(engine)
    later = NOW + timedelta(days=1)
    assert engine.apply_decisions("promote", [Decision("m:a", reason="high_access",
                                                       event_id="evt-1",
                                                       metadata={"accessCount": 12})],
                                  now=later, actor="manager") == 1
    promoted = engine.get("m:a")
    assert promoted is not None and promoted.kind is Kind.SEMANTIC and promoted.version == 2
    event = engine.events(EventQuery(memory_id="m:a"))[0]
    assert (event.event_id, event.event_type, event.from_state, event.to_state,
            event.agent_id, event.metadata) == ("evt-1", EventType.PROMOTE, "episodic",
                                                "semantic", "manager", {"accessCount": 12})
    assert engine.history("m:a")[-1].change_type is ChangeType.PROMOTED
    engine.apply_decisions("decay", [Decision("m:b", number=0.25, reason="idle")], now=later,
                           actor="manager")
    engine.apply_decisions("hot", [Decision("m:c", reason="top", event_id="evt-2")],
                           now=later, actor="manager")
    engine.apply_decisions("signals", [Decision("m:c", number=0.5, xrefs=2)], now=later,
                           actor="manager")
    b, c = engine.get("m:b"), engine.get("m:c")
    assert b is not None and c is not None
    assert (b.importance, b.version) == (0.25, 2)
    assert (c.hot, c.centrality, c.xref_count, c.version) == (True, 0.5, 2, 1)
    assert engine.apply_decisions("archive", [], now=later, actor="manager") == 0


def test_a_decision_applies_only_while_the_memory_is_in_its_planned_state(
        engine: Engine) -> None:
    """A plan applied twice (or by two processes) changes, versions and records each
    memory once: a job touches only memories that still need it."""
    _seed(engine)
    later = NOW + timedelta(days=1)
    plan: list[tuple[Job, Decision]] = [
        ("promote", Decision("m:a", reason="r")), ("archive", Decision("m:b", reason="r")),
        ("hot", Decision("m:c", reason="r")), ("decay", Decision("m:a", number=0.25)),
        ("payload", Decision("m:b"))]
    for run in range(2):
        changed = [engine.apply_decisions(job, [decision._replace(event_id=f"evt-{job}-{run}")],
                                          now=later, actor="manager") for job, decision in plan]
        assert changed == ([1] * len(plan) if run == 0 else [0] * len(plan))
    # m:b is archived now: a decay planned while it was active leaves it
    assert engine.apply_decisions("decay", [Decision("m:b", number=0.1)], now=later,
                                  actor="manager") == 0
    a, b, c = (engine.get(i) for i in ("m:a", "m:b", "m:c"))
    assert a is not None and b is not None and c is not None
    assert (a.kind, a.importance, a.version) == (Kind.SEMANTIC, 0.25, 3)
    assert (b.status, b.payload, b.version) == (Status.ARCHIVED, None, 2)
    before = engine.scan(["id", "prev_kind", "prev_status"]).table.to_pylist()
    assert [(r["prev_kind"], r["prev_status"]) for r in before][:2] == [
        ("episodic", None), (None, "active")]
    assert c.hot and c.version == 1
    assert [v.change_type for v in engine.history("m:a")] == [
        ChangeType.CREATED, ChangeType.PROMOTED, ChangeType.IMPORTANCE_DECAY]
    assert [v.id for v in engine.history("m:b")] == ["m:b#v1", "m:b#v2"]
    assert [e.event_id for e in engine.events(EventQuery())] == [
        "evt-archive-0", "evt-hot-0", "evt-promote-0"]
    # cooled once, then hot again once; two decisions for one memory: the last counts
    engine.apply_decisions("cool", [Decision("m:c", event_id="x1"),
                                    Decision("m:c", event_id="x2")], now=later, actor="m")
    engine.apply_decisions("cool", [Decision("m:c", event_id="x3")], now=later, actor="m")
    assert [e.event_id for e in engine.events(EventQuery(event_type="cool"))] == ["x2"]


def test_access_and_vectors(engine: Engine) -> None:
    _seed(engine)
    times = (NOW, NOW + timedelta(minutes=1))
    engine.record_access({"m:a": (2, times[-1], times)})
    a = engine.get("m:a")
    assert a is not None and (a.access_count, a.last_accessed, a.access_times) == (2, times[-1],
                                                                                   times)
    engine.set_vectors({"m:b": np.zeros(384, dtype=np.float32), "m:c": None})
    scan = engine.scan(["id", "vector"])
    assert scan.has_vector is not None and list(scan.has_vector) == [True, True, False]


def test_sentence_vectors_are_kept_read_moved_and_cleared(engine: Engine) -> None:
    """A memory's sentence vectors land with it, come back by scan and in its table (as
    ``sentences_text`` writes them), change with ``set_vectors`` and leave with a patch."""
    two = np.arange(2 * 384, dtype=np.float32).reshape(2, 384)
    item = MemoryInput.parse({"id": "m:s", "text": "Caroline: I went. It was great."})
    made = derive_fields(EMBED, [TextItem(None, item.text)], sentences=HashingEmbedder(384).embed)
    assert made[0].sentences is not None and made[0].sentences.shape == (2, 384)
    new = new_memory(item, made[0], now=NOW)
    engine.commit(WriteBatch(memories=[new, *_new({"id": "m:t", "text": "One sentence."})]))

    def stored() -> dict[str, np.ndarray | None]:
        table = engine.scan(["id", "sentences"]).table
        return {i: sentences_matrix(t, 384) for i, t in zip(
            table.column("id").to_pylist(), table.column("sentences").to_pylist(), strict=True)}

    assert stored()["m:t"] is None
    np.testing.assert_array_equal(stored()["m:s"], made[0].sentences)
    rows = pa.concat_tables(engine.read_table("memories"))
    assert rows.column("sentences").to_pylist() == [sentences_text(made[0].sentences), None]
    engine.set_vectors({"m:s": np.ones(384, dtype=np.float32),
                        "m:t": np.ones(384, dtype=np.float32)}, {"m:t": two})
    after = stored()
    assert after["m:s"] is None
    np.testing.assert_array_equal(after["m:t"], two)
    memory = engine.get("m:t")
    assert memory is not None
    engine.commit(WriteBatch(patches=[patch_of(memory, {"sentences": None},
                                               ChangeType.MANUAL_EDIT, NOW)]))
    assert stored()["m:t"] is None


def test_erasure_removes_text_edges_and_quotes(disk_engine: Engine, tmp_path: Path) -> None:
    engine = disk_engine
    _seed(engine)
    engine.commit(WriteBatch(new_edges=[EdgeRecord("references", "m:b", "m:a", at=NOW)],
                             events=[lifecycle_event("m:b", EventType.ARCHIVE,
                                                     from_state="active", to_state="archived",
                                                     reason="x", at=NOW, agent_id="t",
                                                     metadata={"summary": "PostgreSQL 16"})]))
    quoted = engine.events_mentioning("m:a", "PostgreSQL")
    assert [meta["summary"] for _, meta in quoted] == ["PostgreSQL 16"]
    memory = engine.get("m:a")
    assert memory is not None
    engine.commit(WriteBatch(
        patches=[Patch("m:a", set={"text": "", "vector": None, "status": "forgotten",
                                   "text_sha256": "hmac-sha256:aa",
                                   "provenance": {"redacted": True}})],
        erasures=[Erasure("m:a", version_digests={"m:a#v1": "hmac-sha256:00"},
                          event_metadata={quoted[0][0]: {"summary": None}})]))
    assert engine.links_of("m:a") == []
    assert [(v.text, v.text_sha256, v.redacted) for v in engine.history("m:a")] == [
        (None, "hmac-sha256:00", True)]
    assert engine.events_mentioning("m:a", "PostgreSQL") == []
    assert engine.forgotten(["m:a", "m:b", "m:unknown"]) == {"m:a"}
    # the digest of a forgotten text, by owner (m:a is ann's); a live memory's is not one
    live = engine.get("m:b")
    assert live is not None
    assert engine.forgotten_digests(["hmac-sha256:aa", "hmac-sha256:bb", live.text_sha256],
                                    owner="ann") == {"hmac-sha256:aa"}
    assert engine.forgotten_digests(["hmac-sha256:aa"], owner="bob") == set()
    assert engine.forgotten_digests(["hmac-sha256:aa"], owner=None) == set()
    # many ids at once (Kuzu reads the forgotten ones instead of looking each up)
    assert engine.forgotten(["m:b", "m:a", *(f"m:unknown{i}" for i in range(40))]) == {"m:a"}
    engine.purge()
    files = stored_files(engine, tmp_path)
    assert files
    assert [p for p in files if b"PostgreSQL 16" in p.read_bytes()] == []


def test_contexts_and_meta(engine: Engine) -> None:
    new = _new({"id": "m:ctx", "text": "own", "context": "neighbour said kestrel"})
    new += _new({"id": "m:pay", "text": "two", "payload": "one. two kestrel."})
    engine.commit(WriteBatch(memories=new))
    assert [m.id for m in engine.holding("context", "kestrel")] == ["m:ctx"]
    assert [m.id for m in engine.holding("payload", "kestrel")] == ["m:pay"]
    assert engine.holding("payload", "kestrel", whole=True) == []
    assert [m.id for m in engine.holding("payload", "one. two kestrel.", whole=True)] == [
        "m:pay"]
    assert engine.holding("payload", "kestrel", session="s9") == []
    engine.commit(WriteBatch(memories=_new({"id": "m:pay2", "text": "three", "session": "s9",
                                            "payload": "three kestrels"})))
    assert [m.id for m in engine.holding("payload", "kestrel", session="s9")] == ["m:pay2"]
    assert [m.id for m in engine.holding("payload", "", session="s9")] == ["m:pay2"]
    assert engine.holding("context", "", session="s9") == []  # m:pay2 has no context
    assert engine.holding("payload", "") == []
    engine.set_meta({"k": "v"})
    assert engine.meta()["k"] == "v"


def test_events_are_filtered_and_ordered(engine: Engine) -> None:
    _seed(engine)
    events = [lifecycle_event(m, EventType.TOMBSTONE, from_state="active",
                              to_state="tombstoned", reason="r", agent_id="t",
                              at=NOW + timedelta(hours=h))
              for h, m in enumerate(["m:c", "m:a", "m:b"])]
    engine.commit(WriteBatch(events=events))
    assert [e.memory_id for e in engine.events(EventQuery())] == ["m:c", "m:a", "m:b"]
    assert [e.memory_id for e in engine.events(EventQuery(owner="ann"))] == ["m:a", "m:b"]
    assert [e.memory_id for e in engine.events(EventQuery(
        since=NOW + timedelta(minutes=30), limit=1))] == ["m:a"]


def test_writers_are_serialised_and_readers_go_on(engine: Engine) -> None:
    _seed(engine)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(5):
                engine.commit(WriteBatch(memories=_new({"id": f"w{n}:{i}", "text": "x"})))
        except BaseException as exc:  # reported below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(20):
                engine.get("m:a")
                engine.counts()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(engine.counts().by_kind.values()) == 3 + 15


def test_user_cypher_is_a_capability(engine: Engine) -> None:
    _seed(engine)
    capability = engine.cypher
    if capability is None:
        pytest.skip("this engine does not speak Cypher")
    result = capability.run("MATCH (m:Memory) RETURN count(*) AS n", {}, write=False,
                            event=None, timeout_s=10)
    assert (result.columns, result.rows) == (["n"], [[3]])
    with pytest.raises(Exception, match="read-only"):
        capability.run("MATCH (m:Memory) SET m.text = 'x'", {}, write=False, event=None,
                       timeout_s=10)
    # 10^10 rows, ~100 s unbounded: stopped at its limit
    started = time.perf_counter()
    with pytest.raises(InvalidInputError, match="GRAPHMEM_CYPHER_TIMEOUT_S"):
        capability.run("UNWIND range(1, 100000) AS i UNWIND range(1, 100000) AS j "
                       "WITH i, j WHERE i + j < 0 RETURN count(*) AS n", {}, write=False,
                       event=None, timeout_s=0.5)
    assert time.perf_counter() - started < 3


def test_read_only_sql_is_a_capability(engine: Engine) -> None:
    """An engine speaks Cypher or SQL (the named queries have a text for each)."""
    _seed(engine)
    assert (engine.cypher is None) != (engine.sql is None)
    capability = engine.sql
    if capability is None:
        pytest.skip("this engine does not speak SQL")
    result = capability.run("SELECT count(*) AS n FROM memories WHERE owner = %(o)s",
                            {"o": "ann"}, timeout_s=10)
    assert (result.columns, result.rows) == (["n"], [[2]])
    with pytest.raises(Exception, match="read-only"):
        capability.run("UPDATE memories SET text = 'x'", {}, timeout_s=10)
    assert engine.get("m:a").text == "Orchard runs on PostgreSQL 16"  # type: ignore[union-attr]
    started = time.perf_counter()
    with pytest.raises(InvalidInputError, match="GRAPHMEM_CYPHER_TIMEOUT_S"):
        capability.run("SELECT pg_sleep(30)", {}, timeout_s=0.5)
    assert time.perf_counter() - started < 3


def test_the_knowledge_graph_is_written_read_and_left(engine: Engine) -> None:
    from dataclasses import replace

    from graphmem._engine import EntityRecord, FactRecord, MentionRecord

    _seed(engine)
    ada = EntityRecord("e:ada", "ann", "ada", "person", ("ada",), created=NOW)
    lisbon = EntityRecord("e:lis", "ann", "lisbon", "place", ("lisbon",), created=NOW)
    tea = EntityRecord("e:tea", "bob", "tea", "other", ("tea",), created=NOW)
    fact = FactRecord("f:1", "ann", "e:ada", "lives_in", "e:lis", 0.9, NOW, None, NOW,
                      ("m:a",), "lives_in")
    engine.commit(WriteBatch(
        new_entities=[ada, lisbon, tea], facts=[fact],
        mentions=[MentionRecord("m:a", "e:ada", "subject", 1.0, "Ada"),
                  MentionRecord("m:b", "e:ada", "mention", 0.8, "ada"),
                  MentionRecord("m:a", "e:lis", "object", 1.0, "Lisbon"),
                  MentionRecord("m:c", "e:tea", "mention", 0.8, "tea")]))
    assert [e.id for e in engine.entities(owner="ann")] == ["e:ada", "e:lis"]
    assert [e.id for e in engine.entities(all_owners=True)] == ["e:ada", "e:lis", "e:tea"]
    assert engine.entities(owner=None) == []
    assert engine.entities(ids=["e:tea", "e:nope"]) == [tea]
    assert sorted((m.memory_id, m.entity_id, m.role) for m in engine.mentions(
        memory_ids=["m:a"])) == [("m:a", "e:ada", "subject"), ("m:a", "e:lis", "object")]
    assert sorted(m.memory_id for m in engine.mentions(entity_ids=["e:ada"])) == ["m:a", "m:b"]
    assert len(engine.mentions()) == 4
    assert engine.mentioned_elsewhere(["e:ada", "e:lis", "e:tea", "e:nope"], "m:a") == {
        "e:ada", "e:tea"}
    assert engine.mentioned_elsewhere(["e:ada", "e:lis"], "m:b") == {"e:ada", "e:lis"}
    assert engine.facts(owner="ann") == [fact]
    assert engine.facts(sources=["m:a"]) == [fact] and engine.facts(sources=["m:b"]) == []
    assert engine.facts(entity_ids=["e:lis"]) == [fact]
    assert engine.facts(owner="bob") == []
    # a merge, an ended fact, a memory's mentions replaced, an entity that goes
    merged = replace(ada, aliases=("ada", "ada lovelace"),
                     merges=({"alias": "ada lovelace", "rule": "prefix"},))
    ended = replace(fact, valid_to=NOW + timedelta(days=1), ended_by="f:2",
                    sources=("m:a", "m:b"))
    engine.commit(WriteBatch(changed_entities=[merged], changed_facts=[ended],
                             unmentioned=["m:c"], gone_entities=["e:tea"]))
    assert engine.entities(ids=["e:ada"]) == [merged]
    assert engine.facts(sources=["m:b"]) == [ended]
    assert engine.mentions(memory_ids=["m:c"]) == []
    assert engine.mentioned_elsewhere(["e:tea"], "m:a") == set()  # its mention went
    assert engine.entities(owner="bob") == []
    # the entity comes back under its id when a memory names it again
    engine.commit(WriteBatch(new_entities=[tea],
                             mentions=[MentionRecord("m:c", "e:tea", "mention", 0.8, "tea")]))
    assert engine.entities(owner="bob") == [tea]
    engine.commit(WriteBatch(gone_facts=[ended]))
    assert engine.facts(all_owners=True) == []


def _changed(engine: Engine, mark: str) -> tuple[set[str], set[str], set[str], set[str]]:
    """Ids, edge ends, removed and accessed ids of every change since ``mark``."""
    changes = engine.changes_since(mark)
    assert changes is not None
    assert not any(c.bulk for c in changes)
    return ({i for c in changes for i in c.ids}, {i for c in changes for i in c.edge_ends},
            {i for c in changes for i in c.removed}, {i for c in changes for i in c.accessed})


def test_the_change_log_lists_what_each_commit_changed(engine: Engine) -> None:
    start = engine.change_mark()
    _seed(engine)
    assert _changed(engine, start) == ({"m:a", "m:b", "m:c"}, set(), set(), set())
    mark = engine.change_mark()
    assert engine.changes_since(mark) == []  # nothing since
    memory = engine.get("m:a")
    assert memory is not None
    engine.commit(WriteBatch(patches=[patch_of(memory, {"importance": 0.9},
                                               ChangeType.MANUAL_EDIT, NOW)]))
    engine.commit(WriteBatch(merged_edges=[EdgeRecord("co_occurs", "m:b", "m:c", at=NOW)]))
    engine.record_access({"m:c": (1, NOW, (NOW,))})
    engine.set_vectors({"m:b": None})
    engine.apply_decisions("decay", [Decision("m:c", number=0.2, reason="idle")], now=NOW,
                           actor="t")
    engine.commit(WriteBatch(erasures=[Erasure("m:a")], patches=[Patch("m:a", set={
        "text": "", "vector": None, "status": Status.FORGOTTEN})]))
    engine.set_meta({"note": "x"})  # changes no memory
    assert _changed(engine, mark) == ({"m:a", "m:b", "m:c"}, {"m:b", "m:c"}, {"m:a"},
                                      {"m:c"})
    later = engine.change_mark()
    engine.set_meta({"embedder_name": "another"})  # a model switch: everything
    changes = engine.changes_since(later)
    assert changes is not None and [c.bulk for c in changes] == [True]


def test_a_mark_of_another_history_is_refused(engine: Engine) -> None:
    _seed(engine)
    mark = engine.change_mark()
    head, _, tail = mark.rpartition(":")
    assert engine.changes_since(f"{head}:{tail}x") is None  # the same number, another writer
    assert engine.changes_since("not a mark") is None
    assert engine.changes_since(mark) == []


def _busy(engine: Engine) -> None:
    """Memories with a second version and a transition's state, edges of every kind, an
    event, entities, mentions and a fact."""
    from graphmem._engine import EntityRecord, FactRecord, MentionRecord

    new = _seed(engine)
    engine.commit(WriteBatch(patches=[patch_of(new[0].memory, {"text": "Orchard runs on 17"},
                                               ChangeType.MANUAL_EDIT, NOW, reason="edit")]))
    engine.apply_decisions("archive", [Decision("m:c", reason="stale", event_id="ev:1")],
                           now=NOW, actor="t")
    engine.commit(WriteBatch(new_edges=[
        EdgeRecord("references", "m:a", "m:b", weight=0.5, source="entity:x", at=NOW),
        EdgeRecord("co_occurs", "m:a", "m:b", weight=2.0, count=2, source="session"),
        EdgeRecord("supersedes", "m:b", "m:a", reason="newer", at=NOW)]))
    engine.commit(WriteBatch(
        new_entities=[EntityRecord("e:ada", "ann", "ada", "person", ("ada", "Ada L"),
                                   ({"alias": "Ada L", "rule": "prefix"},), created=NOW),
                      EntityRecord("e:lis", "ann", "lisbon", "place", ("lisbon",),
                                   created=NOW)],
        mentions=[MentionRecord("m:a", "e:ada", "subject", 1.0, "Ada"),
                  MentionRecord("m:b", "e:lis", "mention", 0.5, "Lisbon")],
        facts=[FactRecord("f:1", "ann", "e:ada", "lives_in", "e:lis", 0.9, NOW, None, NOW,
                          ("m:a",), "lives_in")]))


def _tables(engine: Engine, page: int) -> dict[str, list[dict[str, object]]]:
    from graphmem._engine import TABLES
    from graphmem._records import TABLE_TYPES

    out: dict[str, list[dict[str, object]]] = {}
    for name in TABLES:
        pages = list(engine.read_table(name, page=page))
        for table in pages:
            assert table.schema.names == list(TABLE_TYPES[name])
            assert table.schema.types == list(TABLE_TYPES[name].values())
        out[name] = [row for table in pages for row in table.to_pylist()]
    return out


def test_tables_are_read_a_page_at_a_time_and_loaded_whole(
        engine: Engine, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    _busy(engine)
    memory_pages = [t.num_rows for t in engine.read_table("memories", page=2)]
    assert memory_pages == [2, 1]  # a page of memories at a time
    tables = _tables(engine, page=2)
    assert tables == _tables(engine, page=1000)  # pages add up to the whole
    assert [r["id"] for r in tables["memories"]] == ["m:a", "m:b", "m:c"]
    by_id = {r["id"]: r for r in tables["memories"]}
    scan = engine.scan(["id", "vector"])
    assert scan.vectors is not None
    assert np.allclose(np.array(by_id["m:b"]["vector"], dtype=np.float32), scan.vectors[1])
    assert (by_id["m:c"]["status"], by_id["m:c"]["prev_status"]) == ("archived", "active")
    assert [(r["memory_id"], r["seq"]) for r in tables["versions"]] == [
        (v.memory_id, v.seq) for v in engine.versions()]
    assert sorted(r["event_id"] for r in tables["events"]) == sorted(
        e.event_id for e in engine.events(EventQuery()))
    assert [(r["kind"], r["src"], r["dst"], r["weight"], r["count"], r["source"], r["reason"])
            for r in tables["edges"]] == [
        ("references", "m:a", "m:b", 0.5, 1, "entity:x", ""),
        ("co_occurs", "m:a", "m:b", 2.0, 2, "session", ""),
        ("supersedes", "m:b", "m:a", 1.0, 1, "", "newer")]
    assert [(r["id"], r["aliases"]) for r in tables["entities"]] == [
        ("e:ada", ["ada", "Ada L"]), ("e:lis", ["lisbon"])]
    assert sorted((r["memory_id"], r["entity_id"]) for r in tables["mentions"]) == [
        ("m:a", "e:ada"), ("m:b", "e:lis")]
    assert [(r["id"], r["subject"], r["object"]) for r in tables["facts"]] == [
        ("f:1", "e:ada", "e:lis")]
    # loaded into an empty store of the same engine, a table at a time: the same tables
    copy = _fresh_like(engine, request, tmp_path)
    try:
        with copy.writer() as writer:
            for name in ("memories", "versions", "events", "edges", "entities", "mentions",
                         "facts"):
                for table in engine.read_table(name, page=2):  # type: ignore[arg-type]
                    writer.load(name, table)  # type: ignore[arg-type]
        assert _tables(copy, page=1000) == tables
        assert copy.get("m:c") == engine.get("m:c")
        assert copy.history("m:a") == engine.history("m:a")
        assert copy.facts(all_owners=True) == engine.facts(all_owners=True)
        assert copy.scan(["vector"]).vectors.tolist() == scan.vectors.tolist()  # type: ignore[union-attr]
    finally:
        copy.close()


def _fresh_like(engine: Engine, request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """An empty store on the engine of ``engine``."""
    from .conftest import ENGINES

    if engine.path.startswith("postgresql"):
        from graphmem._postgres import PostgresEngine
        from tests._postgres import fresh_schema

        schema = fresh_schema(request.getfixturevalue("pg_server"))
        url = schema.__enter__()
        request.addfinalizer(lambda: schema.__exit__(None, None, None))
        return PostgresEngine(url)
    (tmp_path / "copy").mkdir()
    return ENGINES["kuzu-memory" if engine.path == ":memory:" else "kuzu"](tmp_path / "copy")
