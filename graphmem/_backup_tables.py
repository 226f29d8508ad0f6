"""The tables of a backup (format 2): a store as graphmem's own records, one Parquet file a
kind of record, read from any engine through the port and written into any engine
through it, a page at a time: neither a backup nor a restore holds a whole table.

``write_tables`` reads the store's engine-neutral tables (``Engine.read_table``, inside
the engine's snapshot, for a consistent copy) and streams each into its file of
``TABLES``. ``load_tables`` reads them back as untrusted input, a row group at a time:
each file's columns and types must be those of ``TABLES``, required values must be
there, every value must be one graphmem's types take (checked on the Arrow columns:
kinds, states, times within Python's range, JSON objects, vectors of one width), ids
must come once and what a row names must be in the backup (the memory of a version, an
edge or a mention; the entities of a mention or a fact); the checked columns go into
the new store in bulk (``BatchWriter.load``) in one transaction, and any fault names the
file (and the record) and leaves that transaction uncommitted. ``copy_tables`` moves a
store between engines the same way, its pages read from the other engine
(``Engine.read_table``) instead of files, with the same checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
import pyarrow as pa

from ._arrow import column_values, numbers, parquet_batches, strings, vector_matrix
from ._engine import EDGE_KINDS, BatchWriter, Engine, TableName, WriteBatch
from ._errors import GraphmemError, InvalidInputError, StoreError
from ._input import MAX_TEXT, MemoryInput, no_json_constant, stored_owner_problem
from ._models import ChangeType, EventType, Kind, Status, TriggeredBy
from ._records import TABLE_TYPES, check_merges, sentences_matrix

__all__ = ["ENGINE_META", "TABLES", "TABLE_VERSION", "Loaded", "check_empty", "copy_tables",
           "load_tables", "write_tables"]

#: Store properties that belong to one engine's files, not to the store: its schema, the
#: edges it marked gone, where its vector log stands.
ENGINE_META = frozenset({"schema_version", "gone_edges", "vector_log"})

#: The layout of the tables (a format-2 manifest's ``schema_version``): v2 adds the
#: memories' sentence vectors (``sentences``; a v1 backup's memories have none).
TABLE_VERSION = 2
#: Columns of a table that a backup of an older layout lacks: its version -> columns.
_ADDED: dict[str, dict[int, tuple[str, ...]]] = {"memories": {1: ("sentences",)}}
#: Rows read or written per batch: a memory row with its vector is ~3 KB.
BATCH_ROWS = 20_000

_STR = pa.string()


@dataclass(frozen=True)
class Table:
    """One file of a backup: the store's table it holds (None: the store's properties),
    its columns and their Arrow types, and the columns that must hold a value in every
    row."""

    file: str
    name: TableName | None
    types: Mapping[str, pa.DataType]
    required: frozenset[str]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(self.types.items()))


def _table(name: TableName, required: set[str] | None = None) -> Table:
    types = TABLE_TYPES[name]
    return Table(f"{name}.parquet", name, dict(types),
                 frozenset(types if required is None else required))


#: ``Memory``'s fields that must hold a value (the others take their defaults)
MEMORIES = _table("memories", {"id", "kind", "status", "importance", "original_importance",
                               "confidence", "created", "modified"})
VERSIONS = _table("versions", {"id", "memory_id", "seq", "change_type", "at", "text_sha256"})
EVENTS = _table("events", {"event_id", "memory_id", "event_type", "from_state", "to_state",
                           "reason", "triggered_by", "agent_id", "timestamp"})
EDGES = _table("edges", {"kind", "src", "dst", "weight", "count", "source", "reason"})
ENTITIES = _table("entities", {"id", "name", "type", "aliases", "merges"})
MENTIONS = _table("mentions")
FACTS = _table("facts", {"id", "subject", "predicate", "object", "confidence", "recorded",
                         "sources", "rule"})
META = Table("meta.parquet", None, {"key": _STR, "value": _STR}, frozenset({"key", "value"}))
#: Every file of a format-2 backup.
TABLES: tuple[Table, ...] = (MEMORIES, VERSIONS, EVENTS, EDGES, ENTITIES, MENTIONS, FACTS,
                             META)

Opener = Callable[[str], IO[bytes]]
#: The columns of a memory row that ``add`` checks beyond its scores (``_as_added``).
_AS_ADDED = ("text", "subject", "tags", "project", "visibility", "session", "valid_from",
             "valid_to")

#: Values a column may hold (null too where it is not required).
_CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "memories": {"kind": tuple(Kind), "status": tuple(Status),
                 "prev_status": tuple(Status), "prev_kind": tuple(Kind)},
    "versions": {"change_type": tuple(ChangeType), "status": tuple(Status),
                 "kind": tuple(Kind)},
    "events": {"event_type": tuple(EventType), "triggered_by": tuple(TriggeredBy)},
    "edges": {"kind": EDGE_KINDS},
}
#: Values a missing one stands for (``Memory``'s defaults, a version's ``redacted``).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "memories": {"hot": False, "access_count": 0, "useful_count": 0, "ignored_count": 0,
                 "version": 1, "visibility": "private", "text": "", "text_sha256": ""},
    "versions": {"redacted": False},
}
#: JSON columns: an object each (anything else, or nothing, is read as an empty one).
_JSON: dict[str, tuple[str, ...]] = {"memories": ("provenance", "integrity", "extra"),
                                     "events": ("metadata",)}
#: The first and last microsecond Python's datetime holds.
_TIME_RANGE = (int((datetime(1, 1, 1) - datetime(1970, 1, 1)).total_seconds()) * 10**6,
               int((datetime(9999, 12, 31, 23, 59, 59) - datetime(1970, 1, 1))
                   .total_seconds()) * 10**6 + 999_999)


# -- writing -----------------------------------------------------------------------------
def write_tables(engine: Engine, directory: Path) -> None:
    """Write the store of ``engine`` into ``directory`` (new) as the files of ``TABLES``,
    a page at a time. Call inside ``engine.snapshot()`` for a consistent copy."""
    directory.mkdir()
    for table in TABLES:
        _write(directory, table, _pages(engine, table))


def _pages(engine: Engine, table: Table) -> Iterator[pa.Table]:
    """The rows of ``table`` in the store of ``engine``, a page at a time."""
    if table.name is not None:
        yield from engine.read_table(table.name, page=BATCH_ROWS)
        return
    meta = sorted((k, v) for k, v in engine.meta().items() if k not in ENGINE_META)
    yield pa.Table.from_arrays([strings([k for k, _ in meta]), strings([v for _, v in meta])],
                               schema=table.schema)


def _write(directory: Path, table: Table, pages: Any) -> None:
    import pyarrow.parquet as pq

    # without dictionaries: a column of vectors tried one (0.56 s of 10k memories' file
    # against 0.26 s without)
    with pq.ParquetWriter(directory / table.file, table.schema, use_dictionary=False) as out:
        for page in pages:
            out.write_table(page, row_group_size=BATCH_ROWS)


# -- reading -----------------------------------------------------------------------------
class Loaded(NamedTuple):
    """What a restore wrote: how many memories, versions and events, and the embedder
    fingerprint the store's properties record."""

    memories: int
    versions: int
    events: int
    fingerprint: str | None


