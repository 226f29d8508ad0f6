"""The store's secret keys: the forget key (HMAC of forgotten texts) and the id key never
reach a query, an export or a backup; with what a caller can see, a short forgotten text
cannot be found again by brute force, nor a forgotten name from an id; a restored store
checks old deletions once the original key is given back; older stores move their key out
of ``Meta`` and repair what their forgets left in the graph."""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphmem import MemoryStore, SchemaVersionError, StoreError
from graphmem._kg import new_entity_id
from graphmem._kuzu import SCHEMA_VERSION, Database
from graphmem._redact import keyed_digest
from graphmem.cli import cli
from ingest.ump import import_ump, ump_records
from tests.conftest import Clock

PIN = "PIN 4071"
_HEX = re.compile(rb"[0-9a-f]{32,128}")


@pytest.fixture(params=["kuzu", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[MemoryStore]:
    where = request.getfixturevalue("pg_url") if request.param == "postgres" \
        else str(tmp_path / "db")
    with MemoryStore(where, embedder="hashing", clock=clock) as opened:
        yield opened


def _forget_key(store: MemoryStore) -> str:
    [key] = [v for p, v in store._ctx.engine.secrets() if p == "forget"]
    return key


def _seen(store: MemoryStore, tmp_path: Path) -> bytes:
    """Everything a caller with a read and all_owners token can get: read-only Cypher
    over every node and relationship (Kuzu), the UMP and GDPR exports, and a backup."""
    seen: list[Any] = [ump_records(store), store.export()]
    if store._ctx.engine.cypher is not None:
        seen += [store.cypher("MATCH (n) RETURN n"), store.cypher("MATCH ()-[r]->() RETURN r")]
    blob = json.dumps(seen, default=str).encode()
    backup = tmp_path / "backup"
    store.backup(backup)
    files = b"".join(p.read_bytes() for p in sorted(backup.rglob("*")) if p.is_file())
    return blob + files


def test_no_query_export_or_backup_holds_the_keys(store: MemoryStore, tmp_path: Path) -> None:
    secret = store.add(PIN, owner="ann")
    store.add("Caroline moved to Lisbon", owner="ann")
    store.forget(secret.id, confirm=True)
    keys = [v for _, v in store._ctx.engine.secrets()]
    assert {p for p, _ in store._ctx.engine.secrets()} == {"forget", "ids"}
    assert "forget_key" not in store._ctx.engine.meta()
    seen = _seen(store, tmp_path)
    assert [k for k in keys if k.encode() in seen] == []
    assert PIN.encode() not in seen
    if not store.path.startswith("postgresql"):
        key_file = Path(store.path) / "graphmem.keys"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert not list((tmp_path / "backup").rglob("graphmem.keys"))


def test_the_digests_alone_give_no_short_text_back(store: MemoryStore, tmp_path: Path) -> None:
    secret = store.add(PIN, owner="ann")
    store.forget(secret.id, confirm=True)
    digest = store.get(secret.id).text_sha256
    tag = digest.split(":")[1]
    seen = _seen(store, tmp_path)
    assert digest.encode() in seen  # what the attacker works from
    # the digests, the store's id, the checksums of the backup's eight files
    candidates = {m.decode() for m in _HEX.findall(seen)}
    assert len(candidates) >= 10

    def brute(keys: set[str]) -> list[str]:
        return [f"PIN {n:04d}" for n in range(10_000) for key in keys
                if keyed_digest(key, f"PIN {n:04d}", key_id=tag) == digest]

    assert brute(candidates) == []  # no key a caller sees
    assert hashlib.sha256(PIN.encode()).hexdigest().encode() not in seen
    assert brute({_forget_key(store)}) == [PIN]  # the attack, had the key leaked
    assert store.verify_forgotten(secret.id, PIN)


def test_no_id_is_a_plain_hash_of_a_name(store: MemoryStore, tmp_path: Path) -> None:
    store.add("Caroline lives in Ibadan", owner="ann")
    lisbon = store.add("Caroline moved to Lisbon", owner="ann")
    store.forget(lisbon.id, confirm=True)
    seen = _seen(store, tmp_path).decode("latin-1")
    names = ["caroline", "ibadan", "lisbon", "porto"]
    plain = {new_entity_id(owner, kind, name) for owner in ("ann", "")
             for kind in ("person", "place", "other") for name in names}
    ids = set(re.findall(r"ent_[0-9a-f]+", seen))
    assert ids and not ids & plain
    entities = [e.id for e in store.entities(owner="ann")]
    for fact in store.facts(owner="ann"):
        unkeyed = {"fact_" + hashlib.blake2b("\x1f".join(
            ["ann", s, p, o, fact.valid_from.isoformat()]).encode(), digest_size=8).hexdigest()
            for s in entities for o in entities for p in ("lives_in", "moved_to")}
        assert fact.id not in unkeyed


def test_a_restored_store_checks_old_deletions_once_its_key_is_back(tmp_path: Path,
                                                                   clock: Clock) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=clock) as store:
        old = store.add(PIN, owner="ann")
        store.forget(old.id, confirm=True)
        store.backup(tmp_path / "backup")
        original = _forget_key(store)
    info = MemoryStore.restore_backup(tmp_path / "backup", tmp_path / "restored")
    assert info.forgotten == 1 and info.memories == 1
    assert not (tmp_path / "restored" / "graphmem.keys").exists()
    # the command says so
    said = CliRunner().invoke(cli, ["--db", str(tmp_path / "again"), "restore-backup",
                                    str(tmp_path / "backup")])
    assert said.exit_code == 0, said.output
    assert "1 of them was forgotten" in said.stderr and "forget key" in said.stderr
    with MemoryStore(tmp_path / "restored", embedder="hashing", clock=clock) as store:
        with pytest.raises(StoreError, match=r"forget key [0-9a-f]{16}.*graphmem\.keys"):
            store.verify_forgotten(old.id, PIN)
        new = store.add("PIN 5555", owner="ann")
        store.forget(new.id, confirm=True)  # forgetting goes on, under a new key
        assert store.verify_forgotten(new.id, "PIN 5555")
        with pytest.raises(StoreError, match="does not hold"):
            store.verify_forgotten(old.id, PIN)
        with (tmp_path / "restored" / "graphmem.keys").open("a") as handle:
            handle.write(f"forget {original}\n")  # the original key, given back
        assert store.verify_forgotten(old.id, PIN)
        assert not store.verify_forgotten(old.id, "PIN 4072")
        assert store.verify_forgotten(new.id, "PIN 5555")


def _as_version_5(path: Path, *, legacy_key: str, memory_id: str, text: str) -> None:
    """The store at ``path`` as graphmem v5 left it: its forget key in ``Meta`` beside an
    unkeyed-format digest, no key file, and the graph as forgets left it then (a fact
    still ended by a fact that is gone, an entity named by a forgotten memory)."""
    (path / "graphmem.keys").unlink()
    db = Database(str(path), buffer_pool_mb=128)
    try:
        db.run_auto("MERGE (m:Meta {key: 'forget_key'}) SET m.value = $k", {"k": legacy_key})
        db.run_auto("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '5'")
        db.run_auto("MATCH (m:Memory {id: $id}) SET m.text_sha256 = $d",
                    {"id": memory_id, "d": keyed_digest(legacy_key, text)})
        db.run_auto("MATCH ()-[f:FACT]->() WHERE f.gone IS NULL SET f.valid_to = "
                    "timestamp('2026-07-20T00:00:00'), f.ended_by = 'fact_0123456789abcdef'")
        db.run_auto("MATCH (e:Entity) WHERE e.name = 'caroline' SET e.name = 'caroline okafor',"
                    " e.aliases = ['caroline', 'caroline okafor']")
    finally:
        db.close()


def test_a_v5_store_moves_its_key_out_of_meta_and_repairs_its_graph(tmp_path: Path,
                                                                    clock: Clock) -> None:
    path = tmp_path / "db"
    legacy = "ab" * 32
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        store.add("Caroline lives in Ibadan", owner="ann")
        clock.now += timedelta(days=1)
        gone = store.add("Caroline Okafor moved to Lisbon", owner="ann")
        store.forget(gone.id, confirm=True)
    _as_version_5(path, legacy_key=legacy, memory_id=gone.id,
                  text="Caroline Okafor moved to Lisbon")
    with pytest.raises(SchemaVersionError, match=f"needs a migration to {SCHEMA_VERSION}"):
        MemoryStore(path, read_only=True)
    with MemoryStore(path, embedder="hashing", clock=clock) as store:
        assert store.stats().schema_version == SCHEMA_VERSION
        meta = store._ctx.engine.meta()
        assert "forget_key" not in meta and meta["kg_repair"] == "0"
        assert ("forget", legacy) in store._ctx.engine.secrets()
        assert store.cypher("MATCH (m:Meta) WHERE m.value = $k RETURN m.key",
                            {"k": legacy}) == []
        assert store.verify_forgotten(gone.id, "Caroline Okafor moved to Lisbon")
        [fact] = store.facts(owner="ann")
        assert (fact.valid_to, fact.ended_by) == (None, None)
        assert [(e.name, e.aliases) for e in store.entities(owner="ann")
                if "caroline" in e.aliases] == [("caroline", ("caroline",))]
        assert legacy.encode() not in json.dumps(store.cypher("MATCH (n) RETURN n"),
                                                 default=str).encode()
    assert "forget " + legacy in (path / "graphmem.keys").read_text()


def test_an_entity_with_a_plain_hash_id_moves_to_a_keyed_one(store: MemoryStore,
                                                             tmp_path: Path) -> None:
    """Entities made before ids were keyed (here: carried by an older export) keep their
    ids while their names stay; once a forget changes the name, the id moves, with its
    mentions and facts, since it would give the forgotten name back."""
    plain = new_entity_id("ann", "person", "melanie okafor")
    place = new_entity_id("ann", "place", "lisbon")
    fact_id = "fact_" + hashlib.blake2b(b"old", digest_size=8).hexdigest()

    def mention(entity: str, name: str, kind: str, aliases: list[str]) -> dict[str, Any]:
        return {"entity": {"id": entity, "name": name, "type": kind, "aliases": aliases},
                "role": "subject", "weight": 1.0, "surface": name.title()}

    melanie = mention(plain, "melanie okafor", "person", ["melanie", "melanie okafor"])
    lives = {"id": fact_id, "subject": plain, "predicate": "lives_in", "object": place,
             "valid_from": "2026-01-01T00:00:00Z", "recorded": "2026-01-01T00:00:00Z",
             "sources": ["urn:old:1", "urn:old:2"], "rule": "lives_in"}
    records = [
        {"ump": "0.1", "id": "urn:old:1", "kind": "semantic", "scope": {"owner": "ann"},
         "body": {"text": "Melanie Okafor lives in Lisbon"},
         "graph": {"mentions": [melanie, mention(place, "lisbon", "place", ["lisbon"])],
                   "facts": [lives]}},
        {"ump": "0.1", "id": "urn:old:2", "kind": "semantic", "scope": {"owner": "ann"},
         "body": {"text": "Melanie lives in Lisbon now"},
         "graph": {"mentions": [{**melanie, "surface": "Melanie"},
                                mention(place, "lisbon", "place", ["lisbon"])],
                   "facts": [lives]}},
    ]
    (tmp_path / "old.json").write_text(json.dumps(records))
    import_ump(store, tmp_path / "old.json")
    assert plain in json.dumps(ump_records(store))
    store.forget("urn:old:1", confirm=True)
    [moved] = [e for e in store.entities(owner="ann") if e.type == "person"]
    assert (moved.name, moved.aliases) == ("melanie", ("melanie",))
    assert moved.id != plain and re.fullmatch(r"ent_[0-9a-f]{16}", moved.id)
    assert [m.entity_id for m in store.mentions("urn:old:2", owner="ann")
            if m.entity_id != place] == [moved.id]
    [fact] = store.facts(owner="ann")
    assert (fact.subject, fact.sources) == (moved.id, ("urn:old:2",)) and fact.id != fact_id
    seen = _seen(store, tmp_path).decode("latin-1")
    assert plain not in seen and fact_id not in seen and "okafor" not in seen.lower()
    assert store.recall("Where does Melanie live?", owner="ann", k=3)
