"""The analyst's read side of a live store (stats, named queries, Cypher, backups) under
its scopes, on a real sidecar on 127.0.0.1: a token's named queries see its owner
alone (checked query by query against another owner's data), ad-hoc Cypher and backups
need all_owners and change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import graphmem
from graphmem import InvalidInputError, MemoryStore, Settings, named
from graphmem.client import AccessDeniedError, Client
from graphmem.named import libraries as named_libraries
from graphmem.sidecar import Tokens
from queries.library import NamedQuery, load_queries, run_named

from ._servers import running_sidecar
from .conftest import Clock

TOKENS = {
    "tok-live-alice-0123456": {"owner": "alice", "scopes": ["read", "write"]},
    "tok-live-bob-012345678": {"owner": "bob", "scopes": ["read", "write"]},
    "tok-live-admin-0123456": {"owner": "alice", "scopes": ["read", "write", "admin"]},
    "tok-live-analyst-01234": {"owner": "ops", "scopes": ["read", "all_owners"]},
    "tok-live-ops-012345678": {"owner": "ops", "scopes": ["read", "admin", "all_owners"]},
}
ALICE, BOB, ADMIN, ANALYST, OPS = TOKENS


def _owner_data(store: MemoryStore, owner: str, clock: Clock) -> dict[str, str]:
    """The same shapes for each owner: a supersede chain, references, co-occurrences, a
    session, a wiki page, an archived, a tombstoned and a hot memory, events."""
    mark = f"{owner}marker"
    ids = {}
    old = store.add(f"{mark} orchard runs PostgreSQL 15", owner=owner, kind="semantic",
                    subject=f"{mark} database", importance=0.1)
    new = store.supersede(old.id, f"{mark} orchard runs PostgreSQL 16", owner=owner)
    runbook = store.add(f"{mark} deploy orchard with make release", owner=owner,
                        kind="procedural", tags=["critical"])
    wiki = store.add(f"{mark} wiki page", owner=owner, subject="wiki/deploy", kind="note")
    store.link(runbook.id, new.id, owner=owner)
    store.link(runbook.id, wiki.id, source="wiki", owner=owner)
    store.link(new.id, runbook.id, kind="co_occurs", owner=owner)
    conversation = store.add_conversation(
        [f"I moved the {mark} greenhouse sensors to bed-07 today.",
         f"My {mark} sister Amara started as a nurse in Lagos."],
        session_id="s-shared", owner=owner)
    gone = store.add(f"{mark} an obsolete note", owner=owner)
    store.tombstone(gone.id, owner=owner)
    old_note = store.add(f"{mark} a stale episode", owner=owner, importance=0.05)
    store.archive(old_note.id, owner=owner)
    ids.update(old=old.id, new=new.id, runbook=runbook.id, wiki=wiki.id, gone=gone.id,
               archived=old_note.id, said=conversation.created_ids[0])
    return ids


Live = tuple[MemoryStore, str, dict[str, dict[str, str]]]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    clock = Clock(datetime(2026, 7, 15, 12, tzinfo=UTC))
    root = tmp_path_factory.mktemp("live")
    with MemoryStore(root / "db", embedder="hashing", clock=clock,
                     settings=Settings()) as store:
        ids = {owner: _owner_data(store, owner, clock) for owner in ("alice", "bob")}
        store.recall("orchard deploy", k=5)
        clock.advance(days=45)
        store.run_lifecycle(apply=True)
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url:
            yield store, url, ids


def _values(query: NamedQuery, ids: dict[str, str]) -> dict[str, Any]:
    """Parameters that would reach the other owner's memories if anything could."""
    wanted = {"id": ids["new"], "session": "s-shared", "since": "2000-01-01T00:00:00Z",
              "start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z",
              "limit": 500, "depth": 3, "include_tombstoned": True,
              "now": "2026-12-01T00:00:00Z", "age_days": 0, "importance": 1.0,
              "access_threshold": 0, "xref_threshold": 0,
              "name": "amara", "a": "amara", "b": "lagos"}
    return {p.name: wanted[p.name] for p in query.params if p.name in wanted}


def test_every_named_query_sees_only_the_tokens_owner(live: Live) -> None:
    store, url, ids = live
    queries = load_queries()
    assert all(q.owner_scoped for q in queries.values())  # a new one: add it here
    bob_ids = set(store.cypher("MATCH (m:Memory) WHERE m.owner = 'bob' RETURN m.id AS id",
                               as_dataframe=True)["id"])
    leaked_without_owner, answered = set(), set()
    with graphmem.connect(url, token=ALICE) as alice:
        for name, query in sorted(queries.items()):
            values = _values(query, ids["bob"])  # bob's ids, asked for by alice
            seen = json.dumps(alice.named_query(name, values))
            assert "bobmarker" not in seen and not any(i in seen for i in bob_ids), name
            if alice.named_query(name, _values(query, ids["alice"])):
                answered.add(name)
            everyone = json.dumps(run_named(store, name, _values(query, ids["bob"])),
                                  default=str)
            if "bobmarker" in everyone or any(i in everyone for i in bob_ids):
                leaked_without_owner.add(name)
    # the check above can fail: without the owner, these queries do show bob's memories
    assert len(leaked_without_owner) >= 12 and len(answered) >= 15