Check = Callable[[tuple[int, int, int, str | None]], None]


def check_empty(target: Engine) -> None:
    """A store is copied or restored only into one that holds no memory."""
    if target.memory_count():
        raise StoreError(f"{target.path} already holds memories; restore into an empty "
                         "store")


def load_tables(open_file: Opener, target: Engine, *, label: str, check: Check,
                version: int = TABLE_VERSION) -> Loaded:
    """Write the backup whose files ``open_file`` opens (``label`` names their directory
    in messages; ``version`` the layout of its tables) into ``target``, which must hold
    no memory, in one transaction; ``check`` sees what was written before it commits
    (and may refuse it by raising)."""
    return _load_all(_Files(open_file, label, version), target, check)


def copy_tables(source: Engine, target: Engine) -> Loaded:
    """Write the store of ``source`` into ``target``, which must hold no memory, in one
    transaction, a page at a time, its rows checked as a backup's are. Call inside
    ``source.snapshot()`` for a consistent copy."""
    return _load_all(_Store(source), target, lambda loaded: None)


def _load_all(reader: _Reader, target: Engine, check: Check) -> Loaded:
    check_empty(target)
    meta = reader.meta()
    dim = meta.get("embedder_dim")
    # the ids of each table (with their owner: memories, entities), for ``unique``,
    # ``known`` and ``owned``
    ids: dict[str, dict[str, str | None]] = {t.file: {} for t in TABLES if t.file in _IDS}
    counts: dict[str, int] = {}
    versioned: set[str] = set()  # the memories a version row names
    replaced: list[tuple[str, str]] = []  # (memory, one of its superseded_by)
    with target.writer() as writer:
        for table in TABLES[:-1]:
            counts[table.file] = 0
            for rows in reader.tables(table):
                if table is MEMORIES:
                    reader.vectors(rows, dim)
                    replaced += [(memory, newer) for memory, newer in zip(
                        column_values(rows.column("id")),
                        column_values(rows.column("superseded_by")), strict=True)
                        for newer in newer or ()]
                if table.file in _IDS:
                    column, what = _IDS[table.file]
                    found = reader.unique(table, rows, column, what, ids[table.file])
                    owners = column_values(rows.column("owner")) \
                        if "owner" in table.types and table is not FACTS else None
                    ids[table.file].update(zip(found, owners, strict=True) if owners is not None
                                           else dict.fromkeys(found))
                for column, named in _NAMES.get(table.file, ()):
                    reader.known(table, rows, column, ids[named])
                if table is MENTIONS or table is FACTS:
                    reader.owned(table, rows, ids[MEMORIES.file], ids[ENTITIES.file])
                if table is VERSIONS:
                    versioned.update(column_values(rows.column("memory_id")))
                _load(writer, reader, table, rows)
                counts[table.file] += rows.num_rows
            if table is MEMORIES:
                _check_replaced(reader.where(MEMORIES), replaced, ids[MEMORIES.file])
            if table is VERSIONS and len(versioned) != len(ids[MEMORIES.file]):
                missing = min(ids[MEMORIES.file].keys() - versioned)
                raise StoreError(f"{reader.where(MEMORIES)}: memory {missing[:200]!r} has "
                                 "no version row")
        reader.write(writer, META, WriteBatch(meta=meta))
        loaded = Loaded(counts[MEMORIES.file], counts[VERSIONS.file], counts[EVENTS.file],
                        meta.get("embedder_fingerprint"))
        check(loaded)
    return loaded


