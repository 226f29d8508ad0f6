"""MemoryStore against a real Kuzu database: every method, version rows, events, scoping."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from graphmem import (
    ChangeType,
    ConfirmationRequiredError,
    ConflictError,
    EventType,
    InvalidInputError,
    MemoryStore,
    NotFoundError,
    ReadOnlyStoreError,
    SchemaVersionError,
    Settings,
    Status,
    StoreError,
)
from graphmem._kuzu import SCHEMA_VERSION
from ingest.ump import import_ump


def test_schema_is_created_and_reopened(tmp_path: Path, clock) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        memory = store.add("Nadia prefers TypeScript", kind="identity", tags=["pref"])
        assert store.stats().schema_version == SCHEMA_VERSION == 10
    assert (path / "graph.kuzu").exists()
    with MemoryStore(path, clock=clock) as store:  # reopens with the recorded embedder
        again = store.get(memory.id)
        assert again.text == "Nadia prefers TypeScript"
        assert again.tags == ("pref",)
        assert store.embedder.name == "hashing-384"


def test_add_sets_defaults_and_first_version(store: MemoryStore, clock) -> None:
    memory = store.add("Orchard runs on fly.io", kind="semantic", subject="Hosting",
                       importance=0.7, confidence=0.9, tags=["orchard"], owner="nadia",
                       project="orchard")
    assert memory.id.startswith("urn:graphmem:")
    assert (memory.kind.value, memory.status, memory.importance) == ("semantic", Status.ACTIVE,
                                                                     0.7)
    assert memory.original_importance == 0.7
    assert memory.created == clock.now
    [version] = store.history(memory.id)
    assert (version.seq, version.change_type, version.text) == (1, ChangeType.CREATED,
                                                                "Orchard runs on fly.io")
    assert version.text_sha256 == memory.text_sha256


def test_add_many_is_batched_and_validates_first(store: MemoryStore) -> None:
    memories = store.add_many([{"text": f"note {i}", "kind": "note"} for i in range(1200)],
                              batch_size=500)
    assert len(memories) == 1200
    assert store.stats().memories == 1200
    with pytest.raises(InvalidInputError, match=r"record 2: importance"):
        store.add_many([{"text": "ok"}, {"text": "ok too"}, {"text": "bad", "importance": 7}])
    assert store.stats().memories == 1200  # nothing of the bad call was written


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "a\x00b"}, "text"),
        ({"text": "x" * 200_001}, "text"),
        ({"text": "x", "kind": "dream"}, "kind"),
        ({"text": "x", "importance": float("nan")}, "importance"),
        ({"text": "x", "confidence": -0.1}, "confidence"),
        ({"text": "x", "status": "forgotten"}, "status"),
        ({"text": "x", "created": "yesterday"}, "created"),
        ({"text": "x", "tags": [""]}, "tags"),
        ({"text": "x", "provenance": {"n": float("inf")}}, "provenance"),
        ({"text": "x", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_names_the_field(store: MemoryStore, fields: dict, field: str) -> None:
    fields = dict(fields)  # the parameters are shared by every run of this test
    text = fields.pop("text")
    with pytest.raises(InvalidInputError) as info:
        store.add(text, **fields)
    assert field in str(info.value)
    assert store.stats().memories == 0


@pytest.mark.parametrize(("call", "field"), [
    (lambda s: s.add_conversation(["I live in Agen."], session_id="s", cooccur_window="x"),
     "cooccur_window"),
    (lambda s: s.add_conversation(["I live in Agen."], session_id="s", cooccur_window=-1),
     "cooccur_window"),
    (lambda s: s.add_conversation(["I live in Agen."], session_id="s",
                                  cooccur_window=float("nan")), "cooccur_window"),
    (lambda s: s.cypher("RETURN 1 AS n", {1: 2}), "params"),
    (lambda s: s.add_many(None), "records"),
    (lambda s: s.add_many("I live in Agen."), "records"),
    (lambda s: s.facts(about=5), "about"),
    (lambda s: s.named_query(5), "name"),
    (lambda s: s.backup(5), "directory"),
    (lambda s: s.backup(""), "directory"),
    (lambda s: s.cypher("CREATE (:Memory {id: 'x'})", write="no"), "write"),
    (lambda s: s.events(limit="x"), "limit"),
    (lambda s: s.facts(current="x"), "current"),
    (lambda s: s.facts(as_of="last year"), "as_of"),
    (lambda s: s.add_conversation(["I live in Agen."], session_id="s", extractor=5),
     "extractor"),
    (lambda s: s.add_conversation(["I live in Agen."], session_id="s", actor=5), "actor"),
])
def test_a_wrong_type_is_refused_naming_its_field(store: MemoryStore, call: Any,
                                                  field: str) -> None:
    """Arguments of the wrong type or out of range give graphmem's error naming the
    argument (they gave a TypeError or an AttributeError, or were taken), and write
    nothing."""
    with pytest.raises(InvalidInputError) as info:
        call(store)
    assert info.value.field == field
    assert store.stats().memories == 0


def test_duplicate_ids_are_refused(store: MemoryStore) -> None:
    store.add("first", id="urn:test:1")
    with pytest.raises(ConflictError, match="urn:test:1"):
        store.add("second", id="urn:test:1")
    with pytest.raises(InvalidInputError, match="twice"):
        store.add_many([{"text": "a", "id": "urn:test:2"}, {"text": "b", "id": "urn:test:2"}])


def test_update_writes_a_version_per_change(store: MemoryStore, clock) -> None:
    memory = store.add("Standup at 10:00", importance=0.5)
    clock.advance(hours=1)
    store.update(memory.id, text="Standup at 11:30")
    store.update(memory.id, importance=0.9, reason="importance_boost")
    store.update(memory.id, importance=0.6, reason="importance_decay")
    unchanged = store.update(memory.id, text="Standup at 11:30")  # no change, no version
    history = store.history(memory.id)
    assert [v.change_type for v in history] == [
        ChangeType.CREATED, ChangeType.MANUAL_EDIT, ChangeType.IMPORTANCE_BOOST,
        ChangeType.IMPORTANCE_DECAY]
    assert [v.text for v in history] == ["Standup at 10:00"] + ["Standup at 11:30"] * 3
    assert unchanged.version == 4 and unchanged.importance == 0.6
    assert unchanged.modified == clock.now
    with pytest.raises(InvalidInputError, match="change type"):
        store.update(memory.id, text="x", reason="because")


def test_supersede_with_text_keeps_both_and_links(store: MemoryStore) -> None:
    old = store.add("Orchard uses PostgreSQL 15", kind="semantic", owner="nadia",
                    tags=["orchard"])
    new = store.supersede(old.id, "Orchard uses PostgreSQL 16", reason="upgrade")
    assert (new.kind.value, new.owner, new.tags) == ("semantic", "nadia", ("orchard",))
    old_now = store.get(old.id)
    assert old_now.superseded_by == (new.id,) and not old_now.is_current
    assert old_now.status is Status.ACTIVE  # kept
    [link] = [x for x in store.links(new.id) if x.kind == "supersedes"]
    assert (link.other, link.direction) == (old.id, "out")
    assert store.history(old.id)[-1].change_type is ChangeType.CONFLICT_UPDATE
    [event] = store.events(old.id)
    assert (event.event_type, event.to_state, event.reason) == (EventType.SUPERSEDE,
                                                               "superseded", "upgrade")
    assert store.supersede(old.id, new.id).id == new.id  # idempotent
    assert store.stats().edges["supersedes"] == 1


def test_supersede_by_existing_id_and_self(store: MemoryStore) -> None:
    a = store.add("v1")
    b = store.add("v2")
    assert store.supersede(a.id, b.id).id == b.id
    with pytest.raises(ConflictError):
        store.supersede(b.id, b.id)


def test_a_memory_replaced_already_is_replaced_at_its_current_version(
        store: MemoryStore) -> None:
    """Superseding the same memory twice (an agent that kept the first id): the second
    replacement replaces the first, so one version stays current, not two."""
    v15 = store.add("Orchard stores data in PostgreSQL 15", owner="nadia")
    v16 = store.supersede(v15.id, "Orchard stores data in PostgreSQL 16")
    v17 = store.supersede(v15.id, "Orchard stores data in PostgreSQL 17")
    assert store.get(v15.id).superseded_by == (v16.id,)
    assert store.get(v16.id).superseded_by == (v17.id,)
    assert store.get(v17.id).is_current
    assert [h.memory.id for h in store.recall("Orchard PostgreSQL", k=5)] == [v17.id]
    # asking again for a replacement the chain holds changes nothing
    assert store.supersede(v15.id, v17.id).id == v17.id
    assert store.supersede(v15.id, v16.id).id == v16.id
    assert store.stats().edges["supersedes"] == 2
    # an existing memory given as the replacement also replaces the current version
    other = store.add("Orchard stores data in PostgreSQL 18")
    assert store.supersede(v15.id, other.id).id == other.id
    assert store.get(v17.id).superseded_by == (other.id,)
    assert [h.memory.id for h in store.recall("Orchard PostgreSQL", k=5)] == [other.id]
    # a forgotten end of the chain is passed over: the version before it is current
    store.forget(other.id, confirm=True)
    v19 = store.supersede(v15.id, "Orchard stores data in PostgreSQL 19")
    assert v19.id in store.get(v17.id).superseded_by
    assert [h.memory.id for h in store.recall("Orchard PostgreSQL", k=5)] == [v19.id]
    # a replacement in the middle of the chain is there already: nothing changes
    assert store.supersede(v15.id, v17.id).id == v17.id
    assert store.get(v15.id).superseded_by == (v16.id,)


def test_a_chain_never_leads_into_another_owners_memories(tmp_path: Path) -> None:
    """A file may not link one owner's memory to another's (``test_ump``); a store where
    such an edge was written (a file imported before that was refused) follows a chain
    through its owner's memories alone when the memory is replaced again."""
    from graphmem._engine import EdgeRecord, Patch, WriteBatch
    from graphmem.algorithms import engine_of

    records = [{"ump": "1.0", "id": "urn:t:a1", "kind": "episodic",
                "body": {"text": "alice's pin is 1234"}, "scope": {"owner": "alice"}},
               {"ump": "1.0", "id": "urn:t:b1", "kind": "episodic",
                "body": {"text": "bob's note"}, "scope": {"owner": "bob"}}]
    (tmp_path / "x.json").write_text(json.dumps(records), encoding="utf-8")
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        import_ump(store, tmp_path / "x.json")
        engine_of(store).commit(WriteBatch(
            new_edges=[EdgeRecord(kind="supersedes", src="urn:t:b1", dst="urn:t:a1")],
            patches=[Patch("urn:t:a1", set={"superseded_by": ["urn:t:b1"]})]))
        store.close()
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        assert store.get("urn:t:a1").superseded_by == ("urn:t:b1",)
        new = store.supersede("urn:t:a1", "alice's pin is 9999", owner="alice")
        assert new.owner == "alice"
        assert store.get("urn:t:b1").superseded_by == ()  # bob's memory untouched
        assert new.id in store.get("urn:t:a1").superseded_by


