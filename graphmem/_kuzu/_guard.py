"""The gate in front of Cypher that graphmem did not write itself (``store.cypher``, named
queries): one statement, and only the clauses its mode allows.

Kuzu's ``READ ONLY`` transaction is not a sandbox: a second statement after ``COMMIT``
runs outside it, and ``COPY ... TO``, ``LOAD FROM``, ``EXPORT``/``IMPORT DATABASE``,
``ATTACH``, ``LOAD EXTENSION`` (native code) and ``CALL <setting>=...`` all run inside it
(each tried against 0.11.3). So the text is checked first, by an allowlist over its
tokens (strings, quoted names and comments left out), and a read still runs in a
read-only transaction on its own connection as a second wall.

Read mode: one statement made of reading clauses (MATCH, OPTIONAL MATCH, WHERE, WITH,
UNWIND, RETURN, ORDER BY, SKIP, LIMIT, UNION) and ``CALL`` of the catalogue and index
functions in ``READ_FUNCTIONS``. Write mode adds CREATE, MERGE, SET, DELETE, DETACH DELETE,
REMOVE on the data tables; never DDL, file I/O, extensions, attached databases, settings,
transaction control, or a write to the append-only logs (``Version``, ``LifecycleEvent``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._errors import InvalidInputError, ReadOnlyStoreError

__all__ = ["LOG_TABLES", "READ_FUNCTIONS", "CheckedQuery", "check_user_query"]

#: Table functions a read may CALL (catalogue views and index queries; none writes).
READ_FUNCTIONS = frozenset({
    "show_tables", "table_info", "show_connection", "db_version", "show_functions",
    "show_indexes", "show_macros", "show_warnings", "current_setting", "show_sequences",
    "show_projected_graphs", "query_fts_index", "query_vector_index",
})
#: Tables that graphmem alone writes: the append-only history, the audit log, its own.
LOG_TABLES = frozenset({"version", "lifecycleevent", "has_version", "meta", "stage"})

_WRITE_CLAUSES = frozenset({"create", "merge", "set", "delete", "detach", "remove"})
#: Words that never pass, in either mode (file I/O, extensions, databases, settings,
#: transactions, schema changes).
_NEVER = frozenset({
    "copy", "load", "export", "import", "attach", "use", "install", "uninstall",
    "commit", "rollback", "begin", "checkpoint", "drop", "alter", "transaction",
    "extension", "database", "macro", "sequence", "profile", "explain",
})
_DDL_AFTER_CREATE = frozenset({"node", "rel", "relationship", "macro", "sequence", "type",
                               "graph"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class CheckedQuery:
    """A user query that passed the gate: its text and whether it writes."""

    text: str
    writes: bool


def _refuse(message: str) -> InvalidInputError:
    return InvalidInputError(message, field="query")


def _tokens(query: str) -> list[tuple[str, str]]:
    """(kind, value) tokens: "word" (lowercased), "punct" (one character); strings,
    backquoted names and comments are dropped, each leaving a "lit" placeholder."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch in ("'", '"', "`"):
            j = i + 1
            while j < n and query[j] != ch:
                j += 2 if query[j] == "\\" else 1
            if j >= n:
                raise _refuse("the query has an unterminated string or quoted name")
            out.append(("lit", "`" if ch == "`" else "'"))
            i = j + 1
        elif query.startswith("//", i):
            j = query.find("\n", i)
            i = n if j < 0 else j + 1
        elif query.startswith("/*", i):
            j = query.find("*/", i + 2)
            if j < 0:
                raise _refuse("the query has an unterminated comment")
            i = j + 2
        elif ch.isspace():
            i += 1
        else:
            match = _WORD.match(query, i)
            if match:
                out.append(("word", match.group(0).lower()))
                i = match.end()
            else:
                out.append(("punct", ch))
                i += 1
    return out


def check_user_query(query: str, *, write: bool) -> CheckedQuery:
    """Check one user query against the mode's allowlist; a clear ``InvalidInputError``
    names what is refused and why."""
    tokens = _tokens(query)
    while tokens and tokens[-1] == ("punct", ";"):
        tokens.pop()
    if not tokens:
        raise _refuse("the query is empty")
    if ("punct", ";") in tokens:
        raise _refuse("one statement per query: remove the ';' and what follows it")
    writes = False
    for n, (kind, value) in enumerate(tokens):
        if kind != "word":
            continue
        before = tokens[n - 1] if n else ("", "")
        after = tokens[n + 1] if n + 1 < len(tokens) else ("", "")
        if before in (("punct", "."), ("punct", ":"), ("punct", "$")) or after == ("punct", ":"):
            continue  # a property, a label, a parameter or a map key: a name, not a clause
        if value in _NEVER:
            raise _refuse(f"{value.upper()} is not allowed here: ad-hoc Cypher may not touch "
                          "files, extensions, other databases, settings, transactions or "
                          "the schema")
        if value == "call":
            name = after[1] if after[0] == "word" else ""
            if name not in READ_FUNCTIONS:
                raise _refuse(f"CALL {name or '...'} is not allowed; the functions a query "
                              f"may call are {', '.join(sorted(READ_FUNCTIONS))}")
            if tokens[n + 2:n + 3] != [("punct", "(")]:
                raise _refuse(f"CALL {name} must be called with parentheses")
        if value in _WRITE_CLAUSES:
            if value == "create" and after[0] == "word" and after[1] in _DDL_AFTER_CREATE:
                raise _refuse("CREATE of tables, macros or sequences is not allowed: the "
                              "schema belongs to graphmem's migrations")
            if value in ("detach", "delete") and write:
                raise _refuse(f"{value.upper()} is not allowed in ad-hoc writes: forget "
                              "(hard delete) and tombstone remove memories with their "
                              "history, and a deleted relationship corrupts Kuzu 0.11.3's "
                              "storage")
            if not write:
                raise ReadOnlyStoreError(
                    f"{value.upper()} writes, and ad-hoc Cypher is read-only unless you ask "
                    "for a write (write=True, or --write on the command line): a write "
                    "bypasses the version history and is recorded as an audit event")
            writes = True
    if writes:
        _check_write_targets(tokens)
    return CheckedQuery(text=query, writes=writes)


_PATTERN_START = frozenset({"match", "create", "merge"})


def _check_write_targets(tokens: list[tuple[str, str]]) -> None:
    """A write names every table it matches, and none of the log tables: an unlabelled
    ``(n)`` or ``-[r]-`` matches every table, the append-only ones too."""
    for n, (kind, value) in enumerate(tokens):
        if kind == "word" and value in LOG_TABLES and n \
                and tokens[n - 1] in (("punct", ":"), ("punct", "|")):
            raise _refuse(f"{value} is graphmem's append-only history or its own "
                          "bookkeeping; ad-hoc writes may not touch it")
        before = tokens[n - 1] if n else ("", "")
        node = value == "(" and (before[1] in _PATTERN_START or before in (
            ("punct", ","), ("punct", "-"), ("punct", ">"), ("punct", "<")))
        rel = value == "[" and before in (("punct", "-"), ("punct", "<"))
        if kind != "punct" or not (node or rel):
            continue
        rest = tokens[n + 1:n + 3]
        if rest and rest[0][0] == "word":
            rest = rest[1:]
        if not rest or rest[0] != ("punct", ":"):
            raise _refuse("a write query must label every node and relationship it matches "
                          "(e.g. (m:Memory), -[r:REFERENCES]->), so that it cannot reach "
                          "the version history or the audit log")