#: A memory's counters and the least each can be (its version rows are numbered from 1),
#: and the most any can be (a version of 2^63 - 1 left the memory impossible to update)
_COUNTS = {"version": 1, "access_count": 0, "useful_count": 0, "ignored_count": 0,
           "xref_count": 0}
_MOST = 2**53


def _check_replaced(where: str, replaced: Sequence[tuple[str, str]],
                    owners: Mapping[str, str | None]) -> None:
    """Each memory's ``superseded_by`` names another memory of the backup, of its owner
    (a store refuses the others: ``Memories.check_edge_owners``)."""
    for memory, newer in replaced:
        problem = ("a memory the backup does not hold" if newer not in owners
                   else "the memory itself" if newer == memory
                   else "a memory of another owner" if owners[newer] != owners[memory]
                   else None)
        if problem is not None:
            raise StoreError(f"{where}: memory {memory[:200]!r} is superseded by "
                             f"{newer[:200]!r}, {problem}")


#: The column of each table whose ids come once, and what one is called.
_IDS = {MEMORIES.file: ("id", "memory"), VERSIONS.file: ("id", "version"),
        EVENTS.file: ("event_id", "event"), ENTITIES.file: ("id", "entity"),
        FACTS.file: ("id", "fact")}
#: The columns of each table that name a record of another (by its file), which the
#: backup must hold.
_NAMES = {VERSIONS.file: (("memory_id", MEMORIES.file),),
          EDGES.file: (("src", MEMORIES.file), ("dst", MEMORIES.file)),
          MENTIONS.file: (("memory_id", MEMORIES.file), ("entity_id", ENTITIES.file)),
          FACTS.file: (("subject", ENTITIES.file), ("object", ENTITIES.file))}