def test_link_references_and_co_occurs(store: MemoryStore) -> None:
    a, b, c = (store.add(t) for t in ("a", "b", "c"))
    store.link(a.id, b.id)
    store.link(a.id, b.id, weight=3.0)  # references keep the strongest weight
    store.link(c.id, a.id, kind="co_occurs")
    store.link(a.id, c.id, kind="co_occurs", weight=2.0)  # same undirected pair
    edges = {(x.kind, x.other, x.direction): x.weight for x in store.links(a.id)}
    assert edges[("references", b.id, "out")] == 3.0
    co = [w for (k, _, _), w in edges.items() if k == "co_occurs"]
    assert co == [3.0]
    assert store.stats().edges == {"references": 1, "co_occurs": 1, "supersedes": 0}
    with pytest.raises(InvalidInputError):
        store.link(a.id, a.id)
    with pytest.raises(InvalidInputError, match="kind"):
        store.link(a.id, b.id, kind="likes")
    with pytest.raises(InvalidInputError, match="weight"):
        store.link(a.id, b.id, weight=float("nan"))
    with pytest.raises(NotFoundError):
        store.link(a.id, "urn:nope")


def test_tombstone_then_forget(store: MemoryStore) -> None:
    memory = store.add("The wifi password is hunter2-zebracorn", subject="wifi zebracorn",
                       tags=["secret"], payload='{"raw": "hunter2-zebracorn"}')
    store.update(memory.id, text="The wifi password is hunter3-zebracorn")
    other = store.add("unrelated")
    store.link(memory.id, other.id)
    tomb = store.tombstone(memory.id)
    assert tomb.status is Status.TOMBSTONED
    with pytest.raises(ConflictError):
        store.tombstone(memory.id)
    with pytest.raises(ConfirmationRequiredError):
        store.forget(memory.id)
    assert store.get(memory.id).text.startswith("The wifi")
    store.forget(memory.id, confirm=True)

    gone = store.get(memory.id)
    assert (gone.status, gone.text, gone.subject, gone.tags, gone.payload) == (
        Status.FORGOTTEN, "", None, (), None)
    last_text = "The wifi password is hunter3-zebracorn"
    # no plain hash survives (a short text would be found by brute force): a keyed digest
    assert hashlib.sha256(last_text.encode()).hexdigest() not in json.dumps(
        [gone.model_dump(mode="json"), [v.model_dump(mode="json")
                                        for v in store.history(memory.id)],
         [e.model_dump(mode="json") for e in store.events(memory.id)]])
    assert gone.text_sha256.startswith("hmac-sha256:")
    assert store.verify_forgotten(memory.id, last_text)
    assert not store.verify_forgotten(memory.id, last_text + "!")
    assert all(v.redacted and v.text is None and v.subject is None
               for v in store.history(memory.id))
    assert store.history(memory.id)[-1].change_type is ChangeType.FORGOTTEN
    assert store.links(memory.id) == []
    assert store.recall("zebracorn", k=10, preset="fulltext") == []
    dump = json.dumps(store.export())
    assert "zebracorn" not in dump and "hunter" not in dump
    rows = store.cypher("MATCH (n) RETURN n")
    assert "zebracorn" not in json.dumps(rows, default=str)
    assert [e.event_type for e in store.events(memory.id)][-1] is EventType.DELETE
    store.forget(memory.id, confirm=True)  # again: nothing left to do


