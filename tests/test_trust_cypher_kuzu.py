"""The Cypher guard sees what Kuzu sees: generated statements, judged by Kuzu 0.11.3 itself.

Each statement hides a dangerous clause (LOAD FROM a file, COPY TO, CALL of a setting, a
second statement, SET on Version, DETACH DELETE) among strings, backquoted names with
backslashes and backquotes, comments holding quotes and backquotes, CR/LF variants and
Kuzu's Unicode whitespace. Kuzu's own reading is the oracle: where it prepares the
statement, its physical plan (``EXPLAIN`` of the prepared statement, in a scratch store
with graphmem's schema) shows whether the clause is live. Wherever it is, the guard must
refuse; wherever the lexer refuses, Kuzu must fail to parse; and the lexer's tokens put
back together canonically must mean the same to Kuzu. ``GRAPHMEM_HOSTILE_EXAMPLES`` sets
the examples per test.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem import GraphmemError, InvalidInputError, MemoryStore
from graphmem._kuzu._guard import check_user_query
from graphmem._kuzu._lexer import canonical, lex, parameter_names

EXAMPLES = int(os.environ.get("GRAPHMEM_HOSTILE_EXAMPLES", "40"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
#: The place of the scratch files in generated text (a path with no quote or backslash).
CSV, OUT = "@csv@", "@out@"
LOGS = {"Version", "LifecycleEvent", "HAS_VERSION", "Meta", "Stage"}


@dataclass
class View:
    """How Kuzu reads a text: unparsed, several (statements), unbound (a binder error) or
    planned, with the physical plan's text."""

    kind: str
    plan: str = ""

    @property
    def dangerous(self) -> bool:
        """A clause that reads or writes a file, changes a setting or deletes is live, a
        write scans a log table, or a second statement rides along."""
        plan = self.plan
        cells = {cell.strip().removeprefix("Tables: ") for cell in plan.split("│")}
        return self.kind == "several" or (self.writes and bool(cells & LOGS)) or any(
            marker in plan for marker in ("READ_CSV", "COPY_TO[", "STANDALONE_CALL[", "DELETE["))

    @property
    def writes(self) -> bool:
        return any(f"{op}[" in self.plan for op in ("SET_PROPERTY", "INSERT", "MERGE", "DELETE"))


class Kuzu:
    """Kuzu itself on a scratch store with graphmem's schema (the oracle)."""

    def __init__(self, root: Path) -> None:
        self.store = MemoryStore(root / "db", embedder="hashing")
        self.store.add("a memory", owner="ann")
        self.csv = root / "header.csv"
        self.csv.write_text("zq_header_marker,b\n1,2\n", encoding="utf-8")
        self.out = root / "out"
        self.out.mkdir()
        self._conn = self.store._ctx.engine.db._reader()  # type: ignore[attr-defined]

    def text(self, template: str) -> str:
        return template.replace(CSV, str(self.csv)).replace(OUT, str(self.out / "x.csv"))

    def _prepare(self, text: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return self._conn.prepare(text)

    def view(self, text: str) -> View:
        prepared = self._prepare(text)
        if not prepared.is_success():
            message = prepared.get_error_message()
            if "multiple statements" in message:
                return View("several")
            return View("unparsed" if message.startswith("Parser exception") else "unbound")
        explain = self._prepare("EXPLAIN " + text)
        if not explain.is_success():
            return View("unbound")
        return View("planned", self._conn.execute(explain).get_next()[0])


@pytest.fixture(scope="module")
def kuzu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kuzu]:
    oracle = Kuzu(tmp_path_factory.mktemp("kuzu"))
    yield oracle
    assert list(oracle.out.iterdir()) == []  # EXPLAIN wrote nothing
    oracle.store.close()


