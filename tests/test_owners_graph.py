"""Owners stay apart in the knowledge graph. A UMP import cannot name another owner's
entity, fact or memory (the whole file is refused, naming the record and the field); the
engines never store a mention across owners nor give an entity id to another owner; and
every named query given an owner returns that owner's nodes alone, even in a graph
crossed by hand, through the Python API and through a real sidecar with owner tokens."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import graphmem
from graphmem import MemoryStore, RecordError
from graphmem._kuzu._rows import sources_text
from graphmem.sidecar import Tokens
from ingest.ump import import_ump, ump_records
from queries.library import load_queries, run_named

from ._servers import running_sidecar

BOB = "Caroline lives in Ibadan, says the bobmark note"
MALLORY = ["Caroline moved to Lagos, says the malmark note",
           "Caroline works at Zorbatech, says the malmark memo"]
TOKENS = {"tok-graph-bob-0123456789": {"owner": "bob", "scopes": ["read", "write"]},
          "tok-graph-mallory-012345": {"owner": "mallory", "scopes": ["read", "write"]}}
BOB_TOKEN, MALLORY_TOKEN = TOKENS


@pytest.fixture(params=["kuzu", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    where = request.getfixturevalue("pg_url") if request.param == "postgres" \
        else str(tmp_path / "db")
    with MemoryStore(where, embedder="hashing") as opened:
        yield opened


def _state(store: MemoryStore) -> str:
    return json.dumps([ump_records(store), sorted(map(repr, store.entities())),
                       sorted(map(repr, store.facts())), sorted(map(repr, store.mentions()))],
                      default=str, sort_keys=True)


def _record(memory_id: str, text: str, graph: dict[str, Any], owner: str = "mallory"
            ) -> dict[str, Any]:
    return {"ump": "0.1", "id": memory_id, "kind": "semantic", "body": {"text": text},
            "scope": {"owner": owner}, "graph": graph}


def _mention(entity_id: str, name: str, kind: str = "person") -> dict[str, Any]:
    return {"entity": {"id": entity_id, "name": name, "type": kind, "aliases": [name]},
            "role": "subject", "weight": 1.0, "surface": name.title()}


def _fact(fact_id: str, subject: str, obj: str, **more: Any) -> dict[str, Any]:
    return {"id": fact_id, "subject": subject, "predicate": "lives_in", "object": obj,
            "valid_from": "2026-01-01T00:00:00Z", "recorded": "2026-01-01T00:00:00Z",
            "sources": ["urn:mal:1"], "rule": "lives_in", **more}


Bob = dict[str, str]
#: name -> (the crafted records, given bob's ids; the field the refusal names)
CRAFTED: dict[str, tuple[Callable[[Bob], list[dict[str, Any]]], str]] = {
    "mention of bob's entity": (lambda b: [_record("urn:mal:1", "Caroline sings", {
        "mentions": [_mention(b["caroline"], "caroline")]})], "graph.mentions[0].entity.id"),
    "fact about bob's entity": (lambda b: [_record("urn:mal:1", "Caroline lives in Lagos", {
        "mentions": [_mention("ent_mal_lagos", "lagos", "place")],
        "facts": [_fact("fact_mal_1", b["caroline"], "ent_mal_lagos")]})],
        "graph.facts[0].subject"),
    "fact to bob's entity": (lambda b: [_record("urn:mal:1", "Ann lives in Ibadan", {
        "mentions": [_mention("ent_mal_ann", "ann")],
        "facts": [_fact("fact_mal_1", "ent_mal_ann", b["ibadan"])]})], "graph.facts[0].object"),
    "bob's fact id": (lambda b: [_record("urn:mal:1", "Ann lives in Lagos", {
        "mentions": [_mention("ent_mal_ann", "ann"), _mention("ent_mal_lagos", "lagos")],
        "facts": [_fact(b["fact"], "ent_mal_ann", "ent_mal_lagos")]})], "graph.facts[0].id"),
    "bob's memory as a source": (lambda b: [_record("urn:mal:1", "Ann lives in Lagos", {
        "mentions": [_mention("ent_mal_ann", "ann"), _mention("ent_mal_lagos", "lagos")],
        "facts": [_fact("fact_mal_1", "ent_mal_ann", "ent_mal_lagos",
                        sources=["urn:mal:1", b["memory"]])]})], "graph.facts[0].sources"),
    "ended by bob's fact": (lambda b: [_record("urn:mal:1", "Ann lives in Lagos", {
        "mentions": [_mention("ent_mal_ann", "ann"), _mention("ent_mal_lagos", "lagos")],
        "facts": [_fact("fact_mal_1", "ent_mal_ann", "ent_mal_lagos",
                        valid_to="2026-02-01T00:00:00Z", ended_by=b["fact"])]})],
        "graph.facts[0].ended_by"),
    "ended by bob's memory": (lambda b: [_record("urn:mal:1", "Ann lives in Lagos", {
        "mentions": [_mention("ent_mal_ann", "ann"), _mention("ent_mal_lagos", "lagos")],
        "facts": [_fact("fact_mal_1", "ent_mal_ann", "ent_mal_lagos",
                        valid_to="2026-02-01T00:00:00Z", ended_by=f"memory:{b['memory']}")]})],
        "graph.facts[0].ended_by"),
    "a memory the same file gives another owner, as a source": (lambda b: [
        _record("urn:bob:9", "Bob's own note", {}, owner="bob"),
        _record("urn:mal:1", "Ann lives in Lagos", {
            "mentions": [_mention("ent_mal_ann", "ann"), _mention("ent_mal_lagos", "lagos")],
            "facts": [_fact("fact_mal_1", "ent_mal_ann", "ent_mal_lagos",
                            sources=["urn:mal:1", "urn:bob:9"])]})], "graph.facts[0].sources"),
    "an entity the same file gives another owner": (lambda b: [
        _record("urn:mal:1", "Ann sings", {"mentions": [_mention("ent_shared", "ann")]}),
        _record("urn:bob:9", "Ann dances", {"mentions": [_mention("ent_shared", "ann")]},
                owner="bob")], "graph.mentions[0].entity.id"),
}


def _bob(store: MemoryStore) -> Bob:
    memory = store.add(BOB, owner="bob")
    names = {e.name: e.id for e in store.entities(owner="bob")}
    [fact] = store.facts(owner="bob")
    return {"memory": memory.id, "caroline": names["caroline"], "ibadan": names["ibadan"],
            "fact": fact.id}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_an_import_never_names_another_owners_graph(store: MemoryStore, tmp_path: Path,
                                                    name: str) -> None:
    bob = _bob(store)
    build, field = CRAFTED[name]
    records = [_record("urn:mal:0", "Mallory's first, harmless note", {}), *build(bob)]
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(records))
    before = _state(store)
    with pytest.raises(RecordError, match=field.replace("[", r"\[")) as refused:
        import_ump(store, path)
    assert f"record {len(records) - 1}" in str(refused.value)
    assert str(path) in str(refused.value)
    assert _state(store) == before  # all or nothing: not even the harmless first record
    assert [m.text for m in store.memories(owner="bob")] == [BOB]


def test_a_gone_entity_stays_its_owners(tmp_path: Path) -> None:
    """Kuzu keeps a gone entity's row until a purge: its id is still bob's."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        bob = _bob(store)
        store.forget(bob["memory"], confirm=True, purge=False)
        path = tmp_path / "crafted.json"
        path.write_text(json.dumps(CRAFTED["mention of bob's entity"][0](bob)))
        with pytest.raises(RecordError, match=r"graph\.mentions\[0\]\.entity\.id"):
            import_ump(store, path)


