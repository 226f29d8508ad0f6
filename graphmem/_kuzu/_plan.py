"""The second wall in front of user Cypher: what Kuzu's own plan of a statement may hold,
checked before it runs, so that a statement the guard (``_guard``) misread still cannot
read or write a file, change a setting or the schema, or touch the history.

``_db`` plans the statement (one statement: Kuzu refuses to prepare several), asks
Kuzu for its physical plan (``EXPLAIN``) and hands the plan's text to ``PlanCheck``:
every operator must be one a read (or, with ``write``, a data write) uses, every table
function one of the catalogue and index functions, and a write may not scan a log table.
Two checks read the raw text instead of tokens (so they hold whatever a lexer makes of
it): a write that names a log table anywhere, even in a string, is refused (a label is the
only way to reach one without scanning every table, which the plan shows), and so is
text naming EXPORT ... DATABASE (Kuzu creates the export's directory while planning it).

A plan's text and a planner's message can quote a file (binding ``LOAD FROM`` reads its
header): neither reaches the caller when the statement mentions file input, and such a
refusal reads the same whether the file exists or not.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .._errors import GraphmemError, InvalidInputError

__all__ = ["LOG_TABLES", "READ_FUNCTIONS", "PlanCheck"]

#: Table functions a read may CALL (catalogue views and index queries; none writes).
READ_FUNCTIONS = frozenset({
    "show_tables", "table_info", "show_connection", "db_version", "show_functions",
    "show_indexes", "show_macros", "show_warnings", "show_sequences",
    "show_projected_graphs", "query_fts_index", "query_vector_index",
})
#: Tables that graphmem alone writes: the append-only history, the audit log, its own
#: (``change``: the ring of recent writes by which other processes follow this one).
LOG_TABLES = frozenset({"version", "lifecycleevent", "has_version", "meta", "stage",
                        "change"})

#: Physical operators of reading statements (Kuzu 0.11.3's names).
_READ_OPERATORS = frozenset({
    "RESULT_COLLECTOR", "PROJECTION", "FILTER", "FLATTEN", "LIMIT", "SKIP", "UNWIND",
    "SCAN_NODE_TABLE", "SCAN_REL_TABLE", "PRIMARY_KEY_SCAN_NODE_TABLE", "RECURSIVE_EXTEND",
    "PATH_PROPERTY_PROBE", "SEMI_MASKER", "MULTIPLICITY_REDUCER", "AGGREGATE",
    "AGGREGATE_FINALIZE", "AGGREGATE_SCAN", "HASH_JOIN_BUILD", "HASH_JOIN_PROBE",
    "INTERSECT_BUILD", "INTERSECT", "CROSS_PRODUCT", "ORDER_BY", "ORDER_BY_MERGE",
    "ORDER_BY_SCAN", "TOP_K", "TOP_K_SCAN", "UNION_ALL_SCAN", "EMPTY_RESULT", "DUMMY_SINK",
    "TABLE_FUNCTION_CALL",
})
#: ... and of data writes; DELETE is not among them (forget and tombstone remove
#: memories), nor are variable-length patterns, whose plan does not name the tables
#: they walk.
_WRITE_OPERATORS = (_READ_OPERATORS - {"RECURSIVE_EXTEND", "PATH_PROPERTY_PROBE"}) \
    | {"INSERT", "SET_PROPERTY", "MERGE"}
#: READ_FTABLE reads back a result Kuzu itself materialised.
_PLAN_FUNCTIONS = frozenset({name.upper() for name in READ_FUNCTIONS} | {"READ_FTABLE"})

_OPERATOR = re.compile(r"([A-Z][A-Z_]*)\[[0-9]+\]")
_FUNCTION = re.compile(r"Function: ([A-Za-z0-9_]+)")
_CELL = re.compile(r"│")
_LOG_NAME = re.compile(r"(?<!\w)(?:" + "|".join(sorted(LOG_TABLES)) + r")(?!\w)",
                       re.IGNORECASE)
_EXPORT = re.compile(r"(?<!\w)export(?!\w).*(?<!\w)database(?!\w)", re.IGNORECASE | re.DOTALL)
#: Words of statements that read files while Kuzu plans them (LOAD FROM, COPY FROM,
#: IMPORT DATABASE, LOAD EXTENSION, ATTACH, the READ_* and JSON_SCAN table functions).
#: ``(?<!\w)``: a letter, digit or ``_`` before a keyword makes it part of a longer name
#: for Kuzu as well (``importance`` is no IMPORT).
_FILE_WORDS = re.compile(r"(?<!\w)(?:(?:load|copy|import|export|attach|install|extension)(?!\w)"
                         r"|read_|json_scan)", re.IGNORECASE)
_FILE_REFUSAL = ("this statement mentions file input (LOAD, COPY, IMPORT, ATTACH, READ_...) "
                 "and Kuzu did not plan it as a query of the graph, so it does not run and "
                 "Kuzu's message is not shown; ad-hoc Cypher may not read files")


def _refuse(message: str) -> InvalidInputError:
    return InvalidInputError(message, field="query")


@dataclass(frozen=True)
class PlanCheck:
    """The checks of wall two for one statement; ``write`` allows data writes."""

    query: str
    write: bool

    @property
    def key(self) -> tuple[bytes, bool]:
        """What a verdict on this statement holds for (its text's digest and the mode)."""
        return hashlib.blake2b(self.query.encode("utf-8"), digest_size=16).digest(), self.write

    def check_text(self) -> None:
        """The checks of the raw text, made before Kuzu plans anything (whatever a lexer
        made of it)."""
        if _EXPORT.search(self.query):
            raise _refuse("the query names EXPORT and DATABASE: ad-hoc Cypher may not export "
                          "the database (pass such text as a $parameter)")
        if self.write and (found := _LOG_NAME.search(self.query)):
            raise _refuse(f"an ad-hoc write may not name {found.group(0)}, graphmem's "
                          "append-only history or its own bookkeeping, anywhere in its text "
                          "(pass such text as a $parameter)")

    def failed(self, message: str) -> GraphmemError | None:
        """The error to raise for Kuzu's ``message`` when planning failed (None: the
        usual mapping). A planner's message can quote a file the statement names."""
        if message.startswith("Parser exception") or not _FILE_WORDS.search(self.query):
            return None
        return _refuse(_FILE_REFUSAL)

    def check(self, plan: str) -> None:
        """Refuse a plan that holds an operator or function outside the mode's allowlist,
        or a write that scans a log table; the message never quotes the plan."""
        allowed = _WRITE_OPERATORS if self.write else _READ_OPERATORS
        operators = set(_OPERATOR.findall(plan))
        functions = set(_FUNCTION.findall(plan))
        bad = sorted(operators - allowed) + sorted(functions - _PLAN_FUNCTIONS)
        if bad and _FILE_WORDS.search(self.query):
            raise _refuse(_FILE_REFUSAL)
        if bad:
            raise _refuse(f"Kuzu's plan of this statement holds {', '.join(bad)}, which "
                          f"ad-hoc Cypher {'writes' if self.write else 'reads'} may not use "
                          "(file I/O, settings, transactions, schema changes"
                          f"{', deletes and variable-length patterns' if self.write else ''}"
                          f"{'' if self.write else ' and writes'})")
        if self.write:
            for cell in _CELL.split(plan):
                name = cell.strip().removeprefix("Tables: ").strip().lower()
                if name in LOG_TABLES:
                    raise _refuse(f"this write reads {name}, graphmem's append-only history "
                                  "or its own bookkeeping (label every node and "
                                  "relationship it matches)")
