"""Ad-hoc Cypher cannot end the process or fill the machine through the values it
computes: a time outside the years 1-9999 (Kuzu's Python binding crashed turning one
into Python's), JSON nested past Kuzu's stack, a replace that inserts a long text at
every match, a comparison whose work is the product of two long texts, and a result
larger than what Python may hold, read past the time limit. Each statement that once
crashed runs in a child process, so that a crash fails the test instead of ending it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from graphmem import InvalidInputError, MemoryStore
from graphmem._kuzu._user_rows import RESULT_BYTES, read_user_rows

_CHILD = """
import json, sys
from graphmem import GraphmemError, MemoryStore
db, query, params = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
with MemoryStore(db, embedder="hashing") as store:
    try:
        rows = store.cypher(query, params)
        error = None
    except GraphmemError as exc:
        rows, error = None, {"type": type(exc).__name__, "message": str(exc)}
    print(json.dumps({"rows": None if rows is None else len(rows), "error": error}))
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("values") / "db"
    with MemoryStore(path, embedder="hashing") as store:
        store.add("Melanie painted a sunset by the lake", owner="ann")
        store.add("Caroline moved to Lisbon in 2024", owner="ann")
    return path


def _child(db: Path, query: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(db), query],
                          input=json.dumps(params or {}), capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


@pytest.mark.parametrize("query", [
    "RETURN date('0001-01-01') - 1 AS d",
    "RETURN date('10000-01-01') AS d",
    "RETURN to_timestamp(253402300800) AS t",
    "MATCH (m:Memory) RETURN m.created + interval('8000 years') AS t LIMIT 1",
    "RETURN [date('2020-01-01'), date('10000-01-01')] AS d",
    "RETURN {a: 1, b: timestamp('10000-01-01')} AS d",
    "RETURN map(['a'], [date('10000-01-01')]) AS d",
    "RETURN union_value(a := date('10000-01-01')) AS d",
    "RETURN CAST(['9999-12-01'] AS DATE[])[1] + 1000 AS d",
    "MATCH (m:Memory) RETURN coalesce(m.created) - duration('9000 years') AS d",
    "MATCH (m:Memory) WITH m.created AS c RETURN c + duration('8000 years') AS d",
    "MATCH (m:Memory) UNWIND [m.created] AS x RETURN x - duration('9000 years') AS d",
    "MATCH (m:Memory) RETURN max(m.created) - duration('9000 years') AS d",
], ids=["date-minus", "date", "to_timestamp", "interval", "list", "struct", "map", "union",
        "cast-list", "coalesce", "alias", "unwind", "aggregate"])
def test_a_time_python_cannot_hold_is_refused_not_a_crash(db: Path, query: str) -> None:
    outcome = _child(db, query)
    assert outcome["error"] is not None and outcome["error"]["type"] == "InvalidInputError"
    assert "years 1 to 9999" in outcome["error"]["message"] \
        or "cannot read" in outcome["error"]["message"], outcome


def test_times_within_the_years_are_returned(db: Path) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        rows = store.cypher("MATCH (m:Memory) RETURN m.created AS c, "
                            "[date('0001-01-01'), date('9999-12-31')] AS bounds, "
                            "timestamp('9999-12-31 23:59:59') AS last ORDER BY c")
    assert len(rows) == 2 and rows[0]["bounds"][1].year == 9999
    assert rows[0]["last"].year == 9999


@pytest.mark.parametrize("call", [
    "json_structure($j)", "json_merge_patch($j, $j)", "json_contains($j, $j)",
    "json_array(CAST($j AS JSON))", "to_json([CAST($j AS JSON)])",
    "json_object('a', CAST($j AS JSON))", "row_to_json({a: CAST($j AS JSON)})"])
def test_json_functions_that_recurse_per_level_are_refused(db: Path, call: str) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    outcome = _child(db, f"RETURN size(string({call})) AS n", {"j": deep})
    assert outcome["error"] is not None, outcome
    assert "stack" in outcome["error"]["message"]
    assert call.split("(")[0] in outcome["error"]["message"]


def test_a_replace_inserts_a_short_text_only(db: Path) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        assert store.cypher("RETURN regexp_replace('abc', '', '-', 'g') AS s")[0]["s"] \
            == "-a-b-c-"
        for query, params in [
                ("WITH repeat('x', 50000) AS s, repeat('y', 40000) AS r "
                 "RETURN size(regexp_replace(s, '', r, 'g')) AS n", {}),
                ("RETURN size(regexp_replace($s, '', $r, 'g')) AS n",
                 {"s": "x" * 1000, "r": "y" * 101}),
                ("MATCH (m:Memory) RETURN regexp_replace(m.text, 'a', m.text) AS s", {})]:
            with pytest.raises(InvalidInputError, match="replacement"):
                store.cypher(query, params)