def test_an_import_of_ones_own_graph_still_works(store: MemoryStore, tmp_path: Path) -> None:
    bob = _bob(store)
    for text in MALLORY:
        store.add(text, owner="mallory")
    exported = ump_records(store, owner="mallory")
    assert exported and all("graph" in r for r in exported)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{**r, "id": r["id"] + ":copy"} for r in exported]))
    result = import_ump(store, path)
    assert len(result.created) == 2
    assert {e.id for e in store.entities(owner="mallory")}.isdisjoint(
        {bob["caroline"], bob["ibadan"]})
    assert [m.text for m in store.memories(owner="bob")] == [BOB]


# -- named queries in a graph crossed by hand ------------------------------------------
def _crossed(store: MemoryStore) -> dict[str, str]:
    """bob's and mallory's memories, then every kind of crossing a crafted file could
    make before imports were checked, written straight into the database."""
    bob = _bob(store)
    mallory = [store.add(text, owner="mallory").id for text in MALLORY]
    db = store._ctx.engine.db  # type: ignore[attr-defined]
    mine = {e.name: e.id for e in store.entities(owner="mallory")}
    for memory_id in mallory:  # mallory's memories mention bob's Caroline
        db.run_auto("MATCH (m:Memory {id: $m}), (e:Entity {id: $e}) "
                    "CREATE (m)-[:MENTIONS {role: 'subject', weight: 1.0, surface: 'Caroline'}]"
                    "->(e)", {"m": memory_id, "e": bob["caroline"]})
    # bob's Caroline -> mallory's Lagos as bob's fact, and one as mallory's about bob's
    for owner, subject, obj in (("bob", bob["caroline"], mine["lagos"]),
                                ("mallory", bob["caroline"], bob["ibadan"])):
        db.run_auto("MATCH (a:Entity {id: $a}), (b:Entity {id: $b}) CREATE (a)-[:FACT {id: "
                    "$id, owner: $o, predicate: 'lives_in', confidence: 1.0, sources: $m, "
                    "rule: 'crafted'}]->(b)", {"a": subject, "b": obj, "o": owner,
                                                "id": f"fact_crossed_{owner}",
                                                "m": sources_text([mallory[0]])})
    store.cypher("MATCH (n) RETURN count(n)")  # the store re-reads what changed
    return {**bob, "mallory": " ".join(mallory), "lagos": mine["lagos"],
            "zorbatech": mine["zorbatech"]}


