"""Forget is complete: copies of the text with other whitespace, audited Cypher that quoted
it, the plain hash of a short text, torn write-ahead-log copies, and re-imports that would
bring a forgotten memory back (or move a memory to another owner)."""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path

import pytest

from graphmem import ConflictError, InvalidInputError, MemoryStore, RecordError, Status
from graphmem._kuzu import Database, _engine
from ingest.ump import export_ump, import_ump


def _files_hold(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize("message", [
    "My locker  code is   quartzfalcon and the PIN is 4071",
    "My locker code is quartzfalcon\nand the PIN is 4071",
    "  My locker code is\tquartzfalcon and the PIN is 4071  ",
])
def test_neighbours_lose_the_text_whatever_its_whitespace(tmp_path: Path, message: str) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        # a reply that points back is indexed with the message it answers: the secret
        result = store.add_conversation([
            {"speaker": "Ann", "text": "We are planning the greenhouse rebuild for March."},
            {"speaker": "Ann", "text": message},
            {"speaker": "Ann", "text": "that one is for the gym locker"},
        ], session_id="s1")
        created = result.created_ids + result.candidate_ids
        secrets = [m for m in store.get_many(created)
                   if "4071" in m.text or "quartzfalcon" in m.text]
        neighbours = [m for m in store.get_many(created) if m not in secrets]
        assert any("4071" in (m.context or "") for m in neighbours)  # the trap is set
        for secret in secrets:
            store.forget(secret.id, confirm=True)
        for memory in store.get_many(created):
            for word in ("quartzfalcon", "4071"):
                assert word not in (memory.context or "")
                assert word not in memory.text
        for preset in ("fulltext", "default"):
            assert store.recall("quartzfalcon locker", k=10, preset=preset) == [] or all(
                "quartzfalcon" not in (h.memory.context or "") for h in
                store.recall("quartzfalcon locker", k=10, preset=preset))
        assert "quartzfalcon" not in json.dumps(store.export())
    assert _files_hold(db, b"quartzfalcon") == []


def test_a_correction_in_another_sitting_loses_a_short_sentence_of_what_it_corrects(
        tmp_path: Path) -> None:
    """A correction is indexed with what it corrects, in its message: a window of a long
    message of another sitting. A short sentence of that message forgotten leaves it
    there too (short texts of other sittings were cut only where they filled a line:
    found from outside; the correction's window of the message is not the forgotten
    statement's own, which a forget cuts whole)."""
    filler = " ".join(f"Is it raining today in the city of Town{i} or not?"
                      for i in range(60))
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add_conversation([{"role": "user", "content": filler + " I'm 34. First class "
                                 "is on the 9th of March. My cousin Kin works in the library."}],
                               owner="u", session_id="s1")
        store.add_conversation([{"role": "user", "content": "oh sorry, I meant the 16th, "
                                 "not the 9th"}], owner="u", session_id="s2")
        fix = next(m for m in store.memories(owner="u") if m.provenance.get("corrects"))
        assert "I'm 34." in (fix.context or "")  # the trap is set
        store.forget(next(m.id for m in store.memories(owner="u") if m.text == "I'm 34."),
                     owner="u", confirm=True)
        left = store.get(fix.id)
        assert "I'm 34" not in (left.context or "")
        assert "9th of March" in (left.context or "")  # what it corrects stays


@pytest.mark.parametrize("scan_limit", [64, 0])
def test_bytes_left_by_the_purge_are_purged_again_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, scan_limit: int) -> None:
    """Kuzu can write a page's unused bytes from the process's freed memory after a
    purge (a forgotten message came back so in 2 of 300 forgets under load): the
    close finds the text in the files and purges again in a new process. Here a stale
    page from the middle of a long text is written into the file as the store closes
    (with ``scan_limit`` 0, too many texts to look for: no look at all)."""
    monkeypatch.setattr(_engine, "_SCAN_LIMIT", scan_limit)
    caplog.set_level(logging.INFO, "graphmem")
    db = tmp_path / "db"
    secret = " ".join(f"vault{i} phrase amberlynx{i} opens door {i}." for i in range(400))
    stale = secret.encode()[9_000:13_096]
    with MemoryStore(db, embedder="hashing") as store:
        kept = store.add("The greenhouse rebuild is planned for March")
        gone = store.add(secret)
        store.forget(gone.id, confirm=True)
        assert _files_hold(db, b"amberlynx") == []
        closing = Database.close

        def leaving_a_page(self: Database) -> None:
            closing(self)
            with (db / Database.FILE_NAME).open("ab") as data:
                data.write(stale)

        with monkeypatch.context() as patch:
            patch.setattr(Database, "close", leaving_a_page)
            store.close()
        assert _files_hold(db, b"amberlynx") == []
    assert "purging again in a new process" in caplog.text
    assert "could not remove" not in caplog.text
    with MemoryStore(db, embedder="hashing") as store:  # sound, and the rest is there
        assert store.get(kept.id).text == kept.text
        assert store.get(gone.id).status is Status.FORGOTTEN


