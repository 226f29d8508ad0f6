"""The walls behind the Cypher guard, and the bounds in front of Kuzu's parser.

Wall two (``_kuzu/_plan``) is attacked as if the guard had been fooled: dangerous
statements go straight to the store's database with only the plan check in the way.
The bounds are attacked with the statements that crash or stall Kuzu 0.11.3's parser
(each measured in a child process: 12,000 NOTs, 3,000 nested parentheses and 1,000
nested calls crash it; 300 nested lists take 16 s of CPU), through the Python API and
through a real sidecar, which must answer the next request.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graphmem import GraphmemError, InvalidInputError, MemoryStore
from graphmem._kuzu import CYPHER_LIMITS
from graphmem._kuzu._guard import Limits, check_bounds
from graphmem._kuzu._lexer import lex
from graphmem._kuzu._plan import PlanCheck
from queries.library import load_queries

from ._servers import serve_process

MARKER = "zq_secret_column"


def _state(store: MemoryStore) -> str:
    stats = store.stats()
    return json.dumps({**store.export(), "generated": None,
                       "counts": [stats.versions, stats.events]}, sort_keys=True, default=str)


@pytest.fixture
def seeded(store: MemoryStore, tmp_path: Path) -> MemoryStore:
    store.add("The orchard runs on PostgreSQL 16", owner="ann")
    store.add("Deploys go through fly.io", owner="ann")
    (tmp_path / "secret.csv").write_text(f"{MARKER},tok_admin\nrow,2\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    return store


def _past_the_guard(store: MemoryStore, query: str, *, write: bool) -> None:
    """Run ``query`` as if the guard had passed it: wall two and the transaction only."""
    check = PlanCheck(query, write)
    db = store._ctx.engine.db  # type: ignore[attr-defined]
    if write:
        with db.write() as tx:
            tx.run_user(query, {}, check)
    else:
        db.read_only_query(query, {}, check)


READS = [
    "LOAD FROM '{dir}/secret.csv' RETURN *",
    "LOAD FROM '{dir}/secret.csv' (header=true) RETURN *",
    "MATCH (m:Memory) LOAD FROM '{dir}/secret.csv' RETURN m.id",
    "COPY (MATCH (m:Memory) RETURN m.text) TO '{dir}/out/leak.csv'",
    "COPY Meta FROM '{dir}/secret.csv'",
    "CALL threads = 1",
    "CALL storage_info('Memory') RETURN *",
    "ATTACH '{dir}/other' AS other (dbtype kuzu)",
    "BEGIN TRANSACTION",
    "CHECKPOINT",
    "CREATE NODE TABLE Evil(id STRING, PRIMARY KEY (id))",
    "DROP TABLE Stage",
    "EXPORT DATABASE '{dir}/out/dump'",
    "IMPORT DATABASE '{dir}/out'",
    "INSTALL httpfs",
    "LOAD EXTENSION '{dir}/secret.csv'",
    "MATCH (m:Memory) SET m.text = 'x'",
    "MATCH (m:Memory) DETACH DELETE m",
    "RETURN 1; MATCH (m:Memory) SET m.text = 'x'",
    "RETURN 1; COPY (MATCH (m:Memory) RETURN m.text) TO '{dir}/out/leak.csv'",
]
WRITES = [
    "MATCH (v:`Version`) SET v.reason = 'x'",
    "MATCH (m:Memory) SET m.importance = 0.1 WITH m MATCH (e:LifecycleEvent) SET e.reason = 'x'",
    "MATCH (n) SET n.text = 'x'",
    "MATCH (m:Memory)-[r]->(v) SET m.importance = 0.1",
    "MATCH (a:Memory)-[*1..2]->(b) SET b.text = 'x'",
    "MATCH (m:Memory) DETACH DELETE m",
    "MATCH (m:Memory)-[r:HAS_VERSION]->(v) DELETE r",
    "CREATE (:Stage {id: 'x'})",
    "MERGE (k:META {key: 'schema_version'}) SET k.value = '1'",
    "LOAD FROM '{dir}/secret.csv' RETURN *",
    "COPY (MATCH (m:Memory) RETURN m.text) TO '{dir}/out/leak.csv'",
    "MATCH (m:Memory) SET m.importance = 0.1; MATCH (m:Memory) SET m.text = 'x'",
]


@pytest.mark.parametrize(("statement", "write"), [(s, False) for s in READS]
                         + [(s, True) for s in WRITES])
def test_the_plan_wall_stops_what_a_fooled_guard_would_pass(
        seeded: MemoryStore, tmp_path: Path, statement: str, write: bool) -> None:
    before = _state(seeded)
    with pytest.raises(GraphmemError) as caught:
        _past_the_guard(seeded, statement.replace("{dir}", str(tmp_path)), write=write)
    assert MARKER not in str(caught.value) and "tok_admin" not in str(caught.value)
    assert _state(seeded) == before
    assert list((tmp_path / "out").iterdir()) == []  # nothing written, no directory made
    assert seeded.cypher("MATCH (m:Memory) RETURN count(*) AS n") == [{"n": 2}]


def test_the_plan_wall_lets_reads_and_data_writes_through(seeded: MemoryStore) -> None:
    sample = {"STRING": "x", "TIMESTAMP": "2026-01-01T00:00:00Z"}
    for query in load_queries().values():  # every operator they plan is allowed
        params = query.bind({p.name: sample[p.type] for p in query.params if p.required},
                            seeded)
        seeded._ctx.engine.db.read_only_query(  # type: ignore[attr-defined]
            query.text, params, PlanCheck(query.text, False))
    _past_the_guard(seeded, "MATCH (m:Memory) WHERE m.text CONTAINS 'fly' "
                            "SET m.importance = 0.9", write=True)
    _past_the_guard(seeded, "MATCH (a:Memory), (b:Memory) WHERE a.id < b.id "
                            "MERGE (a)-[:REFERENCES {weight: 1.0}]->(b)", write=True)
    assert seeded.cypher("MATCH (:Memory)-[r:REFERENCES]->(:Memory) RETURN count(r) AS n") \
        == [{"n": 1}]


def test_a_kept_verdict_holds_only_for_its_own_text_and_mode(seeded: MemoryStore,
                                                            tmp_path: Path) -> None:
    """A plan that passed is not checked again for the same text, mode and parameter
    types; any other statement is."""
    _past_the_guard(seeded, "MATCH (n) RETURN count(*) AS c", write=False)
    with pytest.raises(InvalidInputError, match="reads meta"):  # all tables, in a write
        _past_the_guard(seeded, "MATCH (n) RETURN count(*) AS c", write=True)
    with pytest.raises(InvalidInputError):
        _past_the_guard(seeded, f"COPY (MATCH (n) RETURN count(*) AS c) TO "
                                f"'{tmp_path}/out/leak.csv'", write=False)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_refusal_never_tells_whether_a_file_exists(seeded: MemoryStore,
                                                     tmp_path: Path) -> None:
    """Binding LOAD FROM reads the file: neither its content nor its existence may show."""
    messages = set()
    for path in (tmp_path / "secret.csv", tmp_path / "missing.csv", tmp_path):
        for tail in ("RETURN *", f"RETURN {MARKER}", "RETURN nosuch", "(header=true) RETURN x"):
            with pytest.raises(InvalidInputError) as caught:
                _past_the_guard(seeded, f"LOAD FROM '{path}' {tail}", write=False)
            messages.add(str(caught.value))
    assert len(messages) == 1 and MARKER not in messages.pop()
    # a statement that mentions no file keeps Kuzu's own message
    with pytest.raises(InvalidInputError, match="Cannot find property nosuch"):
        seeded.cypher("MATCH (m:Memory) RETURN m.nosuch")


# -- bounds ----------------------------------------------------------------------------
def _nested(opener: str, closer: str, depth: int, core: str = "1") -> str:
    return "RETURN " + opener * depth + core + closer * depth + " AS x"


#: Statements that crash or stall Kuzu 0.11.3's parser (measured in a subprocess).
CRASHERS = {
    "20,000 NOTs (segfault)": "RETURN " + "NOT " * 20_000 + "true",
    "3,000 nested parentheses (segfault)": _nested("(", ")", 3000),
    "1,000 nested calls (segfault)": _nested("abs(", ")", 1000),
    "300 nested lists (16 s)": _nested("[", "]", 300),
    "100 nested maps (0.7 s)": _nested("{a: ", "}", 100),
    "20 nested CASE (4.6 s)": _nested("CASE WHEN true THEN ", " ELSE 0 END", 20),
    "10,000 ^ in a row (segfault)": "RETURN " + " ^ ".join(["1"] * 10_000),
    "10,000 list indexes (segfault)": "RETURN [1]" + "[1]" * 10_000,
    "300 nested COUNT subqueries (7 s)": "MATCH (m0:Memory) WHERE " + "".join(
        f"COUNT {{ MATCH (m{i + 1}:Memory) WHERE " for i in range(300)) + "true"
        + " } > 0" * 300 + " RETURN count(*)",
    "3,000 + in a row (1 s)": "RETURN " + " + ".join(["1"] * 3000),
}


#: Runs in a child process, so that a crash fails the test instead of ending the run.
CHILD = """
import json, sys, time
from graphmem import InvalidInputError, MemoryStore
from tests.test_trust_cypher_walls import CRASHERS
out = {}
with MemoryStore(sys.argv[1], embedder="hashing") as store:
    store.add("a memory", owner="ann")
    for name, statement in CRASHERS.items():
        started = time.perf_counter()
        try:
            store.cypher(statement)
            out[name] = "ran"
        except InvalidInputError as exc:
            out[name] = [exc.field, str(exc), time.perf_counter() - started]
    out["after"] = store.cypher("MATCH (m:Memory) RETURN count(*) AS n")
