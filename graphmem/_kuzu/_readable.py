"""What a user Cypher write must leave readable (``refuse_unreadable``).

graphmem reads every memory, entity, mention, fact and edge of a store when it builds
its recall index, shows a memory, exports or backs up: one row it cannot read (a null
where it needs a value, a time Python cannot hold, text that is not the JSON or base64
it wrote) broke recall, export or backup for every owner, and an edge time out of range
crashed the process. A user write runs in a transaction with this check after it; a row
that fails rolls the write back with an error naming the row and field. What a row must
hold is what a backup's restore checks (``_backup_tables``).

Kuzu 0.11.3 shapes the statements: ``any(x IN list ...)`` over some list columns
crashed the process (a segfault, a double free) and read as null inside CASE, so lists
are read with UNWIND; ``IN $list`` prepared without values crashed, so enums are
written as literals; Kuzu has no ``isnan``, so a number is finite when it lies between
the largest doubles (NaN compares false with every number).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import NoReturn

from .._errors import InvalidInputError
from .._input import owner_problem, stored_json_problem
from .._models import Kind, Status
from .._records import check_merges, sentences_matrix
from ._db import Tx
from ._rows import sources_text, vector_decodes

__all__ = ["refuse_unreadable"]

_KINDS, _STATUSES = [k.value for k in Kind], [s.value for s in Status]
# the first and the last microsecond Python's datetime holds
_EARLIEST, _LATEST = "timestamp('0001-01-01')", "timestamp('9999-12-31 23:59:59.999999')"
_BIG = "1.7976931348623157e308"


def _time(x: str) -> str:
    """A time Python cannot hold (Kuzu can): every recall and export failed, and a plain
    read of the column crashed the process."""
    return f"{x} < {_EARLIEST} OR {x} > {_LATEST}"


def _infinite(x: str) -> str:
    """NaN or an infinity (null passes: the WHERE reads null as false)."""
    return f"NOT ({x} >= -{_BIG} AND {x} <= {_BIG})"


def _enum(x: str, values: list[str], *, null: bool) -> str:
    return (f"{x} IS NULL OR " if not null else "") + f"NOT {x} IN {values!r}"


def _needed(*columns: str, live: bool = False) -> dict[str, tuple[str, str]]:
    """Columns that must hold a value (``live``: while the row is not gone; forget and
    a memory's new text clear a gone row's)."""
    alive = "NOT coalesce(e.gone, false) AND " if live else ""
    return {c: (f"{alive}e.{c} IS NULL", "must be set") for c in columns}


def _finite(*columns: str) -> dict[str, tuple[str, str]]:
    return {f"{c}:finite": (_infinite(f"e.{c}"), "must be a finite number") for c in columns}


def _times(*columns: str) -> dict[str, tuple[str, str]]:
    return {f"{c}:time": (_time(f"e.{c}"), "must be a time in the years 1-9999")
            for c in columns}


#: what is wrong with a text column's value (None: nothing), given the width of the
#: store's vectors (None: not recorded)
_TextCheck = Callable[[str, int | None], str | None]


class _Table:
    """One table's checks: its pattern (binding ``e``), how a failing row is named, and
    per field the condition that fails it and what the field must be."""

    def __init__(self, label: str, pattern: str, name: str,
                 checks: Mapping[str, tuple[str, str]],
                 lists: Mapping[str, bool] | None = None,
                 texts: Mapping[str, _TextCheck] | None = None) -> None:
        self.label, self.pattern, self.name = label, pattern, name
        self.checks = dict(checks)
        self.lists = dict(lists or {})  # list column -> whether it holds times
        self.texts = dict(texts or {})  # text column -> what is wrong with a value

    def named(self, lowered: str) -> dict[str, tuple[str, str]]:
        """The checks of the columns ``lowered`` (a statement) names."""
        return {f: c for f, c in self.checks.items() if f.split(":")[0] in lowered}

    def scalar_query(self, checks: Mapping[str, tuple[str, str]]) -> str:
        conditions = [f"({c})" for c, _ in checks.values()]
        return (f"{self.pattern} WHERE {' OR '.join(conditions)} RETURN {self.name}, "
                + ", ".join(conditions) + " LIMIT 1")


def _json(text: str, _dim: int | None) -> str | None:
    return stored_json_problem(text)


def _vector(text: str, dim: int | None) -> str | None:
    """A vector graphmem wrote: base64 of finite float32 values, as many as the store's
    model gives (a backup refused another width)."""
    if not vector_decodes(text):
        return "must be base64 of finite float32 values"
    if dim is not None and len(text) != 4 * -(-dim * 4 // 3):  # base64 of dim floats
        return f"must hold {dim} values (the store's model)"
    return None


def _sentences(text: str, dim: int | None) -> str | None:
    """Sentence vectors: rows of the store's width, each a vector graphmem wrote."""
    if not vector_decodes(text):
        return "must be base64 of finite float32 values"
    if dim is not None:
        try:
            sentences_matrix(text, dim)
        except ValueError:
            return f"must be rows of {dim} values (the store's model)"
    return None


