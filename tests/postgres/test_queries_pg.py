"""Named queries on PostgreSQL. Every query of ``queries/`` has an SQL text beside its
Cypher, held to it here: the same parameters and constants in both texts, and the same
rows on both engines (the analyst corpus in Kuzu, and the same store restored into
PostgreSQL) for every query over a spread of parameters and owners. Given an owner, each
returns that owner's nodes alone in a graph crossed by hand; the CLI and a sidecar
answer them; ``store.sql`` reads and never writes."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import networkx as nx
import pytest

from graphmem import (
    InvalidInputError,
    MemoryStore,
    ReadOnlyStoreError,
    Settings,
    UnsupportedError,
)
from graphmem.sidecar import Tokens
from queries.library import cypher_name, load_queries, run_named
from tests._postgres import fresh_schema
from tests._servers import running_sidecar
from tests.conftest import Clock
from tests.postgres.test_faces_pg import gm, gm_here
from tests.test_queries import DEPLOY, INJECTION, NOW, build_analyst

NADIA = "did:key:z6MkwrenNadiaOkafor7h3kq9"
TOMAS = "did:key:z6MkwrenTomasRuiz2p8d4m"
#: Constants one dialect spells as a literal and the other as syntax: Kuzu's date part,
#: and the edge kinds that Cypher writes as relationship labels.
CYPHER_ONLY = {"microsecond"}
SQL_ONLY = {"references", "co_occurs", "supersedes"}


@pytest.fixture(scope="module")
def locations(tmp_path_factory: pytest.TempPathFactory, pg_server: str
              ) -> Iterator[dict[str, str]]:
    """The analyst corpus (plus a chain of co-occurrences, for the walks) in Kuzu, and
    the same store restored from its backup into PostgreSQL: the same ids, versions,
    events, edges and knowledge graph on both."""
    root = tmp_path_factory.mktemp("engines")
    db = build_analyst(root)
    with MemoryStore(db, embedder="hashing", clock=Clock(NOW), settings=Settings()) as store:
        chain = [m.id for m in store.memories(owner=NADIA)
                 if m.status.value == "active" and not m.superseded_by][:5]
        for a, b in itertools.pairwise(chain):
            store.link(a, b, kind="co_occurs")
        store.backup(root / "backup")
    with fresh_schema(pg_server) as url:
        MemoryStore.restore_backup(root / "backup", url)
        yield {"kuzu": str(db), "postgres": url}


@pytest.fixture(scope="module")
def engines(locations: dict[str, str]) -> Iterator[dict[str, MemoryStore]]:
    with MemoryStore(locations["kuzu"], read_only=True, clock=Clock(NOW)) as kuzu, \
            MemoryStore(locations["postgres"], read_only=True, clock=Clock(NOW)) as postgres:
        yield {"kuzu": kuzu, "postgres": postgres}


@pytest.fixture(scope="module")
def cases(engines: dict[str, MemoryStore]) -> dict[str, list[dict[str, Any]]]:
    """Parameters for every named query: defaults, limits, filters, walks of each depth,
    dates around the archive rule's, and values that match nothing."""
    graph = engines["kuzu"].to_networkx(edge_kinds=["co_occurs", "supersedes"])
    chained = min(u for u, _, d in graph.edges(data=True) if d["kind"] == "supersedes")
    pairs = nx.Graph((u, v) for u, v, d in graph.edges(data=True) if d["kind"] == "co_occurs")
    # the end of the longest chain: a walk from it goes past the 3 hops the queries allow
    reach = {n: max(nx.single_source_shortest_path_length(pairs, n).values()) for n in pairs}
    walk = min(pairs, key=lambda n: (-reach[n], n))
    assert reach[walk] >= 4
    everything = {"start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}
    return {
        "archive_candidates": [{}, {"now": "2026-09-01T00:00:00Z"},
                               {"now": "2027-06-01T00:00:00Z"},
                               {"now": "2100-01-01T00:00:00Z", "age_days": 0,
                                "importance": 1.0, "min_drop": 0.0}],
        "central_memories": [{"limit": 3}, {"limit": 500, "include_tombstoned": True}],
        "co_mentioned": [{"name": "Amara"}, {"name": "nadia", "limit": 500},
                         {"name": INJECTION}],
        "co_occurrence_neighbourhood": [{"id": walk, "depth": d} for d in (0, 1, 2, 3, 9)],
        "entity_facts": [{"name": "amara"}, {"name": "Nadia"}],
        "entity_profile": [{"name": "Amara"}, {"name": "nadia"}, {"name": "orchard"}],
        "entity_timeline": [{"name": "Nadia"}, {"name": "orchard"}],
        "hot_set": [{}],
        "kinds_by_status": [{}],
        "lifecycle_events": [{"since": "2026-07-15T00:00:00Z", "event_type": "hot"},
                             {"since": "2000-01-01T00:00:00Z"}],
        "memories_between": [{"start": "2026-05-01T00:00:00Z",
                              "end": "2026-05-02T00:00:00Z"}, everything],
        "most_mentioned_entities": [{"limit": 5}, {"type": "person", "limit": 50},
                                    {"limit": 500}],
        "most_referenced": [{"limit": 3}, {"limit": 500},
                            {"limit": 3, "include_tombstoned": True}, {"kind": "semantic"}],
        "orphans": [{}],
        "promotion_candidates": [{}, {"access_threshold": 0, "xref_threshold": 0}],
        "recent_memories": [{"limit": 2}, {"limit": 500}],
        "relations_between": [{"a": "Amara", "b": "Nadia"}, {"a": "nadia", "b": "lagos"}],
        "session_timeline": [{"session": "s-greenhouse"}, {"session": INJECTION}],
        "strongest_co_occurrences": [{"limit": 1}, {"limit": 500}],
        "supersede_chain": [{"id": chained}, {"id": INJECTION}],
        "top_entities": [{"limit": 5}, {"limit": 500}],
        "version_history": [{"id": DEPLOY}, {"id": chained}],
        "wiki_pointers": [{}],
    }


def _same(a: Any, b: Any) -> bool:
    """Equal values, floats to 1e-12 (the archive rule's decay is computed apart)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(type(a) is type(b) and a == b)


def _texts(name: str) -> tuple[str, str]:
    """A query's Cypher and SQL statements without their comment lines."""
    query = load_queries()[name]
    assert query.sql is not None, f"{name} has no SQL text"
    return ("\n".join(x for x in query.text.splitlines() if not x.strip().startswith("//")),
            "\n".join(x for x in query.sql.splitlines() if not x.strip().startswith("--")))


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_both_texts_take_the_same_parameters_and_constants(name: str) -> None:
    cypher, sql = _texts(name)
    declared = {cypher_name(p.name) for p in load_queries()[name].params}
    assert set(re.findall(r"\$([A-Za-z_]\w*)", cypher)) == declared
    assert set(re.findall(r"%\((\w+)\)s", sql)) == declared
    assert "%" not in re.sub(r"%\(\w+\)s", "", sql)  # no placeholder psycopg would misread
    # word lists, statuses, kinds, patterns: a constant changed in one text only fails here
    assert set(re.findall(r'"([^"]*)"', cypher)) - CYPHER_ONLY \
        == set(re.findall(r"'([^']*)'", sql)) - SQL_ONLY


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_both_engines_answer_the_same_rows(engines: dict[str, MemoryStore],
                                           cases: dict[str, list[dict[str, Any]]],
                                           name: str) -> None:
    kuzu, postgres = engines["kuzu"], engines["postgres"]
    assert (kuzu.query_language, postgres.query_language) == ("cypher", "sql")
    assert set(cases) == set(load_queries())
    answered = 0
    for values in cases[name]:
        for owner in (None, "", NADIA, TOMAS):
            given = values if owner is None else {**values, "owner": owner}
            expected = run_named(kuzu, name, given)
            got = run_named(postgres, name, given)
            assert _same(got, expected), (name, given, got[:3], expected[:3])
            answered += bool(expected)
        frames = [run_named(s, name, values, as_dataframe=True) for s in (kuzu, postgres)]
        assert list(frames[0].columns) == list(frames[1].columns)
        assert [str(t) for t in frames[0].dtypes] == [str(t) for t in frames[1].dtypes] \
            or frames[0].empty
    assert answered, f"{name} answered nothing: the comparison would prove nothing"


def test_the_faces_answer_the_same_rows_on_both_engines(
        locations: dict[str, str], engines: dict[str, MemoryStore],
        cases: dict[str, list[dict[str, Any]]]) -> None:
    """Every named query through a sidecar and its client, and through ``graphmem
    query`` on the PostgreSQL store (the first in a process of its own, the others in
    this one: a process start costs more than the query), answers what it answers on
    Kuzu."""
    import graphmem

    with running_sidecar(engines["kuzu"]) as on_kuzu, \
            running_sidecar(engines["postgres"]) as on_postgres, \
            graphmem.connect(on_kuzu) as kuzu, graphmem.connect(on_postgres) as postgres:
        for index, name in enumerate(sorted(load_queries())):
            # the first parameters that find rows: an empty answer would prove nothing
            values = next(v for v in cases[name] if run_named(engines["kuzu"], name, v))
            expected = kuzu.named_query(name, values)
            assert _same(postgres.named_query(name, values), expected), name
            # the CLI prints rows as run_named gives them (timestamps naive UTC)
            params = [x for k, v in values.items() for x in (
                "--param", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]
            printed = (gm if index == 0 else gm_here)(
                locations["postgres"], "--now", NOW.isoformat(), "--json", "query", name,
                *params)
            assert printed.returncode == 0, (name, printed.stderr)
            wanted = json.loads(json.dumps(run_named(engines["kuzu"], name, values),
                                           default=str))
            assert _same(json.loads(printed.stdout), wanted), name


@pytest.mark.parametrize("day", [NOW, NOW + timedelta(days=48), NOW + timedelta(days=321)])
@pytest.mark.parametrize("engine", ["kuzu", "postgres"])
def test_archive_candidates_is_the_lifecycles_rule(locations: dict[str, str], engine: str,
                                                   day: datetime) -> None:
    """At three dates (the last where decay has gone deep), the query lists exactly the
    memories the archivist's own rule would archive, each once."""
    with MemoryStore(locations[engine], read_only=True, clock=Clock(day)) as store:
        archived = {e.memory_id for e in store.batch_evaluate()
                    if e.recommended_action == "archive"}
        listed = [r["id"] for r in run_named(store, "archive_candidates")]
    assert archived and len(listed) == len(set(listed))
    assert set(listed) == archived


# -- owners: every node a query returns is the owner's -------------------------------
BOB = "Caroline lives in Ibadan, says the bobmark note"
MALLORY = ["Caroline moved to Lagos, says the malmark note",
           "Caroline works at Zorbatech, says the malmark memo"]


def _crossed(store: MemoryStore, url: str) -> dict[str, Any]:
    """bob's memory and mallory's two, then every crossing a crafted import or a bug
    could make, written straight into the tables: mallory's memories mention bob's
    entity, facts join their entities, and edges of each kind join their memories."""
    import psycopg

    bob = store.add(BOB, owner="bob")
    mallory = [store.add(text, owner="mallory").id for text in MALLORY]
    theirs = {e.name: e.id for e in store.entities(owner="bob")}
    mine = {e.name: e.id for e in store.entities(owner="mallory")}
    with psycopg.connect(url, autocommit=True) as conn:
        for memory_id in mallory:
            conn.execute("INSERT INTO mentions (memory_id, entity_id, role, weight, surface) "
                         "VALUES (%s, %s, 'subject', 1.0, 'Caroline')",
                         (memory_id, theirs["caroline"]))
        for owner, subject, obj in (("bob", theirs["caroline"], mine["lagos"]),
                                    ("mallory", theirs["caroline"], theirs["ibadan"])):
            conn.execute("INSERT INTO facts (id, owner, subject, predicate, object, "
                         "confidence, sources, rule) VALUES (%s, %s, %s, 'lives_in', %s, "
                         "1.0, %s, 'crafted')",
                         (f"fact_crossed_{owner}", owner, subject, obj, [mallory[0]]))
        for kind, src, dst, source in (("references", mallory[0], bob.id, "wiki"),
                                       ("co_occurs", bob.id, mallory[0], "crafted"),
                                       ("supersedes", mallory[1], bob.id, None)):
            conn.execute("INSERT INTO edges (kind, src, dst, owner, source) "
                         "VALUES (%s, %s, %s, 'mallory', %s)", (kind, src, dst, source))
    return {"bob": bob.id, "caroline": theirs["caroline"], "marks": [
        "malmark", "lagos", "zorbatech", "fact_crossed", *mallory, mine["lagos"],
        mine["zorbatech"]]}


def _values(name: str, bob: str) -> dict[str, Any]:
    wanted = {"name": "caroline", "a": "caroline", "b": "lagos", "limit": 500, "type": "",
              "since": "2000-01-01T00:00:00Z", "start": "2000-01-01T00:00:00Z",
              "end": "2100-01-01T00:00:00Z", "now": "2100-01-01T00:00:00Z",
              "include_tombstoned": True, "depth": 3, "session": "x", "id": bob,
              "age_days": 0, "importance": 1.0, "access_threshold": 0, "xref_threshold": 0}
    return {p.name: wanted[p.name] for p in load_queries()[name].params if p.name in wanted}


def test_every_named_query_returns_only_the_owners_nodes_on_postgresql(pg_url: str) -> None:
    with MemoryStore(pg_url, embedder="hashing") as store:
        crossed = _crossed(store, pg_url)

        def leaks(rows: list[dict[str, Any]]) -> list[str]:
            seen = json.dumps(rows, default=str).lower()
            return [mark for mark in crossed["marks"] if mark.lower() in seen]

        reached = set()
        for name in sorted(load_queries()):
            values = _values(name, crossed["bob"])
            assert leaks(run_named(store, name, values, owner="bob")) == [], name
            if leaks(run_named(store, name, values)):
                reached.add(name)
        # the check can fail: without an owner, the queries reach mallory's nodes
        assert {"entity_timeline", "entity_facts", "relations_between", "co_mentioned",
                "most_mentioned_entities", "supersede_chain", "co_occurrence_neighbourhood",
                "strongest_co_occurrences", "wiki_pointers"} <= reached
        # counts are nodes too: mallory's mentions and references are not bob's
        profile = run_named(store, "entity_profile", {"name": "caroline"}, owner="bob")
        assert [(r["id"], r["mentions"]) for r in profile] == [(crossed["caroline"], 1)]
        wide = run_named(store, "entity_profile", {"name": "caroline"})
        assert (crossed["caroline"], 3) in [(r["id"], r["mentions"]) for r in wide]
        referenced = {r["id"]: r["referenced_by"] for r in run_named(
            store, "most_referenced", {"limit": 500})}
        assert referenced == {crossed["bob"]: 1}
        assert run_named(store, "most_referenced", {"limit": 500}, owner="bob") == []
        with running_sidecar(store, Tokens.from_mapping(
                {"tok-graph-bob-0123456789": {"owner": "bob", "scopes": ["read"]}})) as url:
            for name in sorted(load_queries()):
                answer = httpx.post(f"{url}/v1/queries/{name}", json={
                    "params": _values(name, crossed["bob"])},
                    headers={"Authorization": "Bearer tok-graph-bob-0123456789"})
                assert answer.status_code == 200, answer.text
                assert leaks(answer.json()["rows"]) == [], name


# -- store.sql ----------------------------------------------------------------------
def test_sql_reads_the_tables_and_never_writes(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(cypher_timeout_s=0.5)
    with MemoryStore(pg_url, embedder="hashing", settings=settings) as store:
        first = store.add("one note at 100% ready", kind="note")
        second = store.add("another note", kind="note")
        store.link(first.id, second.id)
        rows = store.sql("SELECT id, text FROM memories WHERE kind = %(kind)s AND text LIKE "
                         "'%%100%%' ORDER BY id", {"kind": "note"})
        assert rows == [{"id": first.id, "text": "one note at 100% ready"}]
        frame = store.sql("SELECT kind, count(*) AS n FROM memories GROUP BY kind",
                          as_dataframe=True)
        assert frame.to_dict("records") == [{"kind": "note", "n": 2}]
        assert store.sql("SELECT id FROM memories WHERE text = %(t)s", {"t": INJECTION}) == []
        before = store.stats()
        with pytest.raises(InvalidInputError, match="one read-only statement"):
            store.sql("DELETE FROM edges")
        with pytest.raises(ReadOnlyStoreError, match="read-only"):  # a writing function
            store.sql("SELECT nextval(pg_get_serial_sequence('changes', 'seq'))")
        # one statement: a COMMIT cannot end the read-only transaction to run the rest
        with pytest.raises(InvalidInputError, match="SQL error"):
            store.sql("COMMIT; DELETE FROM edges")
        with pytest.raises(InvalidInputError, match="parameters do not match"):
            store.sql("SELECT %(x)s AS x")
        with pytest.raises(InvalidInputError, match="SQL error"):
            store.sql("SELEC 1")
        started = datetime.now(UTC)
        with pytest.raises(InvalidInputError, match="GRAPHMEM_CYPHER_TIMEOUT_S"):
            store.sql("SELECT pg_sleep(30)")
        assert datetime.now(UTC) - started < timedelta(seconds=3)
        # a SET inside it ends with it: the pooled connection keeps the store's schema
        for _ in range(6):
            assert store.sql("SELECT set_config('search_path', 'public', false) AS p")
            assert store.get(first.id).text == first.text
        assert store.stats() == before
        assert [x.other for x in store.links(first.id)] == [second.id]
        with pytest.raises(UnsupportedError, match="ad-hoc Cypher needs the Kuzu engine"):
            store.cypher("MATCH (m:Memory) RETURN count(m)")
    with MemoryStore(tmp_path / "db", embedder="hashing") as kuzu, \
            pytest.raises(UnsupportedError, match="SQL needs the PostgreSQL engine"):
        kuzu.sql("SELECT 1")