def test_forget_purges_the_database_file(tmp_path: Path, clock) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        for i in range(20):
            store.add(f"filler {i}")
        memory = store.add("quokka-lantern-1971 is the vault code")
        store.update(memory.id, text="quokka-lantern-1972 is the vault code")
        store.forget(memory.id, confirm=True)
        assert store.stats().memories == 21  # the store still works after the rebuild
        store.add("written after the purge")
    for file in path.iterdir():
        assert b"quokka" not in file.read_bytes(), file


def test_forget_purges_a_store_whose_memory_table_outgrows_the_buffer_pool(
        tmp_path: Path) -> None:
    """The purge copies the live data a page at a time into the new file: Kuzu's own
    export, and a copy of a whole table in one transaction, needed the table in the
    buffer pool (a 100k-memory store's purge failed at the default 1 GB; here 4,000
    memories of three sentences at 128 MB, which the store itself holds)."""
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", settings=Settings(buffer_pool_mb=128)) as store:
        for first in range(0, 4000, 200):
            store.add_many([{"text": f"Ana {i} visited Linz on day {i}. She met Tom {i} "
                                     f"there. They walked to the lake {i}.", "owner": "a"}
                            for i in range(first, first + 200)])
        memory = store.add("wombat-ferry-2207 opens the shed", owner="a")
        store.forget(memory.id, confirm=True)
        assert store.stats().memories == 4001
        assert [h.memory.text for h in store.recall("Ana 17 Linz", owner="a", k=1)] == [
            "Ana 17 visited Linz on day 17. She met Tom 17 there. They walked to the lake 17."]
    for file in path.iterdir():
        if file.is_file():
            assert b"wombat" not in file.read_bytes(), file