def _sources(text: str, _dim: int | None) -> str | None:
    """A fact's sources as graphmem writes them (``_rows.sources_text``): the compact
    JSON text of a list of memory ids (a fact is found by its memories' ids in it)."""
    try:
        ids = json.loads(text)
    except ValueError:
        ids = None
    if not (isinstance(ids, list) and all(isinstance(i, str) and i for i in ids)
            and sources_text(ids) == text):
        return _SOURCES
    return None


_SOURCES = ("must be a list of memory ids as JSON text as graphmem writes it "
            "('[\"urn:a\",\"urn:b\"]', a quote, comma, bracket or backslash of an id as "
            "\\uXXXX)")


def _owner(text: str, _dim: int | None) -> str | None:
    """An owner as a call names it (``owner_problem``): a read by one that is not was
    refused, so its memories could be read by their owner no more."""
    return owner_problem(text)


def _merges(text: str, _dim: int | None) -> str | None:
    try:
        check_merges(text)
    except ValueError:
        return "must be a JSON list of objects of strings"
    return None


#: an owner is null (the local user's) or one a call may name (``_owner``); empty is
#: neither, and a backup's restore took it for another owner than null
_OWNER = {"owner:empty": ("e.owner = ''", "must not be empty (null: the local user's)")}
#: text columns of few values over many rows: each value is read and checked once
_DISTINCT = frozenset({"owner"})

_MEMORY = _Table(
    "memory", "MATCH (e:Memory)", "e.id",
    {"kind": (_enum("e.kind", _KINDS, null=False), "must be one of " + ", ".join(_KINDS)),
     "status": (_enum("e.status", _STATUSES, null=False),
                "must be one of " + ", ".join(_STATUSES)),
     "prev_kind": (_enum("e.prev_kind", _KINDS, null=True),
                   "must be one of " + ", ".join(_KINDS) + " (or null)"),
     "prev_status": (_enum("e.prev_status", _STATUSES, null=True),
                     "must be one of " + ", ".join(_STATUSES) + " (or null)"),
     **_needed("created", "modified", "importance", "original_importance", "confidence",
               "access_count", "useful_count", "ignored_count"),
     **_finite("centrality"),
     **_OWNER,
     # the API's own bounds: scores in [0, 1], counters that a float holds exactly (a
     # count of 2**63 - 1 made the next feedback fail; a score of 1e308 the lifecycle)
     **{f"{c}:unit": (f"NOT (e.{c} >= 0.0 AND e.{c} <= 1.0)", "must be in [0, 1]")
        for c in ("importance", "original_importance", "confidence")},
     **{f"{c}:count": (f"e.{c} < 0 OR e.{c} > {2**53}", "must be a count from 0 to 2**53")
        for c in ("access_count", "useful_count", "ignored_count")},
     **_times("created", "modified", "observed", "valid_from", "valid_to", "last_accessed",
              "payload_at", "state_changed")},
    lists={"tags": False, "entities": False, "superseded_by": False, "access_times": True,
           "times_from": True, "times_to": True},
    texts={"provenance": _json, "integrity": _json, "ump": _json, "vec": _vector,
           "sentences": _sentences, "owner": _owner})
