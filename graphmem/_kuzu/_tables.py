"""A store's engine-neutral tables (``_records.TABLE_TYPES``) read from Kuzu a page at a
time, and loaded into it by ``COPY`` from Arrow (``KuzuEngine.read_table``,
``BatchWriter.load``): a copied or restored store without a Python object per row.

Pages follow the sorted ids of memories (their versions, edges and mentions too),
events, entities and facts: Kuzu sorts a whole table for any ``ORDER BY ... SKIP``,
while a range of ids is one filtered scan.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .._arrow import column_values, offsets, validity_bits, vector_array, vector_matrix
from .._engine import EDGE_KINDS, TableName
from .._records import FIELD_COLUMNS, TABLE_TYPES
from ._db import Tx
from ._rows import EDGE_PROPS, EDGE_TABLES, encode_vector, sources_of, sources_text
from ._schema import ENTITY_TYPES, EVENT_TYPES, FACT_TYPES, MEMORY_TYPES, VERSION_TYPES

if TYPE_CHECKING:
    from ._engine import KuzuEngine

__all__ = ["load_table", "read_table"]

_NAIVE = pa.timestamp("us")
#: an edge property its kind does not have, as the neutral table gives it
_ABSENT = {"weight": "CAST(1.0 AS DOUBLE)", "count": "CAST(1 AS INT64)", "source": "''",
           "reason": "''", "at": "CAST(NULL AS TIMESTAMP)"}
_DEFAULT = {"weight": "1.0", "count": "1", "source": "''", "reason": "''"}


def read_table(engine: KuzuEngine, name: TableName, page: int) -> Iterator[pa.Table]:
    """The rows of ``name`` as ``Engine.read_table`` gives them."""
    db = engine.db
    types = TABLE_TYPES[name]

    def pages(ids_query: str, query: str, *, ids: list[str] | None = None,
              adapt: Callable[[pa.Table], pa.Table] | None = None) -> Iterator[pa.Table]:
        ids = ids if ids is not None else column_values(db.read_arrow(ids_query).column(0))
        for start in range(0, len(ids), page):
            found = db.read_arrow(query, {"first": ids[start],
                                          "last": ids[min(len(ids), start + page) - 1]})
            if found.num_rows:
                yield _neutral(adapt(found) if adapt else found, types)

    memory_ids = "MATCH (m:Memory) RETURN m.id ORDER BY m.id"
    within = "WHERE m.id >= $first AND m.id <= $last "
    if name == "memories":
        fields = [f for f in types if f != "vector"]
        columns = ", ".join(f"m.{FIELD_COLUMNS.get(f, f)} AS {f}" for f in fields)
        every = column_values(db.read_arrow(memory_ids).column(0))
        # the vectors' places in the log, found in one pass (a pass a page took ~0.1 s
        # for 200 blocks); a page at a time from the column when the log is not sound
        log = engine._journal.vectors.locate({i: r for r, i in enumerate(every)}, len(every))
        done = 0
        for table in pages(memory_ids, f"MATCH (m:Memory) {within}RETURN {columns} "
                                       "ORDER BY m.id", ids=every):
            ids = column_values(table.column("id"))
            if log is not None and ids == every[done:done + len(ids)]:
                matrix, present = log.take(done, done + len(ids))
            else:
                matrix, present = engine._vectors(ids, paged=True)
            done += len(ids)
            yield table.append_column(pa.field("vector", types["vector"]),
                                      vector_array(matrix, present, len(ids)))
    elif name == "versions":
        columns = ", ".join(f"v.{c} AS {c}" for c in VERSION_TYPES)
        yield from pages(memory_ids, f"MATCH (m:Memory)-[:HAS_VERSION]->(v:Version) {within}"
                                     f"RETURN {columns} ORDER BY v.memory_id, v.seq")
    elif name == "events":
        columns = ", ".join(f"e.{c} AS {c}" for c in EVENT_TYPES)
        yield from pages("MATCH (e:LifecycleEvent) RETURN e.event_id ORDER BY e.event_id",
                         f"MATCH (e:LifecycleEvent) WHERE e.event_id >= $first AND "
                         f"e.event_id <= $last RETURN {columns} ORDER BY e.event_id")
    elif name == "edges":
        live = "AND r.gone IS NULL " if engine._has_gone else ""
        for kind in EDGE_KINDS:
            table = EDGE_TABLES[kind]
            props = EDGE_PROPS[table]
            returned = ", ".join(
                f"{_property(p, props)} AS {p}" for p in ("weight", "count", "source",
                                                          "reason", "at"))
            yield from pages(memory_ids, f"MATCH (m:Memory)-[r:{table}]->(b:Memory) {within}"
                                         f"{live}RETURN '{kind}' AS kind, m.id AS src, b.id "
                                         f"AS dst, {returned} ORDER BY m.id, b.id")
    elif name == "mentions":
        yield from pages(memory_ids, f"MATCH (m:Memory)-[r:MENTIONS]->(e:Entity) {within}"
                                     "AND r.gone IS NULL RETURN m.id AS memory_id, e.id AS "
                                     "entity_id, r.role AS role, r.weight AS weight, "
                                     "r.surface AS surface ORDER BY m.id, e.id")
    elif name == "entities":
        columns = ", ".join(f"e.{c} AS {c}" for c in types)
        yield from pages("MATCH (e:Entity) WHERE e.gone IS NULL RETURN e.id ORDER BY e.id",
                         "MATCH (e:Entity) WHERE e.gone IS NULL AND e.id >= $first AND "
                         f"e.id <= $last RETURN {columns} ORDER BY e.id")
    elif name == "facts":
        yield from pages(
            "MATCH ()-[f:FACT]->() WHERE f.gone IS NULL RETURN DISTINCT f.id ORDER BY f.id",
            "MATCH (a:Entity)-[f:FACT]->(b:Entity) WHERE f.gone IS NULL AND f.id >= $first "
            "AND f.id <= $last RETURN f.id AS id, f.owner AS owner, a.id AS subject, "
            "f.predicate AS predicate, b.id AS object, f.confidence AS confidence, "
            "f.valid_from AS valid_from, f.valid_to AS valid_to, f.recorded AS recorded, "
            "f.sources AS sources, coalesce(f.rule, '') AS rule, f.ended_by AS ended_by "
            "ORDER BY f.id", adapt=_listed_sources)
    else:
        raise ValueError(f"no table {name!r}")


def _property(name: str, props: Sequence[str]) -> str:
    """An edge property as the neutral table gives it (``_ABSENT`` when its kind has
    none; a missing value as its default)."""
    if name not in props:
        return _ABSENT[name]
    return f"coalesce(r.{name}, {_DEFAULT[name]})" if name in _DEFAULT else f"r.{name}"


def _listed_sources(table: pa.Table) -> pa.Table:
    """Facts with their sources as the list the neutral table holds (Kuzu keeps text)."""
    return table.set_column(table.schema.get_field_index("sources"), "sources", pa.array(
        [list(sources_of(t)) for t in table.column("sources").to_pylist()],
        pa.list_(pa.string())))


def _neutral(table: pa.Table, types: dict[str, pa.DataType]) -> pa.Table:
    """Kuzu's result in the neutral layout: naive timestamps as UTC, each column cast to
    its type (a column of nulls, or of constants, comes typed otherwise)."""
    return pa.Table.from_arrays(
        [_cast(table.column(n), types[n]) for n in table.column_names],
        schema=pa.schema([(n, types[n]) for n in table.column_names]))


def _cast(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    if column.type == kind:
        return column
    if _naive(column.type) == _naive(kind):  # the zone alone: the same values (UTC)
        # (a cast would load pyarrow.compute: 0.3 s)
        return pa.chunked_array([c.view(kind) for c in column.chunks], type=kind)
    if pa.types.is_timestamp(kind) and pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp(column.type.unit, tz=column.type.tz or "UTC")
                           ).cast(kind)
    if pa.types.is_list(kind) and pa.types.is_timestamp(kind.value_type) \
            and pa.types.is_list(column.type) and pa.types.is_timestamp(column.type.value_type):
        unit = column.type.value_type.unit
        return column.cast(pa.list_(pa.timestamp(unit, tz="UTC"))).cast(kind)
    return column.cast(kind)


def _naive(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(kind):
        return pa.timestamp(kind.unit)
    if pa.types.is_list(kind) and pa.types.is_timestamp(kind.value_type):
        return pa.list_(pa.timestamp(kind.value_type.unit))
    return kind


# -- loading ---------------------------------------------------------------------------
def load_table(tx: Tx, name: TableName, rows: pa.Table,
               vectors: Callable[[Sequence[str], np.ndarray, np.ndarray], None]) -> None:
    """``rows`` of the neutral table ``name`` into Kuzu by COPY, in ``tx``; the vectors
    of memories go to ``vectors`` as well (the vector log)."""
    if not rows.num_rows:
        return
    if name == "memories":
        ids = column_values(rows.column("id"))
        matrix, present = vector_matrix(rows.column("vector"))
        vectors(ids, matrix, present)
        fields = {FIELD_COLUMNS.get(f, f): f for f in TABLE_TYPES["memories"]}
        columns = {c: (_base64(matrix, present) if c == "vec" else rows.column(fields[c]))
                   for c in MEMORY_TYPES}
        tx.copy("Memory", _kuzu(columns))
    elif name == "versions":
        tx.copy("Version", _kuzu({c: rows.column(c) for c in VERSION_TYPES}))
        tx.copy("HAS_VERSION", _kuzu({"from": rows.column("memory_id"),
                                      "to": rows.column("id")}))
    elif name == "events":
        tx.copy("LifecycleEvent", _kuzu({c: rows.column(c) for c in EVENT_TYPES}))
    elif name == "edges":
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        for kind in EDGE_KINDS:
            some = rows.filter(pc.equal(rows.column("kind"), kind))
            if some.num_rows:
                table = EDGE_TABLES[kind]
                tx.copy(table, _kuzu({"from": some.column("src"), "to": some.column("dst"),
                                      **{p: some.column(p) for p in EDGE_PROPS[table]},
                                      "gone": pa.nulls(some.num_rows, pa.bool_())}))
    elif name == "entities":
        tx.copy("Entity", _kuzu({**{c: rows.column(c) for c in ENTITY_TYPES if c != "gone"},
                                 "gone": pa.nulls(rows.num_rows, pa.bool_())}))
    elif name == "mentions":
        tx.copy("MENTIONS", _kuzu({"from": rows.column("memory_id"),
                                   "to": rows.column("entity_id"),
                                   **{c: rows.column(c) for c in ("role", "weight", "surface")},
                                   "gone": pa.nulls(rows.num_rows, pa.bool_())}))
    elif name == "facts":
        texts = pa.array([sources_text(ids or ()) for ids in rows.column("sources").to_pylist()],
                         pa.string())
        given = {"gone": pa.nulls(rows.num_rows, pa.bool_()), "sources": texts}
        tx.copy("FACT", _kuzu({"from": rows.column("subject"), "to": rows.column("object"),
                               **{c: given[c] if c in given else rows.column(c)
                                  for c in FACT_TYPES}}))
    else:
        raise ValueError(f"no table {name!r}")


def _kuzu(columns: dict[str, Any]) -> pa.Table:
    """Columns for COPY: timestamps naive (Kuzu stores UTC without a zone)."""
    arrays = []
    for column in columns.values():
        kind = column.type
        if pa.types.is_timestamp(kind):
            column = column.cast(_NAIVE)
        elif pa.types.is_list(kind) and pa.types.is_timestamp(kind.value_type):
            column = column.cast(pa.list_(_NAIVE))
        arrays.append(column)
    return pa.Table.from_arrays(arrays, names=list(columns))


def _base64(matrix: np.ndarray, present: np.ndarray) -> pa.Array:
    """Vectors as Kuzu's ``vec`` column holds them (base64 of float32), null where not
    ``present``: one encoding of every vector when a vector's bytes need no padding
    (384 dimensions), else one by one."""
    n, dim = matrix.shape
    if dim and (4 * dim) % 3 == 0:
        width = 4 * dim * 4 // 3
        text = base64.b64encode(np.ascontiguousarray(matrix[present], dtype=np.float32)
                                .tobytes())
        ends = offsets(np.where(present, width, 0))
        buffers = [validity_bits(present), pa.py_buffer(ends), pa.py_buffer(text)]
        return pa.Array.from_buffers(pa.string(), n, buffers)
    from .._arrow import strings

    return strings([encode_vector(matrix[i]) if present[i] else None for i in range(n)])