@pytest.mark.parametrize("swapped", [False, True])
def test_an_open_finishes_a_purge_that_stopped_between_its_two_renames(
        tmp_path: Path, swapped: bool) -> None:
    """A purge moves the old file's write-ahead log aside, then puts the new file in
    place (the new file holds what the log did). Stopped between the two, the next open
    gives the old file its log back (the memory written before the purge is there);
    stopped after, it drops the log (replayed into the new file, it would corrupt it)."""
    import os
    import subprocess
    import sys

    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("written and checkpointed", owner="o")
    # a memory only the log holds: the writer dies without closing
    subprocess.run([sys.executable, "-c", (
        "import os, sys; from graphmem import MemoryStore\n"
        "s = MemoryStore(sys.argv[1], embedder='hashing')\n"
        "s.add('only in the log', owner='o')\n"
        "os._exit(0)\n"), str(path)], check=True)
    wal = path / "graph.kuzu.wal"
    assert wal.stat().st_size > 0
    work = path / ".rebuild"
    work.mkdir()
    os.replace(wal, work / "old.wal")
    found = os.stat(path / "graph.kuzu") if swapped else os.stat(work)
    (work / "fresh.id").write_text(f"{found.st_dev} {found.st_ino}", encoding="utf-8")
    with MemoryStore(path, embedder="hashing") as store:
        texts = sorted(m.text for m in store.memories(owner="o"))
    assert not work.exists()
    # after the swap the file in place is "the new one": here the old file itself, so
    # the memory only its log held is gone with the log, as the rebuild meant
    assert texts == (["written and checkpointed"] if swapped
                     else ["only in the log", "written and checkpointed"])