#: the knowledge graph's tables and the edges, checked when a statement names them
_OTHERS = {
    "entity": _Table(
        "entity", "MATCH (e:Entity)", "e.id",
        {**_needed("name", "type", "aliases", "merges", live=True), **_times("created"),
         **_OWNER},
        lists={"aliases": False}, texts={"merges": _merges, "owner": _owner}),
    "fact": _Table(
        "fact", "MATCH (:Entity)-[e:FACT]->(:Entity)", "e.id",
        {**_needed("id", "predicate", "recorded", "sources", "confidence", live=True),
         **_finite("confidence"), **_times("valid_from", "valid_to", "recorded"), **_OWNER,
         # an empty text is no list (the text checks below read non-empty ones)
         "sources:text": ("e.sources = ''", _SOURCES)},
        texts={"sources": _sources, "owner": _owner}),
    "mentions": _Table(
        "mention", "MATCH (m:Memory)-[e:MENTIONS]->(x:Entity)", "m.id + ' -> ' + x.id",
        {**_needed("role", "surface", "weight", live=True), **_finite("weight")}),
    **{label: _Table(
        "edge", f"MATCH (m:Memory)-[e:{label.upper()}]->(x:Memory)", "m.id + ' -> ' + x.id",
        {**_needed("weight", live=True), **_finite("weight"), **_times("at")})
       for label in ("references", "co_occurs")},
    "supersedes": _Table(
        "edge", "MATCH (m:Memory)-[e:SUPERSEDES]->(x:Memory)", "m.id + ' -> ' + x.id",
        _times("at")),
}


#: Rows that must agree with the rows they join (what a backup's restore checks): a
#: mention joins a memory and an entity of one owner, a fact entities of its own owner,
#: and nothing live mentions an entity that is gone. Checked when a statement names a
#: word of ``needs``: label -> (the table named in the error, needs, the query finding a
#: row that does not, what it must).
_JOINS = {
    "owner": (_MEMORY, ("owner", "mentions"),
              "MATCH (e:Memory)-[r:MENTIONS]->(x:Entity) WHERE NOT coalesce(r.gone, false) "
              "AND coalesce(e.owner, '') <> coalesce(x.owner, '') RETURN e.id LIMIT 1",
              "must be the owner of the entities it mentions (Cypher moves neither "
              "memories nor entities between owners)"),
    "entities' owner": (_OTHERS["fact"], ("owner", "fact"),
                        "MATCH (a:Entity)-[e:FACT]->(b:Entity) WHERE NOT coalesce(e.gone, "
                        "false) AND NOT (coalesce(e.owner, '') = coalesce(a.owner, '') AND "
                        "coalesce(a.owner, '') = coalesce(b.owner, '')) RETURN e.id LIMIT 1",
                        "must be the fact's owner"),
    "gone": (_OTHERS["entity"], ("gone", "mentions"),
             "MATCH (:Memory)-[r:MENTIONS]->(e:Entity) WHERE e.gone AND NOT "
             "coalesce(r.gone, false) RETURN e.id LIMIT 1",
             "must stay unset while memories mention the entity"),
}


def _store_dim(tx: Tx) -> int | None:
    """The width of the store's vectors, as recorded (None: not recorded)."""
    found = tx.run("MATCH (x:Meta {key: 'embedder_dim'}) RETURN x.value")
    return int(found[0][0]) if found and str(found[0][0]).isdigit() else None


def _tables(lowered: str) -> list[_Table]:
    """The tables a statement (``lowered``) can change: memories, and those it names."""
    return [_MEMORY, *(t for label, t in _OTHERS.items() if label in lowered)]