# -- the generator ---------------------------------------------------------------------
#: What goes between tokens: Kuzu's whitespace (Unicode included) and comments holding
#: quotes, backquotes, comment markers and CR/LF variants (some of which Kuzu does not
#: read as comments: a lone CR in //, an even run of * before */).
GAPS = [" ", "\n", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\u00a0", "\u1680", "\u180e", "\u2000",
        "\u2028", "\u2029", "\u3000", "/* ` */", "/* ' */", '/* " */', "/* **/ ` */", "/* *` */",
        "/***/", "/* a **/", "// `\n", "// '\r\n", '// "\n', "//\n", "// `\r\n", "// x\r",
        "/* // */", "// /* \n", "/* \\` */", "/* /* */", "\u0085", "\u200b"]
#: Names: backquoted ones with backslashes, doubled and lone backquotes, quotes inside.
NAMES = ["n", "`n`", "`x\\`", "`a``b`", "`a\\``", "`'`", '`"`', "`//`", "`/*`", "`*/`",
         "`\\\\`", "ünï", "a$b", "`a\\`b`", "`x\\", "``", "`LOAD FROM x`", "`;`"]
#: Literals: every escape Kuzu has, escapes it has not, the other quote, comment markers.
LITERALS = ["1", "'a'", "'\\''", "'\\\\'", "'a\\\\'", "'\\\"'", "\"'\"", "'`'", "'//'", "'/*'",
            "'\\u0041'", "'\\U00000041'", "'\\x41'", "'\\a'", "'a\\'b'", '"a\\"b"', "'a\\",
            "'; LOAD FROM x'", "'*/'", "'\\B\\F\\N\\R\\T'", "'\\u00410041'"]
#: Dangerous clauses and where they go: inside a read, as a second statement, or as the
#: write of a write (``{v}`` a name, ``{lit}`` a literal).
INSIDE = [["LOAD", "FROM", f"'{CSV}'"],
          ["LOAD", "FROM", f"'{CSV}'", "(", "header", "=", "true", ")"]]
STATEMENTS = [["COPY", "(", "MATCH", "(", "m", ":", "Memory", ")", "RETURN", "m", ".", "id",
               ")", "TO", f"'{OUT}'"],
              ["CALL", "threads", "=", "1"],
              ["LOAD", "FROM", f"'{CSV}'", "RETURN", "*"]]
VERSIONS = ["Version", "version", "VERSION", "`Version`", "`version`", "`VERSION`",
            "LifecycleEvent", "`lifecycleevent`", "Meta", "`META`", "Change", "`CHANGE`"]
WRITES = [["MATCH", "(", "{v}", ":", "{table}", ")", "SET", "{v}", ".", "{prop}", "=", "{lit}"],
          ["MATCH", "(", "{v}", ":", "Memory", ")", "DETACH", "DELETE", "{v}"],
          ["MATCH", "(", "m", ":", "Memory", ")", "SET", "m", ".", "importance", "=", "0.5",
           "WITH", "m", ",", "{lit}", "AS", "{v}", "MATCH", "(", "w", ":", "{table}", ")",
           "SET", "w", ".", "{prop}", "=", "{lit}"]]
PROPS = {"version": "reason", "lifecycleevent": "reason", "meta": "value", "change": "tag"}


def _shape(tokens: list[str], gaps: list[str], tail: str) -> str:
    return "".join(t + gaps[n % len(gaps)] for n, t in enumerate(tokens)) + tail


def _fill(tokens: list[str], draw: st.DrawFn) -> list[str]:
    table = draw(st.sampled_from(VERSIONS))
    values = {"{v}": draw(st.sampled_from(NAMES)), "{lit}": draw(st.sampled_from(LITERALS)),
              "{table}": table, "{prop}": PROPS[table.strip("`").lower()]}
    return [values.get(t, t) for t in tokens]


@st.composite
def reads(draw: st.DrawFn) -> str:
    """A read that may hold a dangerous clause, live or hidden."""
    shape = draw(st.sampled_from(["inside", "second", "alone"]))
    head = ["MATCH", "(", draw(st.sampled_from(NAMES)), ":", "Memory", ")", "WITH",
            draw(st.sampled_from(LITERALS)), "AS", draw(st.sampled_from(NAMES))]
    tail = ["RETURN", draw(st.sampled_from(LITERALS)), "AS", draw(st.sampled_from(NAMES))]
    if shape == "inside":
        tokens = head + draw(st.sampled_from(INSIDE)) + tail
    elif shape == "second":
        tokens = [*tail, ";", *draw(st.sampled_from(STATEMENTS + WRITES))]
    else:
        tokens = draw(st.sampled_from(STATEMENTS))
    gaps = draw(st.lists(st.sampled_from(GAPS), min_size=1, max_size=6))
    return _shape(_fill(tokens, draw), gaps, draw(st.sampled_from(["", *GAPS])))