def test_export_is_the_gdpr_shape(sample_store: MemoryStore) -> None:
    data = sample_store.export(owner="did:key:z6MkwrenNadiaOkafor7h3kq9")
    statuses = {m["status"] for m in data["memories"]}
    assert statuses == {"active", "candidate", "archived"}
    assert {m["status"] for m in data["tombstoned"]} == {"tombstoned"}
    assert all(m["owner"] == "did:key:z6MkwrenNadiaOkafor7h3kq9"
               for m in data["memories"] + data["tombstoned"])
    assert len(data["versions"]) == len(data["memories"]) + len(data["tombstoned"])
    assert json.loads(json.dumps(data)) == data
    tomas = sample_store.export(owner="did:key:z6MkwrenTomasRuiz2p8d4m")
    assert len(tomas["memories"]) + len(tomas["tombstoned"]) == 10


def test_owner_scoping(store: MemoryStore) -> None:
    mine = store.add("mine", owner="alice")
    theirs = store.add("theirs", owner="bob")
    assert store.get(mine.id, owner="alice").text == "mine"
    with pytest.raises(NotFoundError):
        store.get(theirs.id, owner="alice")
    with pytest.raises(NotFoundError):
        store.update(theirs.id, text="hacked", owner="alice")
    with pytest.raises(NotFoundError):
        store.link(mine.id, theirs.id, owner="alice")
    assert [m.text for m in store.memories(owner="alice")] == ["mine"]
    # every hit is checked, not the first: another owner's id is left out
    assert [m.id for m in store.get_many([theirs.id, mine.id], owner="alice")] == [mine.id]
    assert [m.id for m in store.get_many([theirs.id, mine.id])] == [theirs.id, mine.id]
    assert store.get_many([theirs.id], owner="alice") == []


def test_links_with_an_owner_leave_out_other_owners_ends(store: MemoryStore) -> None:
    hub = store.add("hub", owner="alice", id="urn:t:hub")
    mine = store.add("mine", owner="alice", id="urn:t:mine")
    theirs = store.add("theirs", owner="bob", id="urn:t:theirs")
    store.link(hub.id, mine.id)
    store.link(theirs.id, hub.id)  # bob's memory points at alice's
    store.link(hub.id, theirs.id, kind="co_occurs")
    every = {(x.kind, x.other, x.direction) for x in store.links(hub.id)}
    assert every == {("references", mine.id, "out"), ("references", theirs.id, "in"),
                     ("co_occurs", theirs.id, "out")}
    assert [(x.kind, x.other, x.direction) for x in store.links(hub.id, owner="alice")] == [
        ("references", mine.id, "out")]
    assert {x.other for x in store.links(theirs.id, owner="bob")} == set()
    with pytest.raises(NotFoundError):
        store.links(theirs.id, owner="alice")