def values_before(tx: Tx, query: str) -> dict[tuple[str, str], frozenset[str]]:
    """Before a user write, the values of the few-valued columns it names (``_DISTINCT``:
    owners) in each table it can change: a value there already was not made by the write
    (a store restored from an older version may hold an owner no call may name now, and
    an unrelated write should not be refused for it)."""
    lowered = query.lower()
    out: dict[tuple[str, str], frozenset[str]] = {}
    for table in _tables(lowered):
        for column in (c for c in table.texts if c in _DISTINCT and c in lowered):
            out[table.label, column] = frozenset(
                str(v) for (v,) in tx.run(f"{table.pattern} WHERE e.{column} IS NOT NULL "
                                           f"RETURN DISTINCT e.{column}"))
    return out


def refuse_unreadable(tx: Tx, query: str,
                      before: Mapping[tuple[str, str], frozenset[str]] | None = None) -> None:
    """Refuse (rolling the write back) a user write that leaves a row graphmem cannot
    read, or a memory it did not make. A memory's column is read when the statement
    names it (only such a statement can change it), another table when the statement
    names the table: each a scan of its table (~5 ms at 10k rows; a named ``vec``
    ~150 ms, decoded in Python)."""
    if "Memory" in tx.lists.wholly:  # the statement created memories
        raise InvalidInputError(
            "a Cypher write may not create memories: add them with add(), import or the "
            "API, which give each its vector and version history; nothing was changed",
            field="query")
    lowered = query.lower()
    for table in _tables(lowered):
        # no statement creates a memory (refused above), so a memory's column changes
        # only where the statement names it; another table's new rows hold whatever the
        # statement gave them
        checks = table.named(lowered) if table is _MEMORY else table.checks
        rows = tx.run(table.scalar_query(checks)) if checks else []
        if rows:
            row_id, *failed = rows[0]
            field, (_, must) = next(item for item, bad in zip(
                checks.items(), failed, strict=True) if bad)
            _unreadable(table, row_id, field.split(":")[0], must)
        for column in (c for c in table.lists if c in lowered):
            bad = "x IS NULL" + (f" OR {_time('x')}" if table.lists[column] else "")
            rows = tx.run(f"{table.pattern} UNWIND e.{column} AS x WITH e, x WHERE {bad} "
                          f"RETURN {table.name}, x IS NULL LIMIT 1")
            if rows:
                _unreadable(table, rows[0][0], column, "must hold no null items"
                            if rows[0][1] else "must hold times in the years 1-9999")
        named = [c for c in table.texts if c in lowered]
        dim = _store_dim(tx) if {"vec", "sentences"} & set(named) else None
        for column in named:
            if column in _DISTINCT:
                values = tx.run(f"{table.pattern} WHERE e.{column} IS NOT NULL AND "
                                f"e.{column} <> '' RETURN DISTINCT e.{column}")
                known = (before or {}).get((table.label, column), frozenset())
                for (value,) in values:
                    if value in known:  # there before the write (``values_before``)
                        continue
                    wrong = table.texts[column](value, dim)
                    if wrong is not None:
                        rows = tx.run(f"{table.pattern} WHERE e.{column} = $v RETURN "
                                      f"{table.name} LIMIT 1", {"v": value})
                        _unreadable(table, rows[0][0], column, wrong)
                continue
            # read here as graphmem reads them (Kuzu has no JSON test without its
            # extension, and no base64)
            for row_id, text in tx.run(f"{table.pattern} WHERE e.{column} IS NOT NULL AND "
                                       f"e.{column} <> '' RETURN {table.name}, e.{column}"):
                wrong = table.texts[column](text, dim)
                if wrong is not None:
                    _unreadable(table, row_id, column, wrong)
    for label, (table, needs, query, must) in _JOINS.items():
        if any(word in lowered for word in needs) and (rows := tx.run(query)):
            _unreadable(table, rows[0][0], label, must)


def _unreadable(table: _Table, row_id: str, field: str, must: str) -> NoReturn:
    raise InvalidInputError(f"the write would leave {table.label} {row_id!r} unreadable: "
                            f"its {field} {must}; nothing was changed", field="query")