@st.composite
def writes(draw: st.DrawFn) -> str:
    """A write that may reach the history or delete, live or hidden."""
    gaps = draw(st.lists(st.sampled_from(GAPS), min_size=1, max_size=6))
    return _shape(_fill(draw(st.sampled_from(WRITES)), draw), gaps,
                  draw(st.sampled_from(["", *GAPS])))


def _guard_passes(text: str, *, write: bool) -> bool:
    try:
        checked = check_user_query(text, write=write)
    except GraphmemError:
        return False
    return checked.writes or not write


# -- the properties --------------------------------------------------------------------
@FAST
@given(template=reads())
@example(template=f"MATCH (`x\\`) LOAD FROM '{CSV}' RETURN * // `")  # the reported bypass
@example(template=f"WITH '\\\\' AS a LOAD FROM '{CSV}' RETURN 1 AS b // '")
@example(template=f"WITH 1 AS a /* /* */ LOAD FROM '{CSV}' RETURN '*/' AS b")
@example(template=f"WITH 1 AS a // x\u2028 LOAD FROM '{CSV}'\nRETURN 2 AS b")
@example(template="RETURN 1 AS a; // x\r\nCALL threads = 1")
@example(template="RETURN 1 AS `a``b`; CALL threads = 1 // `")
def test_a_read_the_guard_passes_holds_no_live_danger(kuzu: Kuzu, template: str) -> None:
    text = kuzu.text(template)
    view = kuzu.view(text)
    if _guard_passes(text, write=False):
        assert not view.dangerous and not view.writes, (text, view.kind)


#: One piece that may open a region a lexer hides, before the clause; one that may close
#: it, after: every pair, in every slot of its kind (name, literal, whitespace/comment).
HIDING = "MATCH (m:Memory) WITH {x} AS {y}{g1}{danger}{g2}RETURN {u} AS {v}{g3}"
PLAIN = {"x": "1", "y": "a", "g1": " ", "g2": " ", "u": "2", "v": "b", "g3": ""}
DANGERS = [f"LOAD FROM '{CSV}'", "RETURN 1 AS c; CALL threads = 1;"]


def _hiding_pairs() -> Iterator[str]:
    for danger in DANGERS:
        for before, openers in (("x", LITERALS), ("y", NAMES), ("g1", GAPS)):
            for opener in openers:
                for after, closers in (("u", LITERALS), ("v", NAMES), ("g2", GAPS),
                                       ("g3", GAPS)):
                    for closer in closers:
                        slots = {**PLAIN, before: opener, after: closer}
                        yield HIDING.format(danger=danger, **slots)


def test_no_pair_of_pieces_hides_a_clause_kuzu_runs(kuzu: Kuzu) -> None:
    """Every opener and closer around a live clause: wherever the guard passes the
    statement, Kuzu does not run the clause either."""
    passed = 0
    for template in _hiding_pairs():
        text = kuzu.text(template)
        if _guard_passes(text, write=False):
            passed += 1
            view = kuzu.view(text)
            assert not view.dangerous and not view.writes, text
    assert passed  # some pairs do hide the clause from Kuzu too, and pass


@FAST
@given(template=writes())
@example(template="MATCH (v:`Version`) SET v.reason = 'x'")  # the reported bypass
@example(template="MATCH (m:Memory) SET m.importance = 0.5 WITH m, 1 AS `x\\` "
                  "MATCH (v:Version) SET v.reason = 'x' // `")