class _Untouchable:
    """An engine that fails any use: stands in for the store's while a call must be
    refused before it reaches the engine."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the engine was asked for {name}")


def test_an_owner_that_is_no_string_is_refused_before_the_engine(store_location: str,
                                                                 clock) -> None:
    with MemoryStore(store_location, embedder="hashing", clock=clock) as store:
        note = store.add("Nadia moved to Lisbon in 2024", owner="alice")
        other = store.add("Nadia works at Acme", owner="alice")
        entity = store.entities()[0].id
        calls: dict[str, Callable[[Any], object]] = {
            # reads
            "get": lambda o: store.get(note.id, owner=o),
            "get_many": lambda o: store.get_many([note.id], owner=o),
            "memories": lambda o: store.memories(owner=o),
            "memory_count": lambda o: store.memory_count(owner=o),
            "links": lambda o: store.links(note.id, owner=o),
            "history": lambda o: store.history(note.id, owner=o),
            "events": lambda o: store.events(owner=o),
            "recall": lambda o: store.recall("Lisbon", owner=o),
            "evaluate": lambda o: store.evaluate(note.id, owner=o),
            "batch_evaluate": lambda o: store.batch_evaluate(owner=o),
            "run_lifecycle": lambda o: store.run_lifecycle(owner=o),
            "entities": lambda o: store.entities(owner=o),
            "find_entities": lambda o: store.find_entities("Nadia", owner=o),
            "facts": lambda o: store.facts(owner=o),
            "mentions": lambda o: store.mentions(owner=o),
            "graph_sections": lambda o: store.graph_sections([note.id], owner=o),
            "export": lambda o: store.export(o),
            "named_query": lambda o: store.named_query("most_mentioned_entities", owner=o),
            "vectors": lambda o: store.vectors(owner=o),
            "to_networkx": lambda o: store.to_networkx(owner=o),
            # changes
            "update": lambda o: store.update(note.id, importance=0.9, owner=o),
            "supersede": lambda o: store.supersede(note.id, "Nadia moved to Porto", owner=o),
            "correct": lambda o: store.correct(note.id, "Nadia moved to Porto", owner=o),
            "link": lambda o: store.link(note.id, other.id, owner=o),
            "tombstone": lambda o: store.tombstone(note.id, owner=o),
            "keep": lambda o: store.keep(note.id, owner=o),
            "forget": lambda o: store.forget(note.id, confirm=True, owner=o),
            "forget_many": lambda o: store.forget_many([note.id], confirm=True, owner=o),
            "feedback": lambda o: store.feedback(note.id, useful=True, owner=o),
            "promote": lambda o: store.promote(note.id, owner=o),
            "archive": lambda o: store.archive(note.id, owner=o),
            "restore": lambda o: store.restore(note.id, owner=o),
            "add_conversation": lambda o: store.add_conversation(["I moved to Porto."],
                                                                 session_id="s1", owner=o),
            "split_entity": lambda o: store.split_entity(entity, "Nadia", owner=o),
        }
        # every method that takes an owner is called here
        assert set(calls) == {
            name for name, method in inspect.getmembers(MemoryStore, inspect.isfunction)
            if not name.startswith("_") and "owner" in inspect.signature(method).parameters}
        before = store.export()
        engine = store._ctx.engine
        store._ctx.engine = _Untouchable()  # type: ignore[assignment]
        try:
            for name, call in calls.items():
                for owner in (5, [1], b"x", True):
                    with pytest.raises(InvalidInputError, match="owner must be a string") \
                            as caught:
                        call(owner)
                    assert caught.value.field == "owner", (name, owner)
        finally:
            store._ctx.engine = engine
        assert store.export() == before
        # a blank or overlong owner, or one that reads as another: refused by a read as
        # by a write
        for owner in ("", " ", "x" * 2001, "alice\u200b", "\u202ealice", "ali\tce",
                      "alice ", "alice\u3164", "alice\u00a0", "jose\u0301", "\uff41lice",
                      "alice\ufe0f", "alice\ue000"):
            with pytest.raises(InvalidInputError) as wrote:
                store.add("Nadia likes tea", owner=owner)
            with pytest.raises(InvalidInputError) as read:
                store.memories(owner=owner)
            assert wrote.value.field == read.value.field == "owner"
        assert store.memories(owner="alice") == store.memories()
        # names as their scripts spell them are owners: a joiner inside Persian or Sinhala,
        # Thai's sara am, an emoji sequence, a symbol with its emoji selector
        for owner in ("علی\u200cرضا", "ශ්\u200dරී", "สำราญ", "👩\u200d💻", "❤\ufe0f", "Zoë"):
            made = store.add("Nadia likes tea", owner=owner)
            assert [m.id for m in store.memories(owner=owner)] == [made.id]


def test_events_filters(store: MemoryStore, clock) -> None:
    a = store.add("a", owner="alice")
    b = store.add("b", owner="bob")
    store.tombstone(a.id)
    clock.advance(days=1)
    store.tombstone(b.id)
    assert [e.memory_id for e in store.events()] == [a.id, b.id]
    assert [e.memory_id for e in store.events(owner="bob")] == [b.id]
    assert [e.memory_id for e in store.events(since=clock.now)] == [b.id]
    assert len(store.events(event_type="tombstone", limit=1)) == 1
    with pytest.raises(InvalidInputError, match="event type"):
        store.events(event_type="explode")
    event = store.events(a.id)[0].model_dump(by_alias=True)
    assert set(event) == {"eventId", "memoryId", "eventType", "fromState", "toState", "reason",
                          "triggeredBy", "agentId", "timestamp", "metadata"}


def test_cypher_is_read_only_and_checks_parameters(store: MemoryStore) -> None:
    store.add("one", kind="note")
    store.add("two", kind="note")
    rows = store.cypher("MATCH (m:Memory) WHERE m.kind = $k RETURN count(*) AS n", {"k": "note"})
    assert rows == [{"n": 2}]
    frame = store.cypher("MATCH (m:Memory) RETURN m.text AS text ORDER BY text",
                         as_dataframe=True)
    assert list(frame["text"]) == ["one", "two"]
    with pytest.raises(ReadOnlyStoreError):
        store.cypher("MATCH (m:Memory) DELETE m")
    with pytest.raises(InvalidInputError, match=r"\$x"):
        store.cypher("MATCH (m:Memory) WHERE m.id = $x SET m.importance = 0.0", write=True)
    # the trap of a missing parameter never fires (the guard refuses a DELETE before)
    assert store.cypher("MATCH (m:Memory) WHERE m.importance = 0.0 RETURN count(*) AS n") \
        == [{"n": 0}]
    with pytest.raises(InvalidInputError, match="Cypher error"):
        store.cypher("MATCH (m:Memory RETURN m")
    injection = "x' OR 1=1 //"
    assert store.cypher("MATCH (m:Memory) WHERE m.text = $t RETURN m.id", {"t": injection}) == []
    store.cypher("MATCH (m:Memory) WHERE m.text = 'one' SET m.importance = 0.9", write=True)
    assert store.cypher("MATCH (m:Memory {text: 'one'}) RETURN m.importance AS i") == [{"i": 0.9}]


def test_to_networkx(sample_store: MemoryStore) -> None:
    graph = sample_store.to_networkx()
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.number_of_nodes() == 301
    supersedes = [(u, v) for u, v, d in graph.edges(data=True) if d["kind"] == "supersedes"]
    assert len(supersedes) == 11
    u, v = supersedes[0]
    assert graph.nodes[u]["subject"] == graph.nodes[v]["subject"]
    assert {d["kind"] for _, _, d in graph.edges(data=True)} == {"supersedes", "references"}
    only = sample_store.to_networkx(edge_kinds=["supersedes"])
    assert only.number_of_edges() == 11
    active = sample_store.to_networkx(statuses=["active"])
    assert all(d["status"] == "active" for _, d in active.nodes(data=True))


def test_stats_counts(sample_store: MemoryStore) -> None:
    stats = sample_store.stats()
    assert stats.memories == 301
    assert stats.by_status == {"active": 162, "candidate": 50, "archived": 40, "tombstoned": 49}
    assert stats.by_kind["episodic"] == 203 and len(stats.by_kind) == 6
    assert (stats.superseded, stats.owners, stats.edges["supersedes"]) == (11, 2, 11)


def test_read_only_store(tmp_path: Path, clock) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        memory = store.add("readable")
    with MemoryStore(path, read_only=True, clock=clock) as store:
        assert store.get(memory.id).text == "readable"
        with pytest.raises(ReadOnlyStoreError):
            store.add("nope")


def test_unusable_paths_are_clear_errors(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a database")
    with pytest.raises(StoreError, match="is a file"):
        MemoryStore(a_file, embedder="hashing")
    with pytest.raises(StoreError, match="does not exist"):
        MemoryStore(tmp_path / "missing" / "db", embedder="hashing")
    with pytest.raises(StoreError, match="no database"):
        MemoryStore(tmp_path / "new", read_only=True)


def test_an_empty_path_opens_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty path would name the working directory: it is refused, nothing is made."""
    from click.testing import CliRunner

    import graphmem
    from graphmem.cli import cli

    monkeypatch.chdir(tmp_path)
    for path in ("", "  "):
        with pytest.raises(InvalidInputError, match="path is empty"):
            MemoryStore(path, embedder="hashing")
        with pytest.raises(InvalidInputError, match="url is empty"):
            graphmem.connect(path)
        for args in (["--db", path, "init"], ["init", "--db", path]):
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 2 and "'--db': is empty" in result.stderr
    with pytest.raises(InvalidInputError, match="NUL"):
        MemoryStore("db\x00x", embedder="hashing")
    assert list(tmp_path.iterdir()) == []


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store._ctx.engine.set_meta({"schema_version": "99"})  # as a newer graphmem would leave it
    with pytest.raises(SchemaVersionError, match="99"):
        MemoryStore(path)


