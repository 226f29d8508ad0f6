"""A store's engine-neutral tables (``_records.TABLE_TYPES``) read from PostgreSQL a page
at a time through a server-side cursor, and loaded into it by ``COPY``
(``PostgresEngine.read_table``, ``BatchWriter.load``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import array_of, column_values, vector_array, vector_matrix
from .._engine import EDGE_KINDS, TableName
from .._records import FIELD_COLUMNS, MEMORY_COLUMNS, TABLE_TYPES
from ._db import Cursor, Database, copy_rows

__all__ = ["load_table", "read_table"]

_ENTITY = "id, owner, name, type, coalesce(aliases, '{}'), merges, created"
_FACT = ("id, owner, subject, predicate, object, confidence, valid_from, valid_to, "
         "recorded, coalesce(sources, '{}'), coalesce(rule, ''), ended_by")
#: each table's query, its rows in the neutral layout
_QUERIES: dict[str, str] = {
    "memories": "SELECT " + ", ".join(f'"{FIELD_COLUMNS.get(f, f)}"'
                                      for f in TABLE_TYPES["memories"])
                + " FROM memories ORDER BY id",
    "versions": "SELECT " + ", ".join(f'v."{c}"' for c in TABLE_TYPES["versions"])
                + " FROM versions v JOIN memories m ON m.id = v.memory_id "
                  "ORDER BY v.memory_id, v.seq",
    "events": "SELECT " + ", ".join(f'"{c}"' for c in TABLE_TYPES["events"])
              + " FROM events ORDER BY event_id",
    "edges": "SELECT kind, src, dst, CASE WHEN kind = 'supersedes' THEN 1.0::float8 ELSE "
             "weight END, CASE WHEN kind = 'co_occurs' THEN count ELSE 1 END, "
             "coalesce(source, ''), coalesce(reason, ''), at FROM edges "
             "ORDER BY array_position(ARRAY[" + ", ".join(f"'{k}'" for k in EDGE_KINDS)
             + "], kind), src, dst",
    "entities": f"SELECT {_ENTITY} FROM entities ORDER BY id",
    "mentions": "SELECT memory_id, entity_id, role, weight, surface FROM mentions ORDER BY n",
    "facts": f"SELECT {_FACT} FROM facts ORDER BY id",
}


def read_table(db: Database, name: TableName, page: int) -> Iterator[pa.Table]:
    """The rows of ``name`` as ``Engine.read_table`` gives them."""
    types = TABLE_TYPES[name]
    for rows in db.stream(_QUERIES[name], size=page):
        columns = [list(c) for c in zip(*rows, strict=True)]
        arrays = []
        for (column, kind), values in zip(types.items(), columns, strict=True):
            if column == "vector":
                arrays.append(_vectors(values))
            else:
                arrays.append(array_of(values, kind))
        yield pa.Table.from_arrays(arrays, schema=pa.schema(list(types.items())))


def _vectors(values: list[Any]) -> pa.Array:
    loaded = [None if v is None else v.to_numpy() for v in values]
    present = np.array([v is not None for v in loaded], dtype=bool)
    dim = next((len(v) for v in loaded if v is not None), 0)
    matrix = np.zeros((len(loaded), dim), dtype=np.float32)
    for row, vector in enumerate(loaded):
        if vector is not None:
            matrix[row] = vector
    return vector_array(matrix, present, len(loaded))


def load_table(cur: Cursor, name: TableName, rows: pa.Table) -> None:
    """``rows`` of the neutral table ``name`` into PostgreSQL by COPY, in ``cur``'s
    transaction."""
    if not rows.num_rows:
        return
    if name == "memories":
        matrix, present = vector_matrix(rows.column("vector"))
        names = {FIELD_COLUMNS.get(f, f): f for f in TABLE_TYPES["memories"]}
        columns = [[matrix[i] if ok else None for i, ok in enumerate(present)] if c == "vec"
                   else column_values(rows.column(names[c])) for c in MEMORY_COLUMNS]
        copy_rows(cur, "memories", list(MEMORY_COLUMNS), list(zip(*columns, strict=True)))
        return
    values = {c: column_values(rows.column(c)) for c in rows.column_names}
    if name == "edges":  # a kind's own property only, as the store keeps edges
        supersedes = [k == "supersedes" for k in values["kind"]]
        values["source"] = [None if s else v for s, v in zip(supersedes, values["source"],
                                                              strict=True)]
        values["reason"] = [v if s else None for s, v in zip(supersedes, values["reason"],
                                                             strict=True)]
    copy_rows(cur, name, list(values), list(zip(*values.values(), strict=True)))
