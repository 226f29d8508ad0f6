"""What a user Cypher write must leave readable (``refuse_unreadable``).

graphmem reads every memory, entity, mention and fact of a store when it builds its
recall index: one row it cannot read (a null where it needs a value, a time Python
cannot hold, text that is not the JSON or base64 it wrote) broke recall, show and export
for every owner. A user write runs in a transaction with this check after it; a row that
fails rolls the write back with an error naming the row and field.

Kuzu 0.11.3 shapes the statements: ``any(x IN list ...)`` over some list columns
crashed the process (a segfault, a double free) and read as null inside CASE, so lists
are read with UNWIND; ``IN $list`` prepared without values crashed, so enums are
written as literals; Kuzu has no ``isnan``, so a number is finite when it lies between
the largest doubles (NaN compares false with every number).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from .._errors import InvalidInputError
from .._models import Kind, Status
from ._db import Tx
from ._rows import vector_decodes

__all__ = ["refuse_unreadable"]

_KINDS, _STATUSES = [k.value for k in Kind], [s.value for s in Status]
_EARLIEST, _LATEST = "timestamp('0001-01-01')", "timestamp('9999-12-31 23:59:59')"
_BIG = "1.7976931348623157e308"


def _time(x: str) -> str:
    """A time Python cannot hold (Kuzu can): every recall and export failed, and a plain
    read of the column crashed the process."""
    return f"{x} < {_EARLIEST} OR {x} >= {_LATEST}"


def _infinite(x: str) -> str:
    """NaN or an infinity (null passes: the WHERE reads null as false)."""
    return f"NOT ({x} >= -{_BIG} AND {x} <= {_BIG})"


_MUST = {"enum": "", "set": "be set", "time": "be a time in the years 1-9999",
         "finite": "be a finite number", "items": "hold no null items",
         "item_times": "hold times in the years 1-9999"}


class _Table:
    """One table's checks: its pattern (binding ``e``), how a failing row is named, and
    per field the condition that fails it and what the field must be."""

    def __init__(self, label: str, pattern: str, name: str,
                 checks: Mapping[str, tuple[str, str]],
                 lists: Mapping[str, bool] | None = None,
                 texts: Mapping[str, Callable[[str], str | None]] | None = None) -> None:
        self.label, self.pattern, self.name = label, pattern, name
        self.checks = dict(checks)
        self.lists = dict(lists or {})  # list column -> whether it holds times
        self.texts = dict(texts or {})  # text column -> what it must be (None: fine)

    def scalar_query(self) -> str:
        conditions = [f"({c})" for c, _ in self.checks.values()]
        return (f"{self.pattern} WHERE {' OR '.join(conditions)} RETURN {self.name}, "
                + ", ".join(conditions) + " LIMIT 1")


def _json_object(text: str) -> str | None:
    return None if isinstance(_loads(text), dict) else "be a JSON object (or null)"


def _json_array(text: str) -> str | None:
    return None if isinstance(_loads(text), list) else "be a JSON array (or null)"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None


def _vector(text: str) -> str | None:
    return None if vector_decodes(text) else "be base64 of finite float32 values (or null)"


_MEMORY_TIMES = ("created", "modified", "observed", "valid_from", "valid_to", "last_accessed")
_MEMORY = _Table(
    "memory", "MATCH (e:Memory)", "e.id",
    {"kind": (f"e.kind IS NULL OR NOT e.kind IN {_KINDS!r}", "enum"),
     "status": (f"e.status IS NULL OR NOT e.status IN {_STATUSES!r}", "enum"),
     **{c: (f"e.{c} IS NULL", "set") for c in (
         "created", "modified", "importance", "original_importance", "confidence",
         "access_count", "useful_count", "ignored_count")},
     **{f"{c}:finite": (_infinite(f"e.{c}"), "finite") for c in (
         "importance", "original_importance", "confidence", "centrality")},
     **{f"{c}:time": (_time(f"e.{c}"), "time") for c in _MEMORY_TIMES}},
    lists={"tags": False, "entities": False, "superseded_by": False, "access_times": True,
           "times_from": True, "times_to": True},
    texts={"provenance": _json_object, "integrity": _json_object, "ump": _json_object,
           "vec": _vector})
#: the knowledge graph's tables, checked when a statement names them
_GRAPH = {
    "entity": _Table(
        "entity", "MATCH (e:Entity)", "e.id",
        {"name": ("e.name IS NULL", "set"), "created:time": (_time("e.created"), "time")},
        lists={"aliases": False}, texts={"merges": _json_array}),
    "fact": _Table(
        "fact", "MATCH (:Entity)-[e:FACT]->(:Entity)", "e.id",
        {"predicate": ("e.predicate IS NULL", "set"),
         "confidence:finite": (_infinite("e.confidence"), "finite"),
         **{f"{c}:time": (_time(f"e.{c}"), "time")
            for c in ("valid_from", "valid_to", "recorded")}},
        lists={"sources": False}),
    "mentions": _Table(
        "mention", "MATCH (m:Memory)-[e:MENTIONS]->(x:Entity)", "m.id + ' -> ' + x.id",
        {"weight": (f"e.weight IS NULL OR {_infinite('e.weight')}", "finite")}),
    **{label: _Table(
        "edge", f"MATCH (m:Memory)-[e:{label.upper()}]->(x:Memory)", "m.id + ' -> ' + x.id",
        {"weight:finite": (_infinite("e.weight"), "finite"),
         "at:time": (_time("e.at"), "time")})
       for label in ("references", "co_occurs")},
}


def refuse_unreadable(tx: Tx, query: str) -> None:
    """Refuse (rolling the write back) a user write that leaves a row graphmem cannot
    read. Memory's scalar columns are read after every write (one scan); another table
    when the statement names it, and a list or text column of it when the statement
    names the column (only such a statement can change it): each a scan of its table
    (~5 ms at 10k)."""
    lowered = query.lower()
    tables = [_MEMORY, *(t for label, t in _GRAPH.items() if label in lowered)]
    for table in tables:
        rows = tx.run(table.scalar_query())
        if rows:
            row_id, *failed = rows[0]
            field, (_, must) = next(item for item, bad in zip(
                table.checks.items(), failed, strict=True) if bad)
            if must == "enum":
                _unreadable(table, row_id, field, "be one of " + ", ".join(
                    _KINDS if field == "kind" else _STATUSES))
            _unreadable(table, row_id, field.split(":")[0], _MUST[must])
        for column in (c for c in table.lists if c in lowered):
            bad = "x IS NULL" + (f" OR {_time('x')}" if table.lists[column] else "")
            rows = tx.run(f"{table.pattern} UNWIND e.{column} AS x WITH e, x WHERE {bad} "
                          f"RETURN {table.name}, x IS NULL LIMIT 1")
            if rows:
                _unreadable(table, rows[0][0], column,
                            _MUST["items" if rows[0][1] else "item_times"])
        for column in (c for c in table.texts if c in lowered):
            # read here as graphmem reads them (Kuzu has no JSON test without its
            # extension, and no base64)
            for row_id, text in tx.run(f"{table.pattern} WHERE e.{column} IS NOT NULL AND "
                                       f"e.{column} <> '' RETURN {table.name}, e.{column}"):
                wrong = table.texts[column](text)
                if wrong is not None:
                    _unreadable(table, row_id, column, wrong)


def _unreadable(table: _Table, row_id: str, field: str, must: str) -> NoReturn:
    raise InvalidInputError(f"the write would leave {table.label} {row_id!r} unreadable: "
                            f"its {field} must {must}; nothing was changed", field="query")