def test_in_memory_store(mem_store: MemoryStore) -> None:
    memory = mem_store.add("ephemeral")
    assert mem_store.get(memory.id).text == "ephemeral"
    assert mem_store.path == ":memory:"


def test_inserts_after_an_edit_of_indexed_text(store: MemoryStore) -> None:
    """With a Kuzu FTS index (schema v2), a COPY after a SET of an indexed column failed
    and a SET after CREATE crashed; v3 has none: edits, bulk inserts and forgets mix."""
    first = store.add("The greenhouse pump runs at dawn")
    store.update(first.id, text="The greenhouse pump runs at dusk")
    added = store.add("Marigolds need the pump twice a week")
    many = store.add_many([{"text": f"Orchid batch {i} arrived"} for i in range(3)])
    assert store.stats().memories == 5
    def found(query: str) -> set[str]:
        hits = store.recall(query, k=5, preset="fulltext", record_access=False)
        return {h.memory.id for h in hits}

    assert found("marigolds") == {added.id}
    assert found("orchid") == {m.id for m in many}
    assert found("dusk") == {first.id}
    conversation = store.add_conversation(
        ["I moved the spare key to the blue notebook yesterday.",
         "My sister keeps the garage code in her office safe."], session_id="s1")
    for memory_id in [*conversation.created_ids, added.id]:
        store.forget(memory_id, confirm=True, purge=False)
    store.update(first.id, text="The greenhouse pump runs at noon")
    store.add("Still writable")
    assert found("marigolds") == set()