@example(template="MATCH (v:VERSION) SET v.reason = 'x'")
def test_a_write_the_guard_passes_cannot_reach_the_history(kuzu: Kuzu, template: str) -> None:
    text = kuzu.text(template)
    if _guard_passes(text, write=True):
        view = kuzu.view(text)
        assert not view.dangerous, (text, view.kind)


@FAST
@given(template=st.one_of(reads(), writes()))
def test_the_lexer_reads_as_kuzu_reads(kuzu: Kuzu, template: str) -> None:
    """Where the lexer refuses, Kuzu cannot parse; where it reads, its tokens put back
    with one space for each run of whitespace and comments mean the same to Kuzu."""
    text = kuzu.text(template)
    view = kuzu.view(text)
    try:
        tokens = lex(text)
    except InvalidInputError:
        assert view.kind == "unparsed", text
        return
    again = kuzu.view(canonical(tokens))
    assert (again.kind, again.plan) == (view.kind, view.plan), text


INERT = ["MATCH (m:Memory) WHERE m.text <> {lit} RETURN count(*) AS {v}",
         "CALL show_tables() RETURN {lit} AS {v}",
         "MATCH ({v}:Memory) /* {lit} */ RETURN {lit} AS x // {v}"]


@FAST
@given(template=st.sampled_from(INERT), lit=st.sampled_from(LITERALS),
       name=st.sampled_from(NAMES))
def test_what_kuzu_reads_as_inert_passes(kuzu: Kuzu, template: str, lit: str,
                                         name: str) -> None:
    """Not a guard that refuses everything: a read that Kuzu plans without danger passes,
    whatever strings, names and comments it holds."""
    text = kuzu.text(template.replace("{lit}", lit).replace("{v}", name))
    view = kuzu.view(text)
    if view.kind == "planned" and not view.dangerous and not view.writes:
        assert _guard_passes(text, write=False), text


# -- parameters ------------------------------------------------------------------------
#: Parameter spellings Kuzu binds, with the name the caller must give.
PARAMS = [("$x", "x"), ("$`x y`", "`x y`"), ("$`a``b`", "`a``b`"), ("$1", "1"),
          ("$Ünï", "Ünï"), ("$x$y", "x$y"), ("$_", "_"), ("$`$`", "`$`")]
#: Text around them that holds no parameter for Kuzu.
DECOYS = ["'$no'", '"$no"', "/* $no */", "// $no\n", "`$no`", "a$no"]


@FAST
@given(chosen=st.lists(st.sampled_from(PARAMS), min_size=1, max_size=4, unique=True),
       decoys=st.lists(st.sampled_from(DECOYS), max_size=4))
def test_parameters_are_the_ones_kuzu_binds(kuzu: Kuzu, chosen: list[tuple[str, str]],
                                            decoys: list[str]) -> None:
    """Every parameter Kuzu binds is found (a missing one is silently NULL, and a WHERE
    on it is dropped), and nothing else is."""
    items = [f"{spelling} AS c{n}" for n, (spelling, _) in enumerate(chosen)]
    items += [f"{decoy.rstrip()} AS d{n}" if decoy[0] in "'\"`a" else f"{decoy} 0 AS d{n}"
              for n, decoy in enumerate(decoys)]
    text = "WITH 0 AS a$no, 0 AS `$no` RETURN " + ", ".join(items)
    names = {name for _, name in chosen}
    assert parameter_names(text) == names
    values = {name: f"v{n}" for n, name in enumerate(sorted(names))}
    result = kuzu.store.cypher(text, values)
    assert [result[0][f"c{n}"] for n in range(len(chosen))] == [values[name] for _, name in
                                                                chosen]


def test_a_backquoted_parameter_without_a_value_is_refused(kuzu: Kuzu) -> None:
    before = kuzu.store.cypher("MATCH (m:Memory) RETURN count(*) AS n")
    with pytest.raises(InvalidInputError, match=r"\$`k`"):
        kuzu.store.cypher("MATCH (m:Memory) WHERE m.id = $`k` SET m.importance = 0.0",
                          {}, write=True)
    assert kuzu.store.cypher("MATCH (m:Memory) RETURN count(*) AS n") == before