def test_a_comparison_of_two_long_texts_is_refused(db: Path) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        rows = store.cypher("MATCH (e:Entity) RETURN e.name AS n, "
                            "levenshtein(e.name, 'melanie') AS d ORDER BY d LIMIT 1")
        assert rows[0]["n"] == "melanie" and rows[0]["d"] == 0
        assert store.cypher("RETURN list_has_all($a, ['x1', 'x2']) AS x",
                            {"a": [f"x{i}" for i in range(1000)]})[0]["x"] is True
        for query, params in [
                ("UNWIND range(1, 4) AS i RETURN levenshtein(repeat('a', 100000), "
                 "repeat('b', 100000) + string(i)) AS d", {}),
                ("RETURN levenshtein($a, $b) AS d", {"a": "a" * 65, "b": "b" * 65}),
                ("RETURN levenshtein($a, $l) AS d", {"a": "a" * 1000, "l": ["b" * 1000]}),
                ("MATCH (m:Memory), (n:Memory) RETURN levenshtein(m.text, n.text) AS d", {}),
                ("RETURN list_has_all(range(1, 100000), range(1, 100000)) AS x", {})]:
            with pytest.raises(InvalidInputError, match="product of the two lengths"):
                store.cypher(query, params)


def test_a_long_pattern_is_refused(db: Path) -> None:
    """RE2's work grows with the text times the pattern (a 50,000-character pattern over
    100,000 characters: 100 s past a limit of 10 s)."""
    with MemoryStore(db, embedder="hashing") as store:
        assert store.cypher("MATCH (m:Memory) WHERE m.text =~ '.*[Ll]isbon.*' AND "
                            "regexp_matches(m.text, $p) RETURN count(*) AS n",
                            {"p": "20[0-9]{2}"})[0]["n"] == 1
        for query in ["RETURN repeat('a', 1000) =~ ('.*' + repeat('a', 500) + 'b') AS x",
                      "RETURN repeat('a', 1000) =~ '.*' + repeat('a', 500) AS x",
                      "MATCH (m:Memory) RETURN m.text =~ m.text AS x",
                      f"RETURN regexp_matches('abc', '{'a' * 201}') AS x"]:
            with pytest.raises(InvalidInputError, match="pattern"):
                store.cypher(query)


def test_a_long_result_with_times_is_refused_before_it_is_read(db: Path) -> None:
    """A result with a time is read whole through Arrow (Kuzu's binding crashes on a
    time Python cannot hold): at most TIME_ROWS rows, 100 when the statement holds a
    large constant (a time beside 100,000 rows of 100 KB took 3 GB there), 2,000,000
    when every column has a fixed width."""
    with MemoryStore(db, embedder="hashing") as store:
        with pytest.raises(InvalidInputError, match="at most 100 rows"):
            store.cypher("UNWIND range(1, 1000) AS i RETURN i, date('2020-01-01') AS d, "
                         "repeat('x', 100000) AS r")
        with pytest.raises(InvalidInputError, match="at most 100,000 rows"):
            store.cypher("UNWIND $n AS i RETURN i, date('2020-01-01') AS d, 'x' AS s",
                         {"n": list(range(100_001))})
        assert len(store.cypher("UNWIND $n AS i RETURN i, date('2020-01-01') AS d, 'x' AS s",
                                {"n": list(range(1_000))})) == 1_000
        # columns of a fixed width alone: 16 bytes a value at most in Arrow
        fixed = store.cypher("UNWIND $n AS i MATCH (m:Memory) RETURN i, m.created AS c, "
                             "to_epoch_ms(m.created) - 1 AS ms", {"n": list(range(60_000))})
        assert len(fixed) == 120_000 and fixed[0]["c"].year > 2000


def test_a_result_larger_than_the_bound_is_refused(db: Path) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        rows = RESULT_BYTES // 100_000 + 50
        with pytest.raises(InvalidInputError, match="the result is larger than"):
            store.cypher(f"UNWIND range(1, {rows}) AS i RETURN i, repeat('x', 100000) AS r")
        assert len(store.cypher("UNWIND range(1, 1000) AS i RETURN i, "
                                "repeat('x', 1000) AS r")) == 1000


class _Rows:
    """A result of ``n`` rows (what ``read_user_rows`` reads of Kuzu's)."""

    def __init__(self, n: int) -> None:
        self.left = n

    def get_column_data_types(self) -> list[str]:
        return ["INT64"]

    def has_next(self) -> bool:
        return self.left > 0

    def get_next(self) -> list[Any]:
        self.left -= 1
        return [self.left]


def test_reading_the_rows_stops_at_the_time_limit() -> None:
    late = time.monotonic() - 1
    with pytest.raises(InvalidInputError, match="too long"):
        read_user_rows(_Rows(1000), deadline=late,
                       too_long=lambda: InvalidInputError("too long"))
    assert len(read_user_rows(_Rows(1000), deadline=time.monotonic() + 60,
                              too_long=lambda: InvalidInputError("too long"))) == 1000