def test_opening_without_create_makes_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    with pytest.raises(StoreError, match=f"no graphmem database at {missing}"):
        MemoryStore(missing, embedder="hashing", create=False)
    assert not missing.exists()
    with MemoryStore(missing, embedder="hashing") as store:
        store.add("made on purpose")
    with MemoryStore(missing, embedder="hashing", create=False) as store:
        assert len(store.memories()) == 1
    notes = tmp_path / "notes"  # a directory of other files holds no store either
    notes.mkdir()
    (notes / "todo.md").write_text("buy milk\n", encoding="utf-8")
    with pytest.raises(StoreError, match=f"{notes} holds other files \\(todo.md\\) and no "
                                         "graphmem database"):
        MemoryStore(notes, embedder="hashing", create=False)
    assert [p.name for p in notes.iterdir()] == ["todo.md"]


def test_merge_names_a_record_that_is_no_memory_input(store: MemoryStore) -> None:
    from graphmem import MemoryInput, RecordError

    good = MemoryInput(id="urn:a", text="Nadia moved to Lisbon")
    for bad, why in (({"id": "urn:b", "text": "x"}, "not a dict \\(MemoryInput"),
                     ("urn:b", "not a str")):
        with pytest.raises(RecordError, match=f"record 1: a record is a MemoryInput, {why}"):
            store.merge([good, bad])  # type: ignore[list-item]
    assert store.memory_count() == 0


@pytest.mark.parametrize("call", ["get", "links", "history", "update", "feedback",
                                  "tombstone", "restore"])
def test_an_id_that_is_no_text_is_named(tmp_path: Path, call: str) -> None:
    """A lone surrogate (a JSON "\\udc80" escape) in an id is refused naming the id, not
    passed to the database (a database error before), and nothing is written."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        memory = store.add("Lena keeps the spare key under the blue pot.")
        store.recall("spare key")
        args = {"update": {"importance": 0.9}, "feedback": {"useful": True},
                "tombstone": {"reason": "test"}}.get(call, {})
        with pytest.raises(InvalidInputError, match="id holds U\\+DC80") as caught:
            getattr(store, call)(memory.id + "\udc80", **args)
        assert caught.value.field == "id"
        assert store.get(memory.id).version == 1
