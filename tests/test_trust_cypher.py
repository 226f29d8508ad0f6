"""Read-only Cypher is read-only: attacks on ``store.cypher``, named queries and ``graphmem
query`` from several sides. A refused statement leaves the store (its export, its version
and event counts) and the filesystem exactly as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import (
    EventType,
    GraphmemError,
    InvalidInputError,
    MemoryStore,
    ReadOnlyStoreError,
)
from queries.library import load_queries, run_named

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _state(store: MemoryStore) -> str:
    stats = store.stats()
    return json.dumps({**store.export(), "generated": None,
                       "counts": [stats.versions, stats.events]}, sort_keys=True, default=str)


@pytest.fixture
def seeded(store: MemoryStore) -> MemoryStore:
    first = store.add("The orchard runs on PostgreSQL 16", subject="orchard db", owner="ann")
    store.add("Deploys go through fly.io", owner="ann")
    store.link(first.id, store.memories()[1].id)
    return store


#: Statements that must never run without write (each one ran against Kuzu 0.11.3).
ESCAPES = [
    "RETURN 1; COMMIT; MATCH (m:Memory) SET m.text = 'x'",
    "MATCH (m:Memory) SET m.text = 'x'",
    "MATCH (m:Memory) DELETE m",
    "MATCH (m:Memory) DETACH DELETE m",
    "MATCH (m:Memory) REMOVE m.subject",
    "CREATE (:Memory {id: 'planted', text: 'x'})",
    "MERGE (:Memory {id: 'planted'})",
    "COPY (MATCH (m:Memory) RETURN m.text) TO '{out}/leak.csv'",
    "EXPORT DATABASE '{out}/dump'",
    "IMPORT DATABASE '{out}/dump'",
    "LOAD FROM '/etc/passwd' (header=false) RETURN *",
    "LOAD FROM '{out}/x.csv' RETURN *",
    "ATTACH '{out}/other' AS other (dbtype kuzu)",
    "USE other",
    "DETACH other",
    "LOAD EXTENSION '{out}/evil.so'",
    "INSTALL httpfs",
    "CALL threads = 1",
    "CALL timeout = 1",
    "CALL checkpoint_threshold=0",
    "CALL current_setting('home_directory') RETURN *",
    "CALL page_rank('g') RETURN *",
    "CALL CREATE_FTS_INDEX('Memory', 'x', ['text'])",
    "BEGIN TRANSACTION",
    "COMMIT",
    "ROLLBACK",
    "CHECKPOINT",
    "DROP TABLE Memory",
    "ALTER TABLE Memory ADD x STRING",
    "CREATE NODE TABLE Evil(id STRING, PRIMARY KEY (id))",
    "CREATE MACRO evil(x) AS x",
]


@pytest.mark.parametrize("statement", ESCAPES)
def test_escapes_are_refused(seeded: MemoryStore, tmp_path: Path, statement: str) -> None:
    before = _state(seeded)
    with pytest.raises((InvalidInputError, ReadOnlyStoreError)) as caught:
        seeded.cypher(statement.replace("{out}", str(tmp_path)))
    assert str(caught.value).strip()
    assert _state(seeded) == before
    assert not any(p.name != "db" for p in tmp_path.iterdir())  # no file was written


def _dress(statement: str, case: str, pad: str, comment: bool) -> str:
    """The same statement in other clothes: case, whitespace, comments between words."""
    words = statement.split(" ")
    if case == "lower":
        words = [w.lower() if "'" not in w else w for w in words]
    elif case == "mixed":
        words = ["".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(w))
                 if "'" not in w else w for w in words]
    glue = f"{pad}/* x */{pad}" if comment else pad
    return glue.join(words)


@FAST
@given(statement=st.sampled_from(ESCAPES), case=st.sampled_from(["upper", "lower", "mixed"]),
       pad=st.sampled_from([" ", "\n", "\t ", "  \r\n "]), comment=st.booleans(),
       prefix=st.sampled_from(["", "MATCH (m:Memory) RETURN m.id; ", "RETURN 1;\n",
                               "// a comment\n", "/* ; */ "]))
def test_dressed_escapes_are_refused(seeded: MemoryStore, tmp_path_factory: pytest.TempPathFactory,
                                     statement: str, case: str, pad: str, comment: bool,
                                     prefix: str) -> None:
    out = tmp_path_factory.mktemp("out")
    query = prefix + _dress(statement.replace("{out}", str(out)), case, pad, comment)
    before = _state(seeded)
    with pytest.raises(GraphmemError):
        seeded.cypher(query)
    assert _state(seeded) == before
    assert list(out.iterdir()) == []


def test_reads_still_work(seeded: MemoryStore) -> None:
    rows = seeded.cypher("MATCH (m:Memory) WHERE m.text CONTAINS 'COPY; DELETE' "
                         "RETURN count(*) AS n // SET m.text = 'x'")
    assert rows == [{"n": 0}]
    assert seeded.cypher("CALL show_tables() RETURN count(*) AS n")[0]["n"] > 3
    assert seeded.cypher("MATCH (m:Memory) RETURN m.text AS t ORDER BY t;")[0]["t"] \
        == "Deploys go through fly.io"
    assert seeded.cypher("MATCH (v:Version) RETURN count(*) AS n") == [{"n": 2}]


def test_write_is_audited_and_cannot_touch_the_logs(seeded: MemoryStore) -> None:
    versions = seeded.stats().versions
    seeded.cypher("MATCH (m:Memory) WHERE m.text CONTAINS 'fly' SET m.importance = 0.9",
                  write=True, actor="analyst-ann")
    assert seeded.cypher("MATCH (m:Memory) WHERE m.importance = 0.9 RETURN count(*) AS n") \
        == [{"n": 1}]
    assert seeded.stats().versions == versions  # a write bypasses the history ...
    audit = seeded.events(event_type=EventType.CYPHER_WRITE)
    assert len(audit) == 1  # ... and is recorded
    assert audit[0].agent_id == "analyst-ann"
    assert "SET m.importance = 0.9" in audit[0].metadata["query"]
    before = _state(seeded)
    for statement in [
        "MATCH (v:Version) SET v.text = 'rewritten'",
        "MATCH (v:Version) DELETE v",
        "MATCH (e:LifecycleEvent) SET e.reason = 'x'",
        "MATCH (m:Memory)-[:HAS_VERSION]->(v) SET v.text = 'x'",
        "MATCH (n) SET n.text = 'x'",  # unlabelled: would reach every table
        "MATCH (m:Memory)-[r]->(v) DELETE r",
        "MATCH (m:Meta) SET m.value = '99'",
        "MATCH (c:Change) SET c.tag = 'x'",  # the ring other processes follow writes by
        "MATCH (c:`change`) SET c.ids = ['urn:x']",
        "MATCH (m:Memory|Version) SET m.text = 'x'",
        "MATCH (m:Memory) DETACH DELETE m",
        "COPY Memory FROM '/etc/passwd'",
        "MATCH (m:Memory) SET m.text = 'x'; COMMIT",
    ]:
        with pytest.raises(InvalidInputError):
            seeded.cypher(statement, write=True)
    assert _state(seeded) == before


def test_a_write_that_leaves_a_memory_unreadable_is_refused(seeded: MemoryStore) -> None:
    """Recall reads every memory: one row it could not read (a null in a list, a kind
    it does not know, a memory made without its times) broke it for every owner."""
    before = _state(seeded)
    ann = seeded.memories(owner="ann")[0].id
    for statement, params, said in [
        ("MATCH (m:Memory {id: $id}) SET m.tags = $t", {"t": ["a", None]}, "tags must hold"),
        ("MATCH (m:Memory {id: $id}) SET m.access_times = [timestamp('2024-01-01'), NULL]",
         {}, "access_times must hold"),
        ("MATCH (m:Memory {id: $id}) SET m.kind = 'bogus'", {}, "kind must be one of"),
        ("MATCH (m:Memory {id: $id}) SET m.importance = NULL", {}, "importance must be set"),
        ("CREATE (:Memory {id: 'partial', text: $id})", {}, "may not create memories"),
        ("MATCH (m:Memory {id: $id}) SET m.modified = timestamp('20000-01-01 00:00:00')", {},
         "modified must be a time in the years 1-9999"),
        ("MATCH (m:Memory {id: $id}) SET m.access_count = NULL", {}, "access_count must be"),
        ("MATCH (m:Memory {id: $id}) SET m.provenance = 'not json'", {},
         "provenance must be a JSON object"),
    ]:
        with pytest.raises(InvalidInputError, match=said):
            seeded.cypher(statement, {"id": ann, **params}, write=True)
    assert _state(seeded) == before  # nothing was changed
    assert seeded.recall("orchard", owner="ann", record_access=False)
    seeded.cypher("MATCH (m:Memory {id: $id}) SET m.tags = ['ok'], m.importance = 0.7",
                  {"id": ann}, write=True)
    assert seeded.get(ann).tags == ("ok",)


def test_a_write_that_leaves_a_vector_or_the_knowledge_graph_unreadable_is_refused(
        tmp_path: Path) -> None:
    """A vector that is not base64 of float32, a score that is not a number, an entity
    without a name, a fact without a predicate, a mention without a weight: each broke
    recall (or printed NaN into JSON) for every owner."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        alice = store.add("Alice works at Acme in Paris since 2020.", owner="ann")
        bob = store.add("Bob's manager is Carol. Carol works at Acme.", owner="ann")
        # the last second Python holds is a time graphmem reads: no write is refused for it
        store.add("Dee's lease has no end.", owner="bob",
                  valid_to=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
        store.link(alice.id, bob.id)
        store.supersede(bob.id, "Bob's manager is Dan now. Dan works at Acme.")
        assert store.facts(owner="ann") and store.entities(owner="ann")
        deep: dict[str, object] = {"a": 1}
        for _ in range(150):
            deep = {"a": deep}
        before = _state(store)
        entity = "MATCH (e:Entity) WITH e LIMIT 1 SET "
        fact = "MATCH (:Entity)-[f:FACT]->(:Entity) SET "
        for statement, said in [
            ("MATCH (m:Memory {id: $id}) SET m.vec = 'AAAA'", "vec must be base64"),
            ("MATCH (m:Memory {id: $id}) SET m.vec = 'not base64!'", "vec must be base64"),
            ("MATCH (m:Memory {id: $id}) SET m.vec = 'AADAfw=='", "vec must be base64"),  # NaN
            ("MATCH (m:Memory {id: $id}) SET m.importance = 0.0 / 0.0",
             "importance must be in \\[0, 1\\]"),
            ("MATCH (m:Memory {id: $id}) SET m.centrality = 1.0 / 0.0",
             "centrality must be a finite number"),
            (entity + "e.name = NULL", r"entity '.+' unreadable: its name must be set"),
            (entity + "e.merges = '{}'", "merges must be a JSON list"),
            (entity + "e.aliases = ['x', NULL]", "aliases must hold no null items"),
            (entity + "e.created = timestamp('0001-01-01') - interval('1 day')",
             "created must be a time in the years 1-9999"),
            ("CREATE (:Entity {id: 'bare'})", "entity 'bare' unreadable"),
            (fact + "f.predicate = NULL", r"fact '.+' unreadable: its predicate must be set"),
            ("MATCH (:Memory)-[r:SUPERSEDES]->(:Memory) SET r.at = timestamp('0001-01-01') - "
             "interval('1 day')", r"edge '.+ -> .+' unreadable: its at must be a time"),
            ("MATCH (:Memory)-[r:REFERENCES]->(:Memory) SET r.weight = NULL",
             "weight must be set"),
            (fact + "f.confidence = 0.0 / 0.0", "confidence must be a finite number"),
            # a fact's sources are JSON text on Kuzu (a list property made its
            # checkpoints slow): a list is cast to text that is no JSON, and JSON written
            # otherwise than graphmem writes it would hide the fact from its memories
            (fact + "f.sources = ['urn:x']", "sources must be a list of memory ids as JSON"),
            (fact + "f.sources = '[\"urn:x\", \"urn:y\"]'", "sources must be a list of"),
            (fact + "f.sources = '[null]'", "sources must be a list of"),
            (fact + "f.sources = ''", "sources must be a list of"),
            # a quote of an id written as itself: "x" would be found in 'z"x'
            (fact + "f.sources = '[\"z\\\\\"x\"]'", "sources must be a list of"),
            ("MATCH (:Memory)-[r:MENTIONS]->(:Entity) SET r.weight = NULL",
             r"mention '.+ -> .+' unreadable: its weight must be set"),
            (fact + "f.confidence = NULL", "confidence must be set"),
            (entity + "e.merges = '[1, 2]'", "merges must be a JSON list of objects"),
            ("CREATE (:Entity {id: 'half', name: 'Half', owner: 'ann', type: 'person'})",
             "entity 'half' unreadable: its aliases must be set"),
            ("MATCH (m:Memory {id: $id}) SET m.ump = $deep", "ump must nest at most"),
            ("MATCH (m:Memory {id: $id}) SET m.ump = '{\"a\": \"\\\\ud800\"}'",
             "ump holds U\\+D800"),
            ("MATCH (m:Memory {id: $id}) SET m.provenance = '{\"a\": NaN}'",
             "provenance must be JSON of finite numbers"),
            ("MATCH (m:Memory {id: $id}) SET m.payload_at = timestamp('20000-01-01 00:00:00')",
             "payload_at must be a time in the years 1-9999"),
            ("MATCH (m:Memory {id: $id}) SET m.prev_status = 'bogus'",
             "may not set prev_status"),
            ("MATCH (m:Memory {id: $id}) SET m.importance = 1e308", "importance must be in"),
            ("MATCH (m:Memory {id: $id}) SET m.useful_count = 9223372036854775807",
             "useful_count must be a count"),
            ("MATCH (m:Memory {id: $id}) SET m.owner = 'bob'",
             "owner must be the owner of the entities it mentions"),
            # an owner no call may name: its memories could be read by owner no more
            ("MATCH (m:Memory {id: $id}) SET m.owner = '   '", "owner is empty"),
            ("MATCH (m:Memory {id: $id}) SET m.owner = ''", "owner must not be empty"),
            # an entity's owner '' was taken for null here and for another owner by the
            # next add (refused) and by a backup's restore (refused)
            ("MATCH (e:Entity) SET e.owner = ''", "owner must not be empty"),
            ("MATCH (e:Entity) SET e.owner = '  '", "owner is empty"),
            (entity + "e.gone = true", "gone must stay unset while memories mention"),
            ("MATCH (m:Memory {id: $id}) SET m.vec = 'AACAPwAAAAA='",  # 2 values, not the model's
             "vec must hold .+ values"),
            ("MATCH (m:Memory {id: $id}) SET m.sentences = 'AAAA'", "sentences must be base64"),
            ("MATCH (m:Memory {id: $id}) SET m.sentences = 'AACAPwAAAAAAAAAA'",  # 3 values
             "sentences must be rows of"),
            ("MATCH (m:Memory {id: $id}), (x:Entity) WHERE x.owner = 'bob' "
             "CREATE (m:Memory)-[r:MENTIONS {role: 'mention', surface: 'Dee', weight: 1.0}]->"
             "(x:Entity)", "owner must be the owner of the entities it mentions"),
            ("CREATE (:Memory {id: 'whole', kind: 'episodic', status: 'active', importance: 0.5, "
             "original_importance: 0.5, confidence: 1.0, access_count: 0, useful_count: 0, "
             "ignored_count: 0, created: timestamp('2024-01-01'), "
             "modified: timestamp('2024-01-01')})", "may not create memories"),
        ]:
            with pytest.raises(InvalidInputError, match=said):
                params = {"id": alice.id, "deep": json.dumps(deep)}
                store.cypher(statement, {k: v for k, v in params.items() if f"${k}" in statement},
                             write=True)
        assert _state(store) == before  # nothing was changed
        assert store.recall("Who works at Acme?", owner="ann", record_access=False)
        store.cypher("MATCH (:Memory)-[r:MENTIONS]->(:Entity) SET r.weight = 0.5", write=True)
        store.cypher("CREATE (:Entity {id: 'zed', name: 'Zed', owner: 'ann', type: 'person', "
                     "aliases: ['zed'], merges: '[]'})", write=True)
        assert "zed" in {e.id for e in store.entities(owner="ann")}
        assert store.recall("Who works at Acme?", owner="ann", record_access=False)


def test_rows_graphmem_writes_itself_never_refuse_a_write(tmp_path: Path) -> None:
    """The check reads every row of a table a statement names: what graphmem itself
    leaves (entities and facts of no owner, an entity gone with its last mention, a
    forgotten memory's facts) must pass it, or every user write is refused."""
    with MemoryStore(tmp_path / "db", embedder="hashing") as store:
        store.add("Alice lives in Paris and works at Acme Corp")  # no owner
        carol = store.add("Carol likes Rome and works at Initech", owner="bob")
        dan = store.add("Dan moved to Oslo in 2020", owner="bob")
        store.update(carol.id, text="Nothing here at all", owner="bob")  # Carol goes
        store.forget(dan.id, owner="bob", confirm=True, purge=False)
        for statement in ("MATCH (e:Entity) WHERE e.name = 'alice' SET e.type = 'person'",
                          "MATCH (:Memory)-[r:MENTIONS]->(:Entity) SET r.weight = 0.9",
                          "MATCH (:Entity)-[f:FACT]->(:Entity) SET f.confidence = 0.8",
                          "MATCH (m:Memory) WHERE m.owner IS NULL SET m.importance = 0.6"):
            store.cypher(statement, write=True)
        assert {m.importance for m in store.memories() if m.owner is None} == {0.6}


def test_named_queries_pass_the_same_gate(seeded: MemoryStore) -> None:
    for name, query in load_queries().items():
        assert not any(word in query.text.upper().split() for word in ("SET", "DELETE",
                                                                       "CREATE", "MERGE")), name
    before = _state(seeded)
    with pytest.raises(InvalidInputError, match="at least 0"):
        run_named(seeded, "most_referenced", {"limit": -1})
    # values are bound, never pasted: a hostile value is just a string
    assert run_named(seeded, "memories_between", {
        "start": "2020-01-01T00:00:00Z", "end": "2030-01-01T00:00:00Z"}) is not None
    assert _state(seeded) == before


def _gm(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_cli_query_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("secret plans", owner="ann")
    leak = tmp_path / "leak.csv"
    secret = tmp_path / "secret.csv"
    secret.write_text("zq_secret_column,admin\n", encoding="utf-8")
    for statement in (f"COPY (MATCH (m:Memory) RETURN m.text) TO '{leak}'",
                      f"MATCH (`x\\`) LOAD FROM '{secret}' RETURN * // `",
                      "RETURN 1; COMMIT; MATCH (m:Memory) SET m.text = 'x'",
                      "MATCH (m:Memory) SET m.text = 'x'"):
        result = _gm(db, "query", statement)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert "zq_secret_column" not in result.stdout + result.stderr
    assert not leak.exists()
    written = _gm(db, "query", "--write", "MATCH (m:Memory) SET m.importance = 0.7")
    assert written.returncode == 0, written.stderr
    assert "bypassed the version history" in written.stderr
    with MemoryStore(db, read_only=True) as store:
        assert [m.text for m in store.memories()] == ["secret plans"]
        assert [e.event_type for e in store.events()] == [EventType.CYPHER_WRITE]
    negative = _gm(db, "query", "most_referenced", "--param", "limit=-5")
    assert negative.returncode == 1 and "at least 0" in negative.stderr


@pytest.mark.parametrize("statement", [
    "MATCH (m:Memory) SET m.text = 'Bob likes tea'",
    "MATCH (m:Memory) SET m.importance = 0.5, m.`subject` = 'tea'",
    "MATCH (m:Memory {id: $id}) SET m.status = 'forgotten'",
    "MERGE (m:Memory {id: $id}) ON MATCH SET m.superseded_by = []",
    "MATCH (m:Memory) WITH m SET m.importance = 0.1 WITH m SET m.context = 'x'",
    # the WITH of STARTS WITH / ENDS WITH is an operator's, not a clause's
    "MATCH (m:Memory {id: $id}) SET m.importance = CASE WHEN '' STARTS WITH '' THEN 0.9 "
    "END, m.text = 'PWNED'",
    "MERGE (m:Memory {id: $id}) ON MATCH SET m.hot = m.text ENDS WITH 'x', m.text = 'y'",
    "MATCH (m:Memory {id: $id}), (n:Memory {id: $id}) SET m.hot = m.text STARTS WITH 'a', "
    "n.status = 'forgotten'",
])
def test_a_write_may_not_set_what_graphmem_derives_or_its_lifecycle_owns(
        seeded: MemoryStore, statement: str) -> None:
    before = [(m.id, m.text, m.status, m.importance) for m in seeded.memories()]
    with pytest.raises(InvalidInputError, match="an ad-hoc write may not set "):
        seeded.cypher(statement, {"id": before[0][0]} if "$id" in statement else {},
                      write=True)
    assert [(m.id, m.text, m.status, m.importance) for m in seeded.memories()] == before


def test_a_write_may_read_the_text_to_set_what_it_may(seeded: MemoryStore) -> None:
    memory = seeded.memories()[0]
    seeded.cypher("MATCH (m:Memory {id: $id}) WHERE m.text <> '' SET m.tags = [m.subject], "
                  "m.importance = CASE WHEN size(m.text) > 3 THEN 0.9 ELSE 0.1 END",
                  {"id": memory.id}, write=True)
    assert seeded.get(memory.id).importance == 0.9  # type: ignore[union-attr]