def test_a_parameter_nested_too_deeply_is_refused(db: Path) -> None:
    deep: Any = 1
    for _ in range(5_000):
        deep = [deep]
    with MemoryStore(db, embedder="hashing") as store:
        with pytest.raises(InvalidInputError, match="nested more than 32 levels") as caught:
            store.cypher("RETURN $x AS x", {"x": deep})
        assert caught.value.field == "x"
        assert store.cypher("RETURN $x AS x", {"x": [[[1]]]})[0]["x"] == [[[1]]]
    done = subprocess.run([sys.executable, "-m", "graphmem", "--db", str(db), "query",
                           "RETURN $x AS x", "--param", "x=" + "[" * 30_000 + "]" * 30_000],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "nested too deeply" in done.stderr


def test_arithmetic_on_stored_times_near_the_ends_is_refused(tmp_path: Path) -> None:
    """Stored times lie in the years, but x + (x - y) of two near their ends does not,
    and no time function or cast says so: every result with a time is checked."""
    from datetime import UTC, datetime

    now = [datetime(1, 1, 2, tzinfo=UTC)]
    with MemoryStore(tmp_path / "db", embedder="hashing", clock=lambda: now[0]) as store:
        store.add("Caroline moved to Lisbon", owner="ann")
        now[0] = datetime(9999, 12, 30, tzinfo=UTC)
        store.add("Melanie paints by the lake", owner="ann")
    outcome = _child(tmp_path / "db", "MATCH (a:Memory), (b:Memory) WITH a.created AS x, "
                                      "b.created AS y RETURN x + (x - y) AS t")
    assert outcome["error"] is not None and "years 1 to 9999" in outcome["error"]["message"]


@pytest.mark.parametrize("query", [
    "MATCH p=(a:Memory)-[r:CO_OCCURS* WSHORTEST(weight) 1..3]-(b:Memory) RETURN cost(p) AS c",
    "MATCH p=(a:Memory)-[r:CO_OCCURS* SHORTEST 1..3]-(b:Memory) RETURN cost(p) AS c",
    "RETURN string(to_microseconds(-9223372036854775808)) AS x",
    "RETURN factorial(9223372036854775807) AS x",
    "RETURN `factorial`(20) AS x",
    "RETURN nextval('s') AS x",
    "RETURN {a: to_microseconds(-9223372036854775808)} AS x",
    "RETURN [1, 2, 3][0:to_microseconds(-9223372036854775808)] AS x",
    "MATCH p=(a:Memory)-[r:CO_OCCURS* WSHORTEST(weight) 1..3]-(b:Memory) RETURN {c: cost(p)}",
    "MATCH (m:Memory {importance: factorial(3)}) RETURN m.id",
], ids=["cost-wshortest", "cost-shortest", "to_microseconds", "factorial", "backquoted",
        "nextval", "map-value", "slice-bound", "cost-in-map", "pattern-property"])
def test_a_function_outside_the_allowlist_is_refused_by_name(db: Path, query: str) -> None:
    started = time.monotonic()
    outcome = _child(db, query)
    assert outcome["error"] is not None and outcome["error"]["type"] == "InvalidInputError"
    assert "is not among the functions ad-hoc Cypher may call" in outcome["error"]["message"]
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("query", [
    "RETURN regexp_extract('abcabc', '(a)(b)', -1) AS x",
    "RETURN regexp_extract_all('abcabc', '(a)(b)', -2) AS x",
    "RETURN regexp_extract('abcabc', '(a)(b)', $g) AS x",
    "MATCH (m:Memory) RETURN regexp_extract(m.text, '(a)', m.importance) AS x",
])
def test_a_regular_expression_group_below_zero_is_refused_not_a_crash(db: Path, query: str
                                                                     ) -> None:
    for _ in range(3):  # the overread crashed one call in a few
        outcome = _child(db, query, {"g": -1} if "$g" in query else {})
        assert outcome["error"] is not None, outcome
        assert "a whole number of 0 or more" in outcome["error"]["message"], outcome


def test_the_allowed_functions_and_grammar_still_run(db: Path) -> None:
    with MemoryStore(db, embedder="hashing") as store:
        rows = store.cypher(
            "MATCH (m:Memory) WHERE (m.importance >= 0) AND NOT (m.text CONTAINS 'zzz') "
            "OPTIONAL MATCH p=(m)-[:CO_OCCURS* WSHORTEST(weight) 1..2]-(o:Memory) "
            "RETURN regexp_extract(m.text, '(\\\\w+) (\\\\w+)', 2) AS second, "
            "regexp_extract(m.text, '\\\\w+') AS first, lower(m.text) AS low, "
            "size(nodes(p)) AS hops, coalesce(m.subject, 'none') AS subject, "
            "date_part('year', m.created) AS year, count(*) AS n ORDER BY second")
    assert [r["second"] for r in rows] == ["moved", "painted"]
    assert [r["first"] for r in rows] == ["Caroline", "Melanie"]


def test_the_factorial_operator_is_refused(db: Path) -> None:
    outcome = _child(db, "RETURN 6000000000! AS x")
    assert outcome["error"] is not None and "factorial operator" in outcome["error"]["message"]
    with MemoryStore(db, embedder="hashing") as store:
        assert store.cypher("RETURN 1 <> 2 AS x, 3 AS y") == [{"x": True, "y": 3}]