print(json.dumps(out))
"""


def test_statements_that_crash_kuzu_are_refused_quickly(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "db")],
                         capture_output=True, text=True, timeout=300, check=False,
                         cwd=Path(__file__).resolve().parents[1])
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = json.loads(ran.stdout)
    for name in CRASHERS:
        field, message, seconds = out[name]
        assert field == "query" and ("the most is" in message or "more than" in message), name
        assert seconds < 1.0, name
    assert out["after"] == [{"n": 1}]


#: Statements Kuzu 0.11.3 crashes on while binding them (an untyped NULL given to one of
#: some forty functions: kuzudb/kuzu#5959), with their parameters.
NULL_CRASHERS: dict[str, tuple[str, dict[str, object]]] = {
    "label(null)": ("RETURN label(null) AS l", {}),
    "keys of a null parameter": ("RETURN keys($x) AS k", {"x": None}),
    "id of a null alias": ("WITH null AS x RETURN id(x) AS i", {}),
    "properties(null, ...)": ("RETURN properties(NULL, 'a') AS p", {}),
    "list_contains(null, ...)": ("RETURN list_contains(null, 1) AS c", {}),
    "struct_extract of a null parameter": ("RETURN struct_extract($s, 'a') AS v",
                                            {"s": None}),
    # a null nested deeper than the parameter's check looked (8 levels)
    "keys of a null 10 levels down": ("RETURN keys($x" + ".a" * 10 + ") AS k",
                                      {"x": functools.reduce(lambda v, _: {"a": v},
                                                             range(10), None)}),
}

NULL_CHILD = """
import json, sys
from graphmem import InvalidInputError, MemoryStore
from tests.test_trust_cypher_walls import NULL_CRASHERS
out = {}
with MemoryStore(sys.argv[1], embedder="hashing") as store:
    store.add("a memory", owner="ann")
    for name, (statement, params) in [*NULL_CRASHERS.items(), *NULL_CRASHERS.items()]:
        try:
            store.cypher(statement, params)
            out[name] = "ran"
        except InvalidInputError as exc:
            out[name] = [exc.field, str(exc)]
    out["is null"] = store.cypher("MATCH (m:Memory) WHERE m.subject IS NULL "
                                  "RETURN count(*) AS n")
    out["null parameter"] = store.cypher("MATCH (m:Memory) WHERE $s IS NULL OR m.id = $s "
                                         "RETURN count(*) AS n", {"s": None})
    # a parameter planned without its value had no type: through WITH or UNWIND into
    # label() or list_contains() it crashed Kuzu as an untyped NULL does
    try:
        store.cypher("WITH $x AS y RETURN label(y) AS l", {"x": 1})
        out["label of a parameter"] = "ran"
    except InvalidInputError as exc:
        out["label of a parameter"] = exc.field
    out["list parameter"] = store.cypher("UNWIND $ids AS i RETURN list_contains(i, 1) AS c",
                                         {"ids": [[1]]})