def _load(writer: BatchWriter, reader: _Reader, table: Table, rows: pa.Table) -> None:
    """Checked rows of ``table`` into the new store."""
    assert table.name is not None
    try:
        writer.load(table.name, rows)
    except StoreError:
        raise
    except GraphmemError as exc:
        raise StoreError(f"{reader.where(table)} could not be written into the store: "
                         f"{_first_line(exc)}") from None


class _Reader:
    """The tables of one store, a batch at a time (from a backup's files: ``_Files``;
    from an engine: ``_Store``), read and checked for ``_load_all``."""

    def __init__(self) -> None:
        #: the width of the vectors read so far (and the one the store records)
        self._widths: set[str] = set()

    def where(self, table: Table) -> str:
        """Where the rows of ``table`` come from, for messages."""
        raise NotImplementedError

    def read(self, table: Table) -> Iterator[pa.RecordBatch | pa.Table]:
        """The rows of ``table`` with its columns (``table.types``), in batches."""
        raise NotImplementedError

    def batches(self, table: Table) -> Iterator[pa.RecordBatch | pa.Table]:
        """Each batch of ``table`` with a value in every required column."""
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        for batch in self.read(table):
            for name in table.required:
                column = batch.column(name)
                if column.null_count or (pa.types.is_list(column.type)
                                         and pc.list_flatten(column).null_count):
                    raise StoreError(f"{self.where(table)}: column {name} has an empty "
                                     "value")
            yield batch

    def tables(self, table: Table) -> Iterator[pa.Table]:
        """Each batch of ``table`` checked (``_checked``) and with missing values made
        what graphmem's types make them."""
        for batch in self.batches(table):
            rows = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
            yield self._checked(table, rows)

    def _checked(self, table: Table, rows: pa.Table) -> pa.Table:
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        assert table.name is not None
        name = table.name
        for column, choices in _CHOICES.get(name, {}).items():
            values = rows.column(column)
            bad = pc.invert(pc.is_in(values, value_set=pa.array(choices, _STR)))
            if values.null_count:
                bad = pc.and_(bad, pc.is_valid(values))
            if pc.any(bad).as_py():
                value = values.filter(bad)[0].as_py()
                self.refuse(table, rows, bad, f"{column} {str(value)[:40]!r} is not one of "
                                              f"{', '.join(choices)}")
        for column, kind in table.types.items():
            values = rows.column(column)
            if pa.types.is_list(kind) and column != "vector":
                flat = pc.list_flatten(values)
                if flat.null_count:  # a list of a graphmem type holds no empty value
                    self.refuse(table, rows, pc.greater(pc.list_value_length(values), 0),
                                f"{column} holds an empty value")
                if pa.types.is_timestamp(kind.value_type):
                    self._times(table, rows, column, flat, listed=True)
                if values.null_count:
                    rows = _set(rows, column, pc.fill_null(values, pa.scalar([], kind)))
            elif pa.types.is_timestamp(kind):
                self._times(table, rows, column, values)
        if "owner" in table.types:
            # an owner graphmem could not have stored (blank, too long, not text); one
            # that a call may no longer name (an invisible character) was written by
            # older versions and is restored as it was
            owners = rows.column("owner")
            for owner in pc.unique(owners).to_pylist():
                problem = None if owner is None else stored_owner_problem(owner)
                if problem is not None:
                    self.refuse(table, rows, pc.equal(owners, owner), f"owner {problem}")
        for column, value in _DEFAULTS.get(name, {}).items():
            if rows.column(column).null_count:
                rows = _set(rows, column, pc.fill_null(rows.column(column), value))
        for column in _JSON.get(name, ()):
            rows = _set(rows, column, self._objects(table, rows, column))
        if name == "edges":
            weights = numbers(rows.column("weight"))
            if not np.isfinite(weights).all():
                bad = pa.array(~np.isfinite(weights))
                weight = weights[~np.isfinite(weights)][0]
                self.refuse(table, rows, bad, f"weight {weight} is not a number")
        if name == "memories":
            self._as_added(table, rows)
        if name == "versions":  # numbered from 1, as a memory's version
            seq = np.asarray(pc.fill_null(rows.column("seq"), 1), dtype=np.int64)
            bad = (seq < 1) | (seq > _MOST)
            if bad.any():
                self.refuse(table, rows, bad, f"seq {seq[bad][0]} is not from 1 to 2^53")
        if name == "entities":
            for row, text in enumerate(column_values(rows.column("merges"))):
                try:
                    check_merges(text)
                except ValueError as exc:
                    self.refuse(table, rows, row, str(exc))
        return rows

    def _as_added(self, table: Table, rows: pa.Table) -> None:
        """Memory rows hold what ``add`` accepts: scores in [0, 1], and a text and a
        subject with no NUL, the text of at most ``MAX_TEXT`` characters (a restored
        store then exports and imports again)."""
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        for column in ("importance", "original_importance", "confidence"):
            values = rows.column(column)
            scores = numbers(values)
            bad = ~((scores >= 0.0) & (scores <= 1.0)) & np.asarray(
                pc.is_valid(values), dtype=bool)
            if bad.any():
                self.refuse(table, rows, bad, f"{column} {scores[bad][0]:g} is not a number "
                                              "in [0, 1]")
        for column, least in _COUNTS.items():
            if column not in rows.column_names:
                continue
            values = rows.column(column)
            counts = np.asarray(pc.fill_null(values, least), dtype=np.int64)
            if (counts < least).any():
                self.refuse(table, rows, counts < least,
                            f"{column} {counts[counts < least][0]} is less than {least}")
            if (counts > _MOST).any():
                self.refuse(table, rows, counts > _MOST,
                            f"{column} {counts[counts > _MOST][0]} is more than 2^53")
        for column in ("text", "subject"):
            if column not in rows.column_names:
                continue
            nul = pc.fill_null(pc.match_substring(rows.column(column), "\x00"), False)
            if pc.any(nul).as_py():
                self.refuse(table, rows, nul, f"{column} contains a NUL character")
        long = pc.fill_null(pc.greater(pc.utf8_length(rows.column("text")), MAX_TEXT), False)
        if pc.any(long).as_py():
            self.refuse(table, rows, long, f"text is longer than {MAX_TEXT:,} characters")
        # the rest of what add checks, on each memory that is not forgotten (a forgotten
        # one keeps its id and no text)
        names = [c for c in _AS_ADDED if c in rows.column_names]
        status = column_values(rows.column("status"))
        for row, values in enumerate(zip(*(column_values(rows.column(c)) for c in names),
                                         strict=True)):
            if status[row] == Status.FORGOTTEN.value:
                continue
            given = {c: v for c, v in zip(names, values, strict=True)
                     if v is not None and v != ()}
            try:
                MemoryInput.parse({**given, "tags": tuple(given.get("tags") or ())})
            except InvalidInputError as exc:
                self.refuse(table, rows, row, str(exc))

    def _times(self, table: Table, rows: pa.Table, column: str, values: Any, *,
               listed: bool = False) -> None:
        """The times of ``column`` (``values``; a list column's, ``listed``) are within
        Python's range."""
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        ticks = pc.cast(values, pa.int64())
        span = pc.min_max(ticks)
        low, high = span["min"].as_py(), span["max"].as_py()
        if low is None or high is None or (_TIME_RANGE[0] <= low and high <= _TIME_RANGE[1]):
            return
        bad = pc.or_(pc.less(ticks, _TIME_RANGE[0]), pc.greater(ticks, _TIME_RANGE[1]))
        if listed:
            raise StoreError(f"{self.where(table)} could not be read: a time of column "
                             f"{column} is out of range")
        self.refuse(table, rows, bad, f"{column} is out of range")

    def _objects(self, table: Table, rows: pa.Table, column: str) -> pa.Array:
        """A JSON column with every value an object's text: a value that is not JSON is
        refused, anything else but an object (or nothing) becomes ``{}``."""
        values = column_values(rows.column(column))
        out: list[str | None] = []
        for row, text in enumerate(values):
            if text == "{}":  # most of them
                out.append(text)
                continue
            try:
                loaded = json.loads(text, parse_constant=no_json_constant) if text else None
            except (ValueError, RecursionError) as exc:
                self.refuse(table, rows, row, f"{column}: {exc}")
            out.append(text if isinstance(loaded, dict) else "{}")
        return strings(out)

    def refuse(self, table: Table, rows: pa.Table, bad: Any, why: str) -> None:
        """Refuse the first row of ``rows`` that ``bad`` marks (a row number, or a
        boolean column), named by its first column (a memory by its id)."""
        if not isinstance(bad, int):
            bad = int(np.flatnonzero(np.asarray(bad, dtype=bool))[0])
        first = next(iter(table.types))
        value = str(rows.column(first)[bad].as_py())[:200]
        if table is MEMORIES:
            raise StoreError(f"{self.where(table)}: memory {value!r} is not a valid memory: "
                             f"{why}")
        raise StoreError(f"{self.where(table)}: the row of {first} {value!r} is not valid: "
                         f"{why}")

    def meta(self) -> dict[str, str]:
        meta = {k: v for batch in self.batches(META)
                for k, v in zip(column_values(batch.column("key")),
                                column_values(batch.column("value")), strict=True)
                if k not in ENGINE_META}
        dim = meta.get("embedder_dim")
        if dim is not None and not (dim.isdigit() and 0 < int(dim) <= 65536):
            raise StoreError(f"{self.where(META)} records embedder_dim {dim[:40]!r}, not a "
                             "dimension")
        return meta

    def vectors(self, rows: pa.Table, dim: str | None) -> None:
        """The vectors of memory rows are all of one width (``dim``, else the first
        batch's) and finite."""
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        column = rows.column("vector")
        try:
            matrix, present = vector_matrix(column)
        except ValueError:
            matrix, present = None, None
        width = self._widths
        if matrix is not None and present is not None and present.any():
            width.add(str(matrix.shape[1]))
        if dim is not None:
            width.add(dim)
        values = pc.list_flatten(column)
        if matrix is None or len(width) > 1 or "0" in width or values.null_count \
                or not np.isfinite(values.to_numpy(zero_copy_only=False)).all():
            raise StoreError(f"{self.where(MEMORIES)}: the vectors are not all of one "
                             f"dimension {'(' + dim + ') ' if dim else ''}and finite")
        self._sentences(rows, int(next(iter(width))) if width else 0)

    def _sentences(self, rows: pa.Table, dim: int) -> None:
        """The sentence vectors of memory rows are base64 float32 rows of the vectors'
        width (``sentences_matrix``), finite."""
        for row, text in enumerate(column_values(rows.column("sentences"))):
            if text is None:
                continue
            try:
                matrix = sentences_matrix(text, dim)
            except ValueError as exc:  # binascii.Error is one
                self.refuse(MEMORIES, rows, row, f"sentences: {exc}")
            if matrix is not None and not np.isfinite(matrix).all():
                self.refuse(MEMORIES, rows, row, "sentences: a vector is not finite")

    def unique(self, table: Table, rows: pa.Table, column: str, what: str,
               seen: Mapping[str, Any]) -> list[str]:
        """The ids of ``column``, which must come once (in this batch and in ``seen``,
        those of the batches before)."""
        ids = column_values(rows.column(column))
        if len(set(ids)) != len(ids) or not seen.keys().isdisjoint(ids):
            once: set[str] = set()
            for one in ids:
                if one in once or one in seen:
                    raise StoreError(f"{self.where(table)} holds the {what} {one[:200]!r} "
                                     "twice")
                once.add(one)
        return ids

    def known(self, table: Table, rows: pa.Table, column: str,
              known: Mapping[str, Any]) -> None:
        """Every value of ``column`` (what it names) is in ``known``."""
        ids = column_values(rows.column(column))
        if not set(ids) <= known.keys():
            one = next(i for i in ids if i not in known)
            raise StoreError(f"{self.where(table)}: {column} {one[:200]!r} is not in the "
                             "backup")

    def owned(self, table: Table, rows: pa.Table, memories: Mapping[str, str | None],
              entities: Mapping[str, str | None]) -> None:
        """A mention joins a memory and an entity of one owner, a fact two entities of
        its own owner (what the engines' own writes hold to)."""
        if table is MENTIONS:
            pairs = zip(column_values(rows.column("memory_id")),
                        column_values(rows.column("entity_id")), strict=True)
            bad = [memories[m] != entities[e] for m, e in pairs]
            why = "its memory and its entity are of two owners"
        else:
            triples = zip(column_values(rows.column("owner")),
                          column_values(rows.column("subject")),
                          column_values(rows.column("object")), strict=True)
            bad = [not owner == entities[a] == entities[b] for owner, a, b in triples]
            why = "its entities are not of its owner"
        if any(bad):
            self.refuse(table, rows, bad.index(True), why)

    def write(self, writer: Any, table: Table, batch: WriteBatch) -> None:
        try:
            writer.write(batch)
        except StoreError:
            raise
        except GraphmemError as exc:
            raise StoreError(f"{self.where(table)} could not be written into the store: "
                             f"{_first_line(exc)}") from None


