"""The tables of a backup (format 2): a store as graphmem's own records, one Parquet file a
kind of record, read from any engine through the port and written into any engine
through it.

``write_tables`` reads the store (inside the engine's snapshot, for a consistent copy)
and writes the files of ``TABLES``. ``load_tables`` reads them back as untrusted input:
each file's columns and types must be those of ``TABLES``, required values must be
there, every row must make graphmem's type (which checks its values), and what a row
names must be in the backup (the memory of a version, an edge or a mention; the
entities of a mention or a fact); the records are written into the new store in one
transaction, a batch at a time, and any fault names the file (and the record) and leaves
that transaction uncommitted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
import pyarrow as pa

from ._arrow import array_of, parquet_batches, to_pylist
from ._engine import (
    EDGE_KINDS,
    EdgeRecord,
    Engine,
    EntityRecord,
    FactRecord,
    MentionRecord,
    WriteBatch,
)
from ._errors import GraphmemError, StoreError
from ._models import Version
from ._records import (
    EVENT_COLUMNS,
    FIELD_COLUMNS,
    MEMORY_COLUMNS,
    VERSION_COLUMNS,
    arrow_type,
    aware,
    event_from_values,
    event_row,
    merges_text,
    version_from_values,
    version_row,
)
from ._transfer import ENGINE_META, MEMORY_FIELDS, check_empty, graph_batch, memory_batch

__all__ = ["TABLES", "TABLE_VERSION", "Loaded", "load_tables", "write_tables"]

#: The layout of the tables (a format-2 manifest's ``schema_version``).
TABLE_VERSION = 1
#: Rows read or written per batch: a memory row with its vector is ~3 KB.
BATCH_ROWS = 20_000

_STR, _FLOAT, _INT, _TIME = pa.string(), pa.float64(), pa.int64(), pa.timestamp("us", "UTC")
_STRINGS = pa.list_(pa.string())
_VECTOR = pa.list_(pa.float32())


@dataclass(frozen=True)
class Table:
    """One file of a backup: its columns and their Arrow types, and the columns that
    must hold a value in every row."""

    file: str
    types: Mapping[str, pa.DataType]
    required: frozenset[str]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(self.types.items()))


def _table(file: str, types: Mapping[str, pa.DataType], required: set[str] | None = None
           ) -> Table:
    return Table(file, dict(types), frozenset(types if required is None else required))


MEMORIES = _table("memories.parquet", {
    **{f: arrow_type(MEMORY_COLUMNS[FIELD_COLUMNS.get(f, f)])
       for f in MEMORY_FIELDS if f != "vector"},
    "vector": _VECTOR}, {"id"})
VERSIONS = _table("versions.parquet", {c: arrow_type(t) for c, t in VERSION_COLUMNS.items()},
                  {"id", "memory_id"})
EVENTS = _table("events.parquet", {c: arrow_type(t) for c, t in EVENT_COLUMNS.items()},
                {"event_id"})
EDGES = _table("edges.parquet", {
    "kind": _STR, "src": _STR, "dst": _STR, "weight": _FLOAT, "count": _INT, "source": _STR,
    "reason": _STR, "at": _TIME}, {"kind", "src", "dst", "weight", "count", "source", "reason"})
ENTITIES = _table("entities.parquet", {
    "id": _STR, "owner": _STR, "name": _STR, "type": _STR, "aliases": _STRINGS,
    "merges": _STR, "created": _TIME}, {"id", "name", "type", "aliases", "merges"})
MENTIONS = _table("mentions.parquet", {
    "memory_id": _STR, "entity_id": _STR, "role": _STR, "weight": _FLOAT, "surface": _STR})
FACTS = _table("facts.parquet", {
    "id": _STR, "owner": _STR, "subject": _STR, "predicate": _STR, "object": _STR,
    "confidence": _FLOAT, "valid_from": _TIME, "valid_to": _TIME, "recorded": _TIME,
    "sources": _STRINGS, "rule": _STR, "ended_by": _STR},
    {"id", "subject", "predicate", "object", "confidence", "recorded", "sources", "rule"})
META = _table("meta.parquet", {"key": _STR, "value": _STR})
#: Every file of a format-2 backup.
TABLES: tuple[Table, ...] = (MEMORIES, VERSIONS, EVENTS, EDGES, ENTITIES, MENTIONS, FACTS,
                             META)

Opener = Callable[[str], IO[bytes]]


# -- writing -----------------------------------------------------------------------------
def write_tables(engine: Engine, directory: Path) -> None:
    """Write the store of ``engine`` into ``directory`` (new) as the files of ``TABLES``.
    Call inside ``engine.snapshot()`` for a consistent copy."""
    directory.mkdir()
    scan = engine.scan(MEMORY_FIELDS)
    fields = [f for f in MEMORY_FIELDS if f != "vector"]
    memories = scan.table.select(fields).cast(
        pa.schema([MEMORIES.schema.field(f) for f in fields]))
    memories = memories.append_column(
        MEMORIES.schema.field("vector"), _vector_column(scan.vectors, scan.has_vector,
                                                        memories.num_rows))
    _write(directory, MEMORIES, memories)
    versions = sorted(engine.versions(), key=lambda v: (v.memory_id, v.seq))
    _write(directory, VERSIONS, _rows(VERSIONS, [version_row(v) for v in versions]))
    graph = graph_batch(engine)
    _write(directory, EVENTS, _rows(EVENTS, [event_row(e) for e in graph.events]))
    _write(directory, EDGES, _rows(EDGES, [_fields(EDGES, e) for e in graph.new_edges]))
    _write(directory, ENTITIES, _rows(ENTITIES, [
        {**_fields(ENTITIES, e), "merges": merges_text(e)} for e in graph.new_entities]))
    _write(directory, MENTIONS, _rows(MENTIONS, [_fields(MENTIONS, m) for m in graph.mentions]))
    _write(directory, FACTS, _rows(FACTS, [_fields(FACTS, f) for f in graph.facts]))
    _write(directory, META, _rows(META, [{"key": k, "value": v}
                                         for k, v in sorted(graph.meta.items())]))


def _vector_column(vectors: np.ndarray | None, present: np.ndarray | None, n: int) -> pa.Array:
    if vectors is None or present is None or not n:
        return pa.nulls(n, _VECTOR)
    dim = vectors.shape[1]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(present, dim, 0), out=offsets[1:])
    values = np.ascontiguousarray(vectors[present], dtype=np.float32).ravel()
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    child = pa.Array.from_buffers(pa.float32(), len(values), [None, pa.py_buffer(values)])
    return pa.Array.from_buffers(_VECTOR, n, [validity, pa.py_buffer(offsets)],
                                 children=[child])


def _fields(table: Table, record: Any) -> dict[str, Any]:
    """A record's values by the table's columns (``dataclasses.asdict`` copied every
    value deeply: 5.8 s of a 10k-memory backup's 8.8)."""
    return {c: getattr(record, c) for c in table.types if hasattr(record, c)}


def _rows(table: Table, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_arrays([array_of([r[c] for r in rows], kind)
                                 for c, kind in table.types.items()], schema=table.schema)


def _write(directory: Path, table: Table, rows: pa.Table) -> None:
    import pyarrow.parquet as pq

    pq.write_table(rows, directory / table.file, row_group_size=BATCH_ROWS)


# -- reading -----------------------------------------------------------------------------
class Loaded(NamedTuple):
    """What a restore wrote: how many memories, versions and events, and the embedder
    fingerprint the store's properties record."""

    memories: int
    versions: int
    events: int
    fingerprint: str | None


def load_tables(open_file: Opener, target: Engine, *, label: str,
                check: Callable[[tuple[int, int, int, str | None]], None]) -> Loaded:
    """Write the backup whose files ``open_file`` opens (``label`` names their directory
    in messages) into ``target``, which must hold no memory, in one transaction;
    ``check`` sees what was written before it commits (and may refuse it by raising)."""
    check_empty(target)
    reader = _Reader(open_file, label)
    meta = reader.meta()
    history = reader.versions()
    entities = reader.records(ENTITIES, _entity)
    entity_ids = reader.unique(ENTITIES, [e.id for e in entities], "entity")
    with target.writer() as writer:
        memory_ids: set[str] = set()
        for rows, vectors in reader.memories(meta.get("embedder_dim")):
            ids = [row["id"] for row in rows]
            memory_ids |= reader.unique(MEMORIES, ids, "memory", seen=memory_ids)
            reader.write(writer, MEMORIES, memory_batch(
                rows, vectors, history, where=f"{label}/{MEMORIES.file}"))
        reader.known(VERSIONS, "memory_id", history, memory_ids)
        events = reader.records(EVENTS, event_from_values)
        reader.unique(EVENTS, [e.event_id for e in events], "event")
        edges = reader.records(EDGES, _edge)
        reader.known(EDGES, "src", [e.src for e in edges], memory_ids)
        reader.known(EDGES, "dst", [e.dst for e in edges], memory_ids)
        mentions = reader.records(MENTIONS, lambda r: MentionRecord(**r))
        reader.known(MENTIONS, "memory_id", [m.memory_id for m in mentions], memory_ids)
        reader.known(MENTIONS, "entity_id", [m.entity_id for m in mentions], entity_ids)
        facts = reader.records(FACTS, _fact)
        reader.unique(FACTS, [f.id for f in facts], "fact")
        reader.known(FACTS, "subject", [f.subject for f in facts], entity_ids)
        reader.known(FACTS, "object", [f.object for f in facts], entity_ids)
        reader.write(writer, EVENTS, WriteBatch(events=events))
        reader.write(writer, EDGES, WriteBatch(new_edges=edges))
        reader.write(writer, ENTITIES, WriteBatch(new_entities=entities))
        reader.write(writer, MENTIONS, WriteBatch(mentions=mentions))
        reader.write(writer, FACTS, WriteBatch(facts=facts))
        reader.write(writer, META, WriteBatch(meta=meta))
        loaded = Loaded(len(memory_ids), sum(len(v) for v in history.values()), len(events),
                        meta.get("embedder_fingerprint"))
        check(loaded)
    return loaded


class _Reader:
    """The files of one backup, read and checked for ``load_tables``."""

    def __init__(self, open_file: Opener, label: str) -> None:
        self._open, self._label = open_file, label

    def where(self, table: Table) -> str:
        return f"{self._label}/{table.file}"

    def batches(self, table: Table) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        where = self.where(table)
        with self._open(table.file) as handle:
            batches = parquet_batches(handle, where=where, table=table.file,
                                      names=list(table.types),
                                      types=list(table.types.values()), batch_rows=BATCH_ROWS)
            while True:
                try:
                    batch = next(batches, None)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise StoreError(f"{where} could not be read: {exc}") from None
                if batch is None:
                    return
                for name in table.required:
                    column = batch.column(name)
                    if column.null_count or (pa.types.is_list(column.type)
                                             and pc.list_flatten(column).null_count):
                        raise StoreError(f"{where}: column {name} has an empty value")
                yield batch

    def rows(self, table: Table, batch: pa.RecordBatch) -> list[dict[str, Any]]:
        try:
            return to_pylist(batch)
        except (OverflowError, ValueError) as exc:  # a time out of Python's range
            raise StoreError(f"{self.where(table)} could not be read: {exc}") from None

    def records(self, table: Table, make: Callable[[dict[str, Any]], Any]) -> list[Any]:
        """Every row of ``table`` as ``make`` makes it; a row it refuses (``ValueError``,
        ``TypeError``) is named by its first column."""
        out = []
        for batch in self.batches(table):
            for row in self.rows(table, batch):
                try:
                    out.append(make(row))
                except (ValueError, TypeError) as exc:
                    first, value = next(iter(row.items()))
                    raise StoreError(f"{self.where(table)}: the row of {first} "
                                     f"{str(value)[:200]!r} is not valid: "
                                     f"{_first_line(exc)}") from None
        return out

    def meta(self) -> dict[str, str]:
        meta = {row["key"]: row["value"] for batch in self.batches(META)
                for row in self.rows(META, batch) if row["key"] not in ENGINE_META}
        dim = meta.get("embedder_dim")
        if dim is not None and not (dim.isdigit() and 0 < int(dim) <= 65536):
            raise StoreError(f"{self.where(META)} records embedder_dim {dim[:40]!r}, not a "
                             "dimension")
        return meta

    def versions(self) -> dict[str, list[Version]]:
        history: dict[str, list[Version]] = {}
        ids: set[str] = set()
        for version in self.records(VERSIONS, version_from_values):
            self.unique(VERSIONS, [version.id], "version", seen=ids)
            ids.add(version.id)
            history.setdefault(version.memory_id, []).append(version)
        return history

    def memories(self, dim: str | None
                 ) -> Iterator[tuple[list[dict[str, Any]], list[np.ndarray | None]]]:
        """Memory rows (without their vector) and their vectors, a batch at a time."""
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        where = self.where(MEMORIES)
        for batch in self.batches(MEMORIES):
            column = batch.column("vector")
            lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
            present = column.is_valid().to_numpy(zero_copy_only=False)
            sizes = {int(n) for n in lengths[present]}
            if dim is not None:
                sizes.add(int(dim))
            values = pc.list_flatten(column).to_numpy(zero_copy_only=False)
            if len(sizes) > 1 or 0 in sizes or not np.isfinite(values).all():
                raise StoreError(f"{where}: the vectors are not all of one dimension "
                                 f"{'(' + dim + ') ' if dim else ''}and finite")
            matrix = values.reshape(-1, max(sizes, default=1))
            vectors: list[np.ndarray | None] = [None] * batch.num_rows
            for row, position in enumerate(np.flatnonzero(present)):
                vectors[position] = matrix[row]
            yield self.rows(MEMORIES, batch.drop_columns(["vector"])), vectors

    def unique(self, table: Table, ids: list[str], what: str,
               seen: set[str] | None = None) -> set[str]:
        """``ids`` as a set, refused when one comes twice (or is in ``seen``)."""
        found: set[str] = set()
        for one in ids:
            if one in found or (seen is not None and one in seen):
                raise StoreError(f"{self.where(table)} holds the {what} {one[:200]!r} twice")
            found.add(one)
        return found

    def known(self, table: Table, column: str, ids: Mapping[str, Any] | list[str],
              known: set[str]) -> None:
        """Every one of ``ids`` (what ``column`` names) is in ``known``."""
        for one in ids:
            if one not in known:
                raise StoreError(f"{self.where(table)}: {column} {one[:200]!r} is not in the "
                                 "backup")

    def write(self, writer: Any, table: Table, batch: WriteBatch) -> None:
        try:
            writer.write(batch)
        except StoreError:
            raise
        except GraphmemError as exc:
            raise StoreError(f"{self.where(table)} could not be written into the store: "
                             f"{_first_line(exc)}") from None


def _edge(row: dict[str, Any]) -> EdgeRecord:
    if row["kind"] not in EDGE_KINDS:
        raise ValueError(f"kind {row['kind'][:40]!r} is not one of {', '.join(EDGE_KINDS)}")
    if not math.isfinite(row["weight"]):
        raise ValueError(f"weight {row['weight']} is not a number")
    return EdgeRecord(**row)


def _entity(row: dict[str, Any]) -> EntityRecord:
    merges = json.loads(row["merges"])
    if not isinstance(merges, list) or not all(
            isinstance(m, dict) and all(isinstance(v, str) for v in (*m, *m.values()))
            for m in merges):
        raise ValueError("merges must be a list of objects of strings")
    return EntityRecord(**{**row, "aliases": tuple(row["aliases"]), "merges": tuple(merges),
                           "created": aware(row["created"])})


def _fact(row: dict[str, Any]) -> FactRecord:
    return FactRecord(**{**row, "sources": tuple(row["sources"])})


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return " ".join(line.strip() for line in lines[:3])[:300]