print(json.dumps(out))
"""


def test_an_untyped_null_that_crashes_kuzu_is_refused_and_the_store_goes_on(
        tmp_path: Path) -> None:
    # each statement twice: the second time the kept verdict refuses it again
    ran = subprocess.run([sys.executable, "-c", NULL_CHILD, str(tmp_path / "db")],
                         capture_output=True, text=True, timeout=300, check=False,
                         cwd=Path(__file__).resolve().parents[1])
    assert ran.returncode == 0, (ran.returncode, ran.stderr[-2000:])
    out = json.loads(ran.stdout)
    for name in NULL_CRASHERS:
        field, message = out[name]
        assert field == "query" and "crashes while planning" in message, name
    assert out["is null"] == [{"n": 1}]
    assert out["null parameter"] == [{"n": 1}]
    assert out["label of a parameter"] == "query"  # Kuzu's own binder error
    assert out["list parameter"] == [{"c": True}]


def test_the_limits_are_exact_and_generous(seeded: MemoryStore) -> None:
    """At each limit a statement runs; one step past it is refused. The named queries
    stay far inside."""
    limits = CYPHER_LIMITS
    at_limit = [
        _nested("[", "]", limits.depth - 1, "[1]"),
        _nested("CASE WHEN true THEN ", " ELSE 0 END", limits.case_depth),
        "RETURN " + "NOT " * limits.prefix_run + "true AS x",
        "RETURN size([" + ",".join(["1"] * ((limits.tokens - 7) // 2)) + "]) AS x",
    ]
    past = [
        _nested("[", "]", limits.depth, "[1]"),
        _nested("CASE WHEN true THEN ", " ELSE 0 END", limits.case_depth + 1),
        "RETURN " + "NOT " * (limits.prefix_run + 1) + "true AS x",
        "RETURN size([" + ",".join(["1"] * ((limits.tokens - 7) // 2 + 1)) + "]) AS x",
        "RETURN '" + "x" * limits.chars + "' AS x",
    ]
    for statement in at_limit:
        assert len(seeded.cypher(statement)) == 1
    for statement in past:
        with pytest.raises(InvalidInputError, match=r"the most is|more than"):
            seeded.cypher(statement)
    tight = Limits(chars=limits.chars // 5, tokens=limits.tokens // 5, depth=limits.depth // 3,
                   case_depth=limits.case_depth // 3, prefix_run=limits.prefix_run // 3)
    for query in load_queries().values():
        check_bounds(lex(query.text), limits=tight)


# -- a real sidecar --------------------------------------------------------------------
@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``graphmem serve`` in its own process: a crash would end it, not the tests."""
    db = tmp_path / "db"
    with MemoryStore(db, embedder="hashing") as store:
        store.add("The orchard runs on PostgreSQL 16", owner="ann")
    with serve_process(db, env={**os.environ, "GRAPHMEM_EMBEDDER": "hashing"}) as served:
        yield served