class _Files(_Reader):
    """The files of one backup (``label`` names their directory)."""

    def __init__(self, open_file: Opener, label: str, version: int = TABLE_VERSION) -> None:
        super().__init__()
        self._open, self._label, self._version = open_file, label, version

    def where(self, table: Table) -> str:
        return f"{self._label}/{table.file}"

    def read(self, table: Table) -> Iterator[pa.RecordBatch | pa.Table]:
        where = self.where(table)
        # the columns its layout had (an older one lacks some: they come back empty)
        lacks = {c for v, added in _ADDED.get(table.name or "", {}).items()
                 if self._version <= v for c in added}
        types = {c: t for c, t in table.types.items() if c not in lacks}
        with self._open(table.file) as handle:
            batches = parquet_batches(handle, where=where, table=table.file,
                                      names=list(types), types=list(types.values()),
                                      batch_rows=BATCH_ROWS)
            while True:
                try:
                    batch = next(batches, None)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise StoreError(f"{where} could not be read: {exc}") from None
                if batch is None:
                    return
                if not lacks:
                    yield batch
                    continue
                yield pa.Table.from_arrays(
                    [batch.column(c) if c in types else pa.nulls(batch.num_rows, kind)
                     for c, kind in table.types.items()], schema=table.schema)


class _Store(_Reader):
    """The tables of a store another engine holds, as ``Engine.read_table`` pages them."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self._engine = engine

    def where(self, table: Table) -> str:
        return f"{self._engine.path}: {table.name or 'meta'}"

    def read(self, table: Table) -> Iterator[pa.Table]:
        return _pages(self._engine, table)


def _set(rows: pa.Table, column: str, values: Any) -> pa.Table:
    index = rows.schema.get_field_index(column)
    return rows.set_column(index, rows.schema.field(index), values)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return " ".join(line.strip() for line in lines[:3])[:300]