def test_what_stays_live_is_not_looked_for(tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """A forgotten sentence's message, and another owner's copy of its words, stay in
    the file: no second purge at close, no warning."""
    caplog.set_level(logging.INFO, "graphmem")
    db = tmp_path / "db"
    said = "Ann's locker code is quartzfalcon and the PIN is 4071"
    with MemoryStore(db, embedder="hashing") as store:
        gone = store.add(said, owner="ann")
        kept = store.add(said, owner="bob")
        sitting = store.add_conversation([{"speaker": "user", "text": "I'm Zorblaxia Quent. "
                                           "I adore figs and the dates from Tunisia."}],
                                         session_id="s1", owner="ann")
        store.forget(gone.id, confirm=True)
        store.forget(next(i for i in sitting.created_ids
                          if "Zorblaxia" in store.get(i).text), confirm=True)
    assert "purging again" not in caplog.text and "could not remove" not in caplog.text
    assert _files_hold(db, b"Zorblaxia") == []
    with MemoryStore(db, embedder="hashing") as store:
        assert store.get(kept.id).text == said


def test_a_relative_path_is_purged_where_the_store_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setattr(_engine, "_SCAN_LIMIT", 0)  # purged again at close without a look
    with MemoryStore("db", embedder="hashing") as store:
        gone = store.add("The vault phrase is amberlynx and it opens the east door")
        store.forget(gone.id, confirm=True)
        monkeypatch.chdir(tmp_path / "elsewhere")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert _files_hold(tmp_path / "db", b"amberlynx") == []


def test_no_interpreter_to_purge_with_is_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(_engine, "_SCAN_LIMIT", 0)
    monkeypatch.setattr(sys, "executable", "")
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.forget(store.add("The vault phrase is amberlynx").id, confirm=True)
    assert "no Python interpreter to start" in caplog.text


def test_no_plain_hash_survives_anywhere(tmp_path: Path) -> None:
    db = tmp_path / "db"
    short = "PIN 4071"
    plain = hashlib.sha256(short.encode()).hexdigest()
    with MemoryStore(db, embedder="hashing") as store:
        memory = store.add(short)
        store.update(memory.id, importance=0.9)
        assert plain in json.dumps(store.export())  # while it lives, the hash is there
        store.forget(memory.id, confirm=True)
        dump = json.dumps([store.export(), [v.model_dump(mode="json")
                                            for v in store.history(memory.id)]])
        assert plain not in dump
        assert store.verify_forgotten(memory.id, short)
        assert not store.verify_forgotten(memory.id, "PIN 4072")
    assert _files_hold(db, plain.encode()) == []


def test_other_events_that_quoted_it_are_scrubbed(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        secret = store.add("the vault phrase is cobaltheron")
        other = store.add("the weather was fine")
        store.cypher("MATCH (m:Memory) WHERE m.text = 'the vault phrase is cobaltheron' "
                     "SET m.importance = 0.8", write=True)
        store.link(other.id, secret.id)
        store.archive(other.id, create_summary=True)
        assert "cobaltheron" in json.dumps([e.model_dump(mode="json")
                                            for e in store.events()])
        store.forget(secret.id, confirm=True)
        events = json.dumps([e.model_dump(mode="json") for e in store.events()])
        assert "cobaltheron" not in events
        archive = store.events(other.id)[-1]
        assert archive.metadata["summary"] is None and archive.metadata["summaryRedacted"]
    assert _files_hold(tmp_path / "db", b"cobaltheron") == []


def test_torn_wal_copies_are_removed(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        memory = store.add("the launch code is amberfjord")
        torn = db / "graph.kuzu.wal.torn-20260101T000000"
        # as crash recovery would have kept it: the WAL's record of the text, whole (a
        # freed buffer of this process that Kuzu may write into a page holds these
        # bytes too; the store looks for the forgotten text's, so a piece of it alone
        # once stayed in graph.kuzu: 1 fresh-clone run under load)
        torn.write_bytes(b"...the launch code is amberfjord...")
        store.forget(memory.id, confirm=True)
        assert not torn.exists()
    assert _files_hold(db, b"amberfjord") == []


def _ump(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _record(memory_id: str, text: str, owner: str | None = "ann",
            superseded_by: list[str] | None = None) -> dict[str, object]:
    return {"ump": "0.1", "id": memory_id, "kind": "semantic", "body": {"text": text},
            "scope": {"owner": owner}, "superseded_by": superseded_by or []}


def test_a_forgotten_id_never_comes_back(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        file = _ump(tmp_path / "a.json", [_record("urn:x:1", "first secret"),
                                          _record("urn:x:2", "second", superseded_by=[])])
        import_ump(store, file)
        export_ump(store, tmp_path / "before.json")
        store.forget("urn:x:1", confirm=True)
        for source in (file, tmp_path / "before.json"):
            result = import_ump(store, source)
            assert result.forgotten == ["urn:x:1"]
            assert store.get("urn:x:1").status is Status.FORGOTTEN
            assert store.get("urn:x:1").text == ""
        with pytest.raises(ConflictError):
            store.add("first secret", id="urn:x:1")
        with pytest.raises(ConflictError, match="forgotten"):
            store.link("urn:x:2", "urn:x:1")
        with pytest.raises(ConflictError, match="forgotten"):
            store.supersede("urn:x:2", "urn:x:1")
        assert store.links("urn:x:1") == []


def test_a_reimport_cannot_change_the_owner(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        import_ump(store, _ump(tmp_path / "a.json", [_record("urn:x:1", "ann's note")]))
        before = json.dumps({**store.export(), "generated": None}, sort_keys=True, default=str)
        for owner in ("mallory", None):
            hostile = _ump(tmp_path / "b.json", [_record("urn:x:0", "fine", owner=owner),
                                                  _record("urn:x:1", "ann's note", owner=owner)])
            with pytest.raises(RecordError, match="owner") as caught:
                import_ump(store, hostile)
            assert "record 1" in str(caught.value) and "urn:x:1" in str(caught.value)
            assert json.dumps({**store.export(), "generated": None}, sort_keys=True,
                              default=str) == before
        assert store.get("urn:x:1").owner == "ann"


def test_forgetting_again_and_again_keeps_the_store_whole(tmp_path: Path) -> None:
    """In Kuzu 0.11.3 a relationship deleted after a checkpoint corrupts its table at the
    next checkpoint (the next scan segfaulted: supersede then forget, twice). Forget marks
    edges gone instead, and a purge leaves them out."""
    db = tmp_path / "db"
    for round_ in range(3):
        with MemoryStore(db, embedder="hashing") as store:  # each round checkpoints on close
            old = store.add(f"round {round_} secret heronvault", id=f"urn:r:{round_}")
            keep = store.add(f"round {round_} kept", id=f"urn:k:{round_}")
            store.supersede(old.id, f"round {round_} replacement")
            store.link(keep.id, old.id)
            store.link(keep.id, old.id, kind="co_occurs")
            store.forget(old.id, confirm=True, purge=round_ != 1)
            assert store.links(old.id) == []
            assert [x.other for x in store.links(keep.id)] == []
            edges = store.stats().edges
            assert edges == {"references": 0, "co_occurs": 0, "supersedes": 0}
    with MemoryStore(db, embedder="hashing") as store:
        assert store.stats().memories == 9
        store.purge()
        gone = store.cypher("MATCH ()-[r:SUPERSEDES|REFERENCES|CO_OCCURS]->() "
                            "RETURN count(*) AS n")
        assert gone == [{"n": 0}]  # the purge left the marked edges out
    assert _files_hold(db, b"heronvault") == []


def test_forget_erases_a_memory_marked_forgotten_by_other_means(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        memory = store.add("Alice's vault code is ochrewillow", owner="alice")
        with pytest.raises(InvalidInputError, match="may not set status"):
            store.cypher("MATCH (m:Memory {id: $id}) SET m.status = 'forgotten'",
                         {"id": memory.id}, write=True)
    raw = Database(str(db), buffer_pool_mb=128)  # as another program (or an old one) left it
    try:
        raw.run_auto("MATCH (m:Memory {id: $id}) SET m.status = 'forgotten'", {"id": memory.id})
    finally:
        raw.close()
    with MemoryStore(db, embedder="hashing") as store:
        store.forget(memory.id, confirm=True)
        assert store.get(memory.id).text == ""  # type: ignore[union-attr]
        assert all(not v.text for v in store.history(memory.id))
        assert store.verify_forgotten(memory.id, "Alice's vault code is ochrewillow")
        store.forget(memory.id, confirm=True)  # and again changes nothing
    assert _files_hold(db, b"ochrewillow") == []