def test_the_sidecar_refuses_crashers_and_answers_the_next_request(
        sidecar: tuple[str, subprocess.Popen[bytes]], tmp_path: Path) -> None:
    url, server = sidecar
    secret = tmp_path / "tokens.csv"
    secret.write_text(f"{MARKER},admin\n", encoding="utf-8")
    statements = [s for s in CRASHERS.values() if len(s) <= CYPHER_LIMITS.chars]
    # the reported bypass: a backslash in a backquoted name hid LOAD FROM from the guard
    statements.append(f"MATCH (`x\\`) LOAD FROM '{secret}' RETURN * // `")
    statements.append("RETURN '\ud800' AS x")  # a lone surrogate, as JSON can carry one
    # an untyped NULL that Kuzu crashes on while binding it (kuzudb/kuzu#5959)
    statements.append("WITH null AS x RETURN label(x) AS l")
    with httpx.Client(base_url=url, timeout=30) as http:
        for statement in statements:
            started = time.perf_counter()
            body = json.dumps({"query": statement}, ensure_ascii=True)
            answer = http.post("/v1/cypher", content=body,
                               headers={"content-type": "application/json"})
            assert answer.status_code == 422, answer.text
            assert answer.json()["field"] in ("query", "body")  # body: the surrogate
            assert MARKER not in answer.text
            assert time.perf_counter() - started < 2.0
            assert server.poll() is None
            ok = http.post("/v1/cypher", json={"query": "MATCH (m:Memory) RETURN count(*) AS n"})
            assert ok.status_code == 200 and ok.json()["rows"] == [{"n": 1}]
        null = http.post("/v1/cypher", json={"query": "RETURN label($x) AS l",
                                             "params": {"x": None}})
        assert null.status_code == 422 and "crashes while planning" in null.text
        assert server.poll() is None
        schema = http.get("/openapi.json").json()["components"]["schemas"]["CypherIn"]
    described = schema["properties"]["query"]["description"]
    for figure in (f"{CYPHER_LIMITS.chars:,}", f"{CYPHER_LIMITS.tokens:,}",
                   f"nested at most {CYPHER_LIMITS.depth} deep",
                   f"CASE {CYPHER_LIMITS.case_depth}", f"{CYPHER_LIMITS.prefix_run} NOT"):
        assert figure in described, figure
    assert schema["properties"]["query"]["maxLength"] == CYPHER_LIMITS.chars