def _values(name: str) -> dict[str, Any]:
    wanted = {"name": "caroline", "a": "caroline", "b": "lagos", "limit": 500, "type": "",
              "since": "2000-01-01T00:00:00Z", "start": "2000-01-01T00:00:00Z",
              "end": "2100-01-01T00:00:00Z", "now": "2100-01-01T00:00:00Z",
              "include_tombstoned": True, "depth": 3, "session": "x", "id": "x",
              "age_days": 0, "importance": 1.0, "access_threshold": 0, "xref_threshold": 0}
    return {p.name: wanted[p.name] for p in load_queries()[name].params if p.name in wanted}


def _mallorys(seen: str, ids: dict[str, str]) -> list[str]:
    marks = ["malmark", "lagos", "zorbatech", "fact_crossed", *ids["mallory"].split(),
             ids["lagos"], ids["zorbatech"]]
    return [m for m in marks if m in seen.lower()]


def test_every_named_query_returns_only_the_owners_nodes(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        ids = _crossed(store)
        leaked_without_owner = set()
        for name in sorted(load_queries()):
            seen = json.dumps(run_named(store, name, _values(name), owner="bob"), default=str)
            assert _mallorys(seen, ids) == [], name
            everyone = json.dumps(run_named(store, name, _values(name)), default=str)
            if _mallorys(everyone, ids):
                leaked_without_owner.add(name)
        # the check can fail: without an owner, the entity queries reach mallory's nodes
        assert {"entity_timeline", "entity_facts", "relations_between", "co_mentioned",
                "most_mentioned_entities"} <= leaked_without_owner
        # counts are nodes too: bob's Caroline is mentioned by his one memory
        profile = run_named(store, "entity_profile", {"name": "caroline"}, owner="bob")
        assert [(r["id"], r["mentions"]) for r in profile] == [(ids["caroline"], 1)]
        wide = run_named(store, "entity_profile", {"name": "caroline"})
        assert (ids["caroline"], 3) in [(r["id"], r["mentions"]) for r in wide]
        timeline = run_named(store, "entity_timeline", {"name": "caroline"}, owner="bob")
        assert [r["text"] for r in timeline] == [BOB]
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url, \
                graphmem.connect(url, token=BOB_TOKEN) as bob, \
                graphmem.connect(url, token=MALLORY_TOKEN) as mallory:
            for name in sorted(load_queries()):
                seen = json.dumps(bob.named_query(name, _values(name)), default=str)
                assert _mallorys(seen, ids) == [], name
            assert [r["text"] for r in bob.named_query("entity_timeline",
                                                       {"name": "caroline"})] == [BOB]
            theirs = json.dumps(mallory.named_query("entity_timeline", {"name": "caroline"}))
            assert "bobmark" not in theirs and "malmark" in theirs


def test_a_refused_import_leaves_bobs_queries_his_over_a_sidecar(tmp_path: Path) -> None:
    """The attack of the report, end to end: mallory's file names bob's entity; it is
    refused, and bob's token sees his memory alone."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        bob = _bob(store)
        path = tmp_path / "crafted.json"
        path.write_text(json.dumps([_record("urn:mal:1", "Caroline secretly malmark", {
            "mentions": [_mention(bob["caroline"], "caroline")]})]))
        with pytest.raises(RecordError, match="belongs to another owner"):
            import_ump(store, path)
        with running_sidecar(store, Tokens.from_mapping(TOKENS)) as url, \
                graphmem.connect(url, token=BOB_TOKEN) as client:
            rows = client.named_query("entity_timeline", {"name": "caroline"})
            assert [r["text"] for r in rows] == [BOB]