def test_named_queries_over_http(live: Live, monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    store, url, ids = live
    with graphmem.connect(url, token=ALICE) as alice, \
            graphmem.connect(url, token=ANALYST) as analyst:
        listed = {q["name"]: q for q in alice.named_queries()}
        assert set(listed) == set(load_queries())
        assert all("owner: STRING" not in " ".join(q["parameters"]) for q in listed.values())
        top = run_named(alice, "most_referenced", {"limit": 5})  # the library, over HTTP
        assert top and {r["id"] for r in top} <= set(ids["alice"].values())
        frame = run_named(alice, "kinds_by_status", as_dataframe=True)
        assert int(frame["memories"].sum()) == len(store.memories(owner="alice"))
        with pytest.raises(InvalidInputError, match="owner"):
            alice.named_query("hot_set", {"owner": "bob"})
        with pytest.raises(InvalidInputError, match="did you mean most_referenced"):
            alice.named_query("most_refrenced")
        with pytest.raises(InvalidInputError, match="parameter limit"):
            alice.named_query("most_referenced", {"limit": "ten"})
        every = analyst.named_query("kinds_by_status")  # all_owners: every owner
        assert sum(r["memories"] for r in every) == store.stats().memories
        bobs = analyst.named_query("kinds_by_status", {"owner": "bob"})
        assert sum(r["memories"] for r in bobs) == len(store.memories(owner="bob"))
        # a query that reads across owners, from a second registered library: all_owners only
        (tmp_path / "all_memories.cypher").write_text(
            "// name: all_memories\n// description: every memory\n"
            "MATCH (m:Memory) RETURN m.id AS id\n")
        monkeypatch.setattr(named, "libraries", lambda: [*named_libraries(), tmp_path])
        with pytest.raises(AccessDeniedError, match="all_owners"):
            alice.named_query("all_memories")
        assert len(analyst.named_query("all_memories")) == store.stats().memories


def test_stats_are_the_tokens_owners(live: Live) -> None:
    store, url, _ = live
    with graphmem.connect(url, token=BOB) as bob, \
            graphmem.connect(url, token=ANALYST) as analyst:
        mine = bob.stats()
        theirs = store.memories(owner="bob")
        assert mine.memories == len(theirs) < store.stats().memories
        assert mine.owners == 1 and mine.by_status == {
            s: sum(m.status.value == s for m in theirs) for s in mine.by_status}
        assert sum(mine.edges.values()) < sum(store.stats().edges.values())
        assert mine.versions == len(store.export(owner="bob")["versions"])
        assert analyst.stats() == store.stats()


def test_cypher_needs_all_owners_and_stays_read_only(live: Live) -> None:
    store, url, _ = live
    before = store.stats()
    count = "MATCH (m:Memory) RETURN count(*) AS n"
    with graphmem.connect(url, token=ALICE) as alice, \
            graphmem.connect(url, token=ADMIN) as admin, \
            graphmem.connect(url, token=ANALYST) as analyst, \
            graphmem.connect(url, token=OPS) as ops:
        for client in (alice, admin):
            with pytest.raises(AccessDeniedError, match="all_owners"):
                client.cypher(count)
        assert analyst.cypher(count) == [{"n": before.memories}]
        rows = analyst.cypher("MATCH (m:Memory) WHERE m.owner = $o RETURN m.created AS t "
                              "LIMIT 1", {"o": "bob"})
        assert rows[0]["t"].endswith("Z")  # timestamps as ISO 8601
        for attack in ("MATCH (m:Memory) SET m.text = 'x' RETURN count(*)",
                       "MATCH (m:Memory) DETACH DELETE m",
                       "COPY Memory TO '/tmp/leak.csv'",
                       "MATCH (m:Memory) RETURN m.id; MATCH (m:Memory) DELETE m"):
            with pytest.raises((InvalidInputError, graphmem.ReadOnlyStoreError)):
                ops.cypher(attack)
        with pytest.raises(graphmem.ReadOnlyStoreError):
            ops.cypher("MATCH (m:Memory) SET m.text = 'x'", write=True)
    assert store.stats() == before


def test_backup_needs_admin_and_all_owners(live: Live, tmp_path: Path) -> None:
    store, url, _ = live
    with graphmem.connect(url, token=ADMIN) as admin, \
            graphmem.connect(url, token=ANALYST) as analyst:
        for client in (admin, analyst):
            with pytest.raises(AccessDeniedError):
                client.backup(tmp_path / "refused")
            assert not (tmp_path / "refused").exists()
    with Client(url, token=OPS) as ops:
        info = ops.backup(tmp_path / "copy")
        assert info.memories == store.stats().memories and info.path == str(tmp_path / "copy")
        with pytest.raises(graphmem.StoreError, match="not empty"):
            ops.backup(tmp_path / "copy")
    restored = MemoryStore.restore_backup(tmp_path / "copy", tmp_path / "restored")
    assert restored.memories == info.memories
    with MemoryStore(tmp_path / "restored", read_only=True) as copy:
        assert {**copy.export(), "generated": None} == {**store.export(), "generated": None}
    leftovers = [p.name for p in Path(store.path).parent.iterdir()
                 if p.name.startswith(".graphmem-backup-")]
    assert leftovers == []  # the server's scratch copy is gone