# -- values Kuzu builds whole, beyond the time limit's reach ---------------------------
@pytest.mark.parametrize(("statement", "params", "message"), [
    ("RETURN size(range(1, 100001)) AS n", {}, r"range\(\) may make at most 100,000 .* asks "
     r"for 100,001"),
    ("RETURN size(range(0, $n, 1)) AS n", {"n": 100_000}, r"asks for 100,001"),
    ("RETURN size(repeat('a', 100001)) AS n", {}, r"repeat\(\) .*asks for 100,001"),
    ("UNWIND range(1, 10) AS i RETURN size(lpad('a', 1000000, 'b')) AS n LIMIT 1", {},
     r"lpad\(\) .*asks for 1,000,000"),
    ("MATCH (m:Memory) RETURN size(range(0, size(m.text))) AS n", {},
     r"range\(\) takes sizes written as numbers or given as parameters"),
    ("RETURN size(range(1, $n)) AS n", {"n": "5"}, r"range\(\) takes sizes"),
    ("RETURN size(list_reduce(['ab', 'ab', 'ab'], (x, y) -> x + x)) AS n", {},
     r"list_reduce\(\) may not use its accumulator twice"),
    # sizes that multiply: a repeat of a repeat, a step that repeats, a lambda's call
    ("RETURN size(repeat(repeat('ab', 100000), 500)) AS n", {},
     r"repeat\(\) takes a text written out or given as a parameter"),
    ("RETURN size(repeat($s, 50000)) AS n", {"s": "abc"}, r"asks for 150,000"),
    ("RETURN size(list_reduce(['a', 'b'], (acc, y) -> repeat(acc, 500))) AS n", {},
     r"list_reduce\(\) may not call lpad, range, repeat, rpad in its step"),
    # a lambda that works on a value from outside it, once an element: N * N elements
    ("WITH range(1, 10000) AS l RETURN size(list_transform(l, x -> list_append(l, x))) AS n",
     {}, r"l is not a variable of the lambda or list comprehension it stands in"),
    ("UNWIND range(1, 100) AS x WITH collect(x) AS l RETURN size(list_transform(l, y -> l)) "
     "AS n", {}, r"l is not a variable of the lambda"),
    ("WITH range(1, 100) AS l RETURN size(list_filter(l, x -> any(y IN l WHERE y = x))) AS n",
     {}, r"l is not a variable of the lambda"),
    ("RETURN size(list_transform([1, 2], x -> $l)) AS n", {"l": list(range(1000))},
     r"\$l \(of 1,000 elements or characters\) may not stand in a lambda"),
    # a replace in the step: 2**39 characters from 40 elements
    ("RETURN size(list_reduce([" + ", ".join(["'a'"] * 40) + "], (acc, y) -> "
     "regexp_replace(acc, 'a', 'aa', 'g'))) AS n", {},
     r"list_reduce\(\) may not call regexp_replace in its step"),
    ("RETURN size(list_transform(range(1, 100000), x -> repeat('a', 100000))) AS n", {},
     r"repeat\(\) may make at most 100 .* inside a lambda or a list comprehension"),
    ("MATCH (m:Memory) RETURN size([t IN m.tags | range(1, 5000)]) AS n", {},
     r"range\(\) may make at most 100 .* inside a lambda or a list comprehension"),
    ("RETURN size(list_transform(range(1, 20), x -> list_transform(range(1, 10), "
     "y -> range(1, 10)))) AS n", {}, r"range\(\) may not stand in a lambda inside another"),
    ("RETURN size(regexp_replace(regexp_replace(repeat('a', 100), 'a', 'aaaa', 'g'), 'a', "
     "'aaaa', 'g')) AS n", {}, r"regexp_replace\(\), repeat\(\): a statement may hold one"),
    # the same passed on through WITH: 100 times a step (a 100,000,000-character value in
    # 5 s from 10,000 characters; one step more is 10 GB)
    ("WITH lpad('', 10000, 'a') AS t WITH regexp_replace(t, 'a', $r, 'g') AS u "
     "RETURN size(regexp_replace(u, 'b', $r, 'g')) AS n", {"r": "b" * 100},
     r"lpad\(\), regexp_replace\(\): a statement may hold one replace"),
    ("MATCH (m:Memory) WITH regexp_replace(m.text, 'a', 'bbbb', 'g') AS u "
     "RETURN size(regexp_replace(u, 'b', 'cccc', 'g')) AS n", {},
     r"regexp_replace\(\): a statement may hold"),
    ("MATCH (m:Memory) WITH regexp_replace(m.text, 'x*', 'y', 'g') AS u "
     "RETURN size(replace(u, 'y', 'zz')) AS n", {},
     r"replace\(\) is not among the functions"),  # Kuzu 0.11.3 has no replace()
    # a variable of a pattern bound again to what a replace made
    ("MATCH (m:Memory) WITH {text: regexp_replace(m.text, 'a', 'bbbb', 'g')} AS m "
     "RETURN size(regexp_replace(m.text, 'b', 'cccc', 'g')) AS n", {},
     r"regexp_replace\(\): a statement may hold"),
    ("MATCH (m:Memory) RETURN size(list_transform([{text: regexp_replace(m.text, 'a', 'bbbb',"
     " 'g')}], m -> regexp_replace(m.text, 'b', 'cccc', 'g'))) AS n", {},
     r"regexp_replace\(\): a statement may hold"),
    ("MATCH (m:Memory) RETURN size([m IN [{text: regexp_replace(m.text, 'a', 'bbbb', 'g')}] "
     "| regexp_replace(m.text, 'b', 'cccc', 'g')]) AS n", {},
     r"regexp_replace\(\): a statement may hold"),
    ("UNWIND range(1, 10) AS i MATCH (m:Memory) RETURN size(regexp_replace(m.text, 'a', "
     "'bbbb', 'g')) + size(regexp_replace(m.text, 'b', 'cccc', 'g')) AS n", {},
     r"range\(\), regexp_replace\(\): a statement may hold"),
    # Kuzu reads a variable's name in any case: "AS M" binds m again
    ("MATCH (m:Memory) WITH {text: regexp_replace($t, '', $r, 'g')} AS M "
     "RETURN size(regexp_replace(m.text, '', $r, 'g')) AS n", {"t": "y" * 100, "r": "x" * 100},
     r"regexp_replace\(\): a statement may hold"),
    ("MATCH (M:Memory) WITH {text: regexp_replace($t, '', $r, 'g')} as `m` "
     "RETURN size(regexp_replace(M.text, '', $r, 'g')) AS n", {"t": "y" * 100, "r": "x" * 100},
     r"regexp_replace\(\): a statement may hold"),
    # a separator between every two elements: 1,000 characters times 10,000
    ("RETURN size(list_to_string($sep, string_split($t, ''))) AS n",
     {"sep": "s" * 1000, "t": "t" * 10_000}, r"list_to_string\(\) takes a separator"),
    # another value's text once an element: a 200,000-character text, 40 GB
    ("MATCH (m:Memory) RETURN size(list_to_string('', list_transform(string_split(m.text, ''),"
     " x -> m.text))) AS n", {}, r"m\.text is a property of a value the lambda"),
    ("RETURN size(list_transform(range(1, 100), x -> '" + "a" * 200 + "')) AS n", {},
     r"a text of 200 characters may not stand in a lambda"),
    # joins chained through string_split: 101 times a level (50 MB from 50 characters)
    ("RETURN size(list_to_string($r, string_split(list_to_string($r, string_split("
     "list_to_string($r, string_split($p, '')), '')), ''))) AS n",
     {"r": "x" * 100, "p": "ab" * 25}, r"list_to_string\(\): a statement may hold one"),
    # a value copied by each use of what was made from it: 2**20 times the work
    ("WITH $p AS t " + "WITH t + t AS t " * 20 + "RETURN size(t) AS n", {"p": "ab"},
     r"t is named 62 times here"),
    # a replace's longer text named 100 times (50 MB from 5 KB)
    ("WITH regexp_replace($p, '', $r, 'g') AS t RETURN size(concat(" + ", ".join(["t"] * 100)
     + ")) AS n", {"p": "ab" * 2500, "r": "x" * 100}, r"t is named 101 times here"),
    # a lambda's list added to itself 30 times: 3 million elements, 870 MB
    ("RETURN size(list_transform([range(1, 100000)], a -> " + "+".join(["a"] * 30)
     + ")[1]) AS n", {}, r"may copy what it binds"),
    ("RETURN size(list_transform(list_transform(list_transform([range(1, 100000)], a -> a + a"
     " + a), b -> b + b + b), c -> c + c)) AS n", {}, r"may copy what it binds"),
    # a chain of fresh names, each doubling the one before: 1.2 GB past the time limit
    ("WITH 'x' AS v0 " + " ".join(f"WITH v{i} + v{i} AS v{i + 1}" for i in range(27))
     + " RETURN size(v27) AS n", {}, r"may copy what it binds"),
    ("WITH range(1, 1000) AS v0 " + " ".join(f"WITH [v{i}, v{i}] AS v{i + 1}" for i in range(20))
     + " RETURN size(v20) AS n", {}, r"may copy what it binds"),
    ("WITH 'abc' AS v0 " + " ".join(f"WITH concat(v{i}, v{i}) AS v{i + 1}" for i in range(20))
     + " RETURN size(v20) AS n", {}, r"may copy what it binds"),
    # copies through packing calls, fresh names of one value, stored properties
    ("WITH range(1, 100000) AS l WITH array_value(l, l, l, l, l, l, l, l) AS l2 WITH "
     "array_value(l2, l2, l2, l2, l2, l2, l2, l2) AS l3 RETURN size(l3) AS n", {},
     r"may copy what it binds"),
    ("WITH range(1, 100000) AS l WITH struct_pack(a := l, b := l, c := l, d := l, e := l) AS"
     " s WITH struct_pack(a := s, b := s, c := s, d := s) AS t RETURN size(t.a.a) AS n", {},
     r"may copy what it binds"),
    ("WITH range(1, 100000) AS l WITH l AS a, l AS b, l AS c, l AS d WITH a + b + c + d AS l2 "
     "WITH l2 AS e, l2 AS f, l2 AS g, l2 AS h WITH e + f + g + h AS l3 RETURN size(l3) AS n",
     {}, r"may copy what it binds"),
    ("MATCH (m:Memory) RETURN size(" + " + ".join(["m.text"] * 100) + ") AS n", {},
     r"a stored property at most 4 times"),
    # a variable named like a clause word, which the guard would not count
    ("WITH range(1, 100000) AS skip WITH skip + skip + skip + skip + skip AS limit "
     "RETURN size(limit) AS n", {}, r"skip is a word of Cypher's grammar"),
    ("WITH range(1, 100000) AS contains RETURN size(list_transform(string_split(repeat('a,', "
     "500), ','), x -> contains)) AS n", {}, r"contains is a word of Cypher's grammar"),
    # lists split from repeated texts, added up while Kuzu plans: 33 s under a limit of 10 s
    ("RETURN size(" + " + ".join(["string_split(repeat('a,', 50000), ',')"] * 25) + ") AS n",
     {}, r"the repeat\(\), lpad\(\) and rpad\(\) calls of one expression may make at most"),
    # generators added up, worked out while Kuzu plans (before the time limit): 19 s
    ("RETURN size(" + "+".join(["range(1, 100000)"] * 15) + ") AS n", {},
     r"the range\(\) calls of one expression may make at most 100,000 elements or characters "
     r"together"),
])
def test_a_value_too_large_to_stop_is_refused_before_it_is_built(
        seeded: MemoryStore, statement: str, params: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as refused:
        seeded.cypher(statement, params)
    assert refused.value.field == "query"


@pytest.mark.parametrize(("statement", "params", "expected"), [
    ("RETURN size(range(1, 100000)) AS n", {}, 100_000),
    ("RETURN size(range(10, 1, -1)) AS n", {}, 10),
    ("RETURN size(range(1, $n)) AS n", {"n": 10}, 10),
    ("UNWIND range(1, 100) AS i RETURN size(repeat('ab', 50)) AS n LIMIT 1", {}, 100),
    ("RETURN list_reduce([1, 2, 3], (x, y) -> x + y) AS n", {}, 6),
    ("RETURN list_reduce([1, 5, 3], (x, y) -> CASE WHEN x > y THEN x ELSE y END) AS n", {},
     5),
    # replaces that make nothing longer, or one alone that does
    ("WITH regexp_replace(repeat('ab', 50), 'ab', 'c', 'g') AS t "
     "RETURN size(regexp_replace(t, 'c+', 'd', 'g')) AS n", {}, 1),
    ("RETURN size(regexp_replace(regexp_replace('a cat', 'cat', 'dog', 'g'), ' ', '_', "
     "'g')) AS n", {}, 5),
    ("RETURN size(regexp_replace('a  b', ' +', ' ', 'g')) AS n", {}, 3),
    ("RETURN size(regexp_replace('abc', 'b', 'xyz', 'g')) AS n", {}, 5),
    # replaces that make longer texts, each of what the statement did not make
    ("RETURN size(regexp_replace('banana', 'a', 'aa', 'g')) + size(regexp_replace($p, 'n', "
     "'nn', 'g')) AS n", {"p": "banana"}, 17),
    ("MATCH (m:Memory) WITH m ORDER BY m.id LIMIT 1 RETURN size(regexp_replace(m.text, "
     "'a', 'aa', 'g')) - size(regexp_replace(m.text, 'a', 'xy', 'g')) AS n", {}, 0),
    # lambdas of their own variables, properties, and values compared with
    ("RETURN list_reduce(list_transform([[1, 2], [3]], x -> list_reduce(x, (a, b) -> a + b)),"
     " (acc, y) -> acc + y) AS n", {}, 6),
    ("WITH 2 AS k RETURN size(list_filter([1, 2, 3], x -> x >= k)) AS n", {}, 2),
    ("MATCH (m:Memory) WITH m ORDER BY m.id LIMIT 1 RETURN size(list_filter(['x', m.owner], "
     "x -> x = m.owner)) AS n", {}, 1),
    ("RETURN size(list_to_string(', ', ['a', 'b'])) AS n", {}, 4),
    ("WITH 3 AS k RETURN CASE WHEN any(x IN [1, 2, 3] WHERE x = k) THEN 1 ELSE 0 END AS n",
     {}, 1),
    # an operator and a type in a lambda, two joins of stored lists, one copy of a value
    ("RETURN size(list_filter(['ab', 'cd'], x -> x CONTAINS 'b')) AS n", {}, 1),
    ("RETURN size(list_transform([1, 2], x -> CAST(x AS STRING))) AS n", {}, 2),
    ("MATCH (m:Memory) WITH m ORDER BY m.id LIMIT 1 RETURN size(list_to_string(', ', m.tags))"
     " - size(list_to_string(', ', m.tags)) AS n", {}, 0),
    ("UNWIND [1, 2, 3] AS x WITH x + x AS y RETURN sum(y) AS n", {}, 12),
    ("RETURN size(list_transform([[1, 2]], a -> a + a + a)) AS n", {}, 1),
    ("WITH [1, 2] AS l WITH l + l AS l2 RETURN size(l2 + l2) AS n", {}, 8),
])
def test_generators_within_the_bound_run(seeded: MemoryStore, statement: str,
                                         params: dict[str, object], expected: int) -> None:
    assert seeded.cypher(statement, params) == [{"n": expected}]


@pytest.mark.parametrize("statement", [
    "MATCH (m:Memory) WITH m.id AS id, m.useful_count AS u, m.ignored_count AS i RETURN id, "
    "(u + 1.0) / (u + i + 2.0) AS useful, (i + 1.0) / (u + i + 2.0) AS ignored",
    "MATCH (a:Entity)-[f:FACT]->(b:Entity) WITH a.name AS s, b.name AS o, f.predicate AS p "
    "RETURN CASE WHEN s < o THEN s + '|' + o ELSE o + '|' + s END AS pair, "
    "s + ' ' + p + ' ' + o + ' (' + p + ')' AS label",
    "MATCH (m:Memory) WITH m.id AS id, m.importance AS imp, m.confidence AS conf "
    "RETURN id, [imp, conf, imp * conf] AS features, [imp, conf, imp + conf] AS f2",
    "MATCH (m:Memory) WITH m.id AS id, m.importance AS imp "
    "RETURN {id: id, imp: imp, double: imp * 2} AS a, {id: id, half: imp / 2, imp: imp} AS b",
    "MATCH (m:Memory) RETURN list_transform(m.tags, t -> lower(t) + ':' + t) AS a, "
    "list_transform(m.entities, e -> upper(e) + '/' + e) AS b",
    "MATCH (m:Memory) WITH m.id AS id, m.importance AS imp, m.confidence AS conf "
    "WHERE imp + conf * imp > 0.5 RETURN id, imp + imp * conf AS s",
    "MATCH (m:Memory) WHERE any(t IN m.tags WHERE t CONTAINS 'a') RETURN count(*) AS n",
])
def test_analysts_arithmetic_and_lists_run(seeded: MemoryStore, statement: str) -> None:
    """Ordinary queries that add or list the values they bind, in several items: each
    copies a value a few times, not a chain of copies."""
    assert isinstance(seeded.cypher(statement), list)
