"""A database rebuilt with graphmem's own schema from Kuzu's ``EXPORT DATABASE``
Parquet files: the live data when a store is purged (``KuzuEngine.purge``), and a legacy
backup (format 1, which held that export; ``build_store``, see
``graphmem.engines.restore_legacy_backup``).

Kuzu's ``IMPORT DATABASE`` runs whatever Cypher the export directory holds
(``COPY ... TO``, ``LOAD EXTENSION``, ``ATTACH`` would all run, and a stray statement there
crashed the process). Nothing of a backup is run here: the schema comes from ``SCHEMAS``
for the backup's version, the name of each table's file is built here, and each file is
checked against the table's columns and types before its rows are copied in as Arrow
batches. The caller opens the files (inside the backup, never through a link).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa

from .._arrow import parquet_batches
from .._engine import EventQuery
from .._errors import GraphmemError, StoreError
from ._db import Database
from ._rows import MODEL_COLUMNS, memory_from_row, vector_decodes
from ._schema import SCHEMAS

if TYPE_CHECKING:
    from ._engine import KuzuEngine

__all__ = ["TableFile", "build_from_parquet", "build_store", "check_rows", "export_tables",
           "table_files"]

#: Rows copied per Arrow batch: bounds memory on large stores (a Memory row with its
#: vector and sentence vectors is ~7.5 KB: 151 MB a batch, measured at 100k memories).
BATCH_ROWS = 20_000

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Kuzu's column types (as ``table_info`` prints them) -> the Arrow type of an export.
_ARROW = {
    "STRING": pa.string(), "BOOL": pa.bool_(), "DOUBLE": pa.float64(),
    "INT64": pa.int64(), "TIMESTAMP": pa.timestamp("us"),
    "STRING[]": pa.list_(pa.string()), "TIMESTAMP[]": pa.list_(pa.timestamp("us")),
}  # fmt: skip

Opener = Callable[[str], IO[bytes]]


class TableFile:
    """One table of a schema version and the export file that holds its rows."""

    def __init__(self, table: str, file: str, columns: list[str], types: list[pa.DataType],
                 rel: bool, key: str = "", source: str = "", target: str = "") -> None:
        self.table = table
        self.file = file
        #: the column names of the export (``a.id`` ..., ``a.id, b.id, r.weight`` ...)
        self.columns = columns
        self.types = types
        self.rel = rel
        #: a node table's primary key; a relationship table's source and target tables
        self.key, self.source, self.target = key, source, target


def _identifier(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise StoreError(f"unexpected table name {name!r} in graphmem's own schema")
    return name


def table_files(db: Database) -> list[TableFile]:
    """The tables of the (freshly built) database ``db``, node tables first, each with
    the file name and columns Kuzu's ``EXPORT DATABASE`` gives it."""
    tables = [(_identifier(n), kind) for n, kind in
              db.read("CALL show_tables() RETURN name, type")]
    out: list[TableFile] = []
    for name, kind in sorted(tables, key=lambda t: (t[1] != "NODE", t[0])):
        # property id, name, type, default expression, primary key
        info = [(r[1], r[2], r[4]) for r in db.read(f"CALL table_info('{name}') RETURN *")]
        names = [_identifier(n) for n, _, _ in info]
        kinds = [str(t) for _, t, _ in info]
        if any(k not in _ARROW for k in kinds):
            raise StoreError(f"table {name} has a column type restore does not know: {kinds}")
        types = [_ARROW[k] for k in kinds]
        if kind == "NODE":
            out.append(TableFile(name, f"{name}.parquet", [f"a.{n}" for n in names], types,
                                 rel=False, key=next(n for n, _, pk in info if pk)))
            continue
        source, target, source_key, target_key = (
            _identifier(v) for v in db.read(f"CALL show_connection('{name}') RETURN *")[0][:4])
        keys = {t.table: t.types[0] for t in out if not t.rel}
        out.append(TableFile(name, f"{name}_{source}_{target}.parquet",
                             [f"a.{source_key}", f"b.{target_key}", *(f"r.{n}" for n in names)],
                             [keys[source], keys[target], *types], rel=True, source=source,
                             target=target))
    return out


def export_tables(db: Database, tables: Sequence[TableFile], directory: Path, *,
                  page: int = BATCH_ROWS) -> None:
    """Write ``tables`` of ``db`` into ``directory`` (new) as ``EXPORT DATABASE`` lays them
    out, the files ``build_from_parquet`` reads, ``page`` rows at a time (a node table by
    ranges of its primary key, a relationship table by ranges of its source's): Kuzu's
    own export held a whole table in the buffer pool, and a purge of 100k memories did not
    fit the default 1 GB. Runs inside ``Database.rebuild`` (reads with ``held_arrow``)."""
    import pyarrow.parquet as pq

    directory.mkdir()
    keys = {t.table: t.key for t in tables if not t.rel}
    for table in tables:
        source = table.source if table.rel else table.table
        key = keys[source]
        ids = db.held_arrow(f"MATCH (a:{source}) RETURN a.{key} ORDER BY a.{key}").column(0)
        ids = ids.to_pylist()
        match = f"MATCH (a:{source})-[r:{table.table}]->(b)" if table.rel \
            else f"MATCH (a:{table.table})"
        query = (f"{match} WHERE a.{key} >= $first AND a.{key} <= $last RETURN "
                 + ", ".join(table.columns))
        schema = pa.schema([pa.field(c, t) for c, t in zip(table.columns, table.types,
                                                              strict=True)])
        with pq.ParquetWriter(directory / table.file, schema, use_dictionary=False) as out:
            for start in range(0, len(ids), page):
                rows = db.held_arrow(query, {"first": ids[start],
                                             "last": ids[min(len(ids), start + page) - 1]})
                if rows.num_rows:
                    out.write_table(rows.rename_columns(table.columns).cast(schema))


def build_from_parquet(db: Database, schema_version: int, open_file: Opener,
                       *, label: str, drop_gone: bool = False) -> None:
    """Create schema ``schema_version`` in the empty database ``db`` and copy every table
    from the file ``open_file(name)`` returns. ``label`` names the files' directory in
    messages; ``drop_gone`` leaves out edges marked gone (a purge). Raises ``StoreError``
    naming the file (and column) that does not fit."""
    statements = SCHEMAS.get(schema_version)
    if statements is None:
        raise StoreError(f"there is no graphmem schema v{schema_version}")
    # Index builds (v1 and v2 had a full-text index) run once the rows are in.
    indexes = [s for s in statements if s.lstrip().upper().startswith("CALL ")]
    for statement in statements:
        if statement not in indexes:
            db.run_auto(statement)
    dropped: dict[str, set[Any]] = {}  # node table -> the keys of the rows left out
    for table in table_files(db):
        dropped[table.table] = _copy_table(db, table, open_file, label=label,
                                           drop_gone=drop_gone, dropped=dropped)
    found = [r[0] for r in db.read("MATCH (m:Meta {key: 'schema_version'}) RETURN m.value")]
    if found != [str(schema_version)]:
        recorded = repr(found[0])[:40] if found else "none"
        raise StoreError(f"{label}/Meta.parquet records schema version {recorded}, the "
                         f"manifest says {schema_version}")
    for statement in indexes:
        db.run_auto(statement)


#: Bytes of Arrow rows copied in one transaction (``_copy_table``).
COPY_BYTES = 64 << 20


def _grouped(batches: Iterable[pa.RecordBatch], names: list[str]) -> Iterator[pa.Table]:
    """``batches`` as tables of up to ``COPY_BYTES`` (at least a batch each), with the
    columns ``names``."""
    group: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        if group and size + batch.nbytes > COPY_BYTES:
            yield pa.Table.from_batches(group).rename_columns(names)
            group, size = [], 0
        group.append(batch)
        size += batch.nbytes
    if group:
        yield pa.Table.from_batches(group).rename_columns(names)


def _copy_table(db: Database, table: TableFile, open_file: Opener, *, label: str,
                drop_gone: bool = False, dropped: Mapping[str, set[Any]] | None = None
                ) -> set[Any]:
    """Copy ``table``'s file into ``db``; with ``drop_gone``, leave out its rows marked
    gone and, of a relationship table, those between nodes left out (``dropped``: node
    table -> keys), whatever marks they carry: a fact between an entity a write through
    Cypher had marked gone and another could not be copied, and no purge finished. Returns
    the keys of the node rows left out."""
    import pyarrow.compute as pc  # lazily: 0.2 s of every start

    left_out: set[Any] = set()
    ends = [] if not (drop_gone and table.rel and dropped) else [
        (name, dropped.get(node) or set())
        for name, node in (("from", table.source), ("to", table.target))]
    where = f"{label}/{table.file}"
    names = [c.split(".", 1)[1] for c in table.columns]
    if table.rel:
        names[:2] = ["from", "to"]
    with open_file(table.file) as handle:
        batches = parquet_batches(handle, where=where, table=table.table,
                                  names=table.columns, types=table.types,
                                  batch_rows=BATCH_ROWS)
        try:
            # a transaction of up to COPY_BYTES, checkpointed: the database is new (a
            # failure discards it), and one transaction held a whole table in the buffer
            # pool (a purge of 100k memories did not fit 1 GB); a COPY more into a
            # relationship table rewrote what it held (20 s a commit at 160k facts)
            for rows in _grouped(batches, names):
                if drop_gone and "gone" in names:
                    gone = pc.fill_null(rows.column("gone"), False)
                    if not table.rel:
                        left_out.update(rows.filter(gone).column(table.key).to_pylist())
                    rows = rows.filter(pc.invert(gone))
                for name, keys in ends:
                    if keys:
                        rows = rows.filter(pc.invert(pc.is_in(
                            rows.column(name), value_set=pa.array(sorted(keys)))))
                if rows.num_rows:
                    with db.write() as tx:
                        tx.copy(table.table, rows)
                    db.checkpoint()
        except GraphmemError as exc:
            raise StoreError(f"{where} could not be loaded into table {table.table}: "
                             f"{exc}") from None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise StoreError(f"{where} could not be read: {exc}") from None
    return left_out


def check_rows(graph: KuzuEngine, *, label: str) -> None:
    """Every memory, version and event of a restored database reads back as graphmem's
    models, and every stored vector decodes: a tampered backup fails here, naming the
    record, instead of failing later inside recall."""
    dim = graph.meta().get("embedder_dim")
    if dim is not None and not (dim.isdigit() and 0 < int(dim) <= 65536):
        raise StoreError(f"{label}: Meta records embedder_dim {dim[:40]!r}, not a dimension")
    table = graph.db.read_arrow("MATCH (m:Memory) RETURN "
                                + ", ".join(f"m.{c} AS {c}" for c in MODEL_COLUMNS))
    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        try:
            rows = batch.to_pylist()
        except (OverflowError, ValueError) as exc:  # a time out of Python's range
            raise StoreError(f"{label}: a memory row is not valid: {_first_line(exc)}"
                             ) from None
        for row in rows:
            try:
                memory_from_row(row)
            except (ValueError, TypeError) as exc:
                raise StoreError(f"{label}: memory {str(row.get('id'))[:200]!r} is not a "
                                 f"valid memory: {_first_line(exc)}") from None
    vectors = graph.db.read_arrow("MATCH (m:Memory) RETURN m.id AS id, m.vec AS vec")
    for batch in vectors.to_batches(max_chunksize=BATCH_ROWS):
        for memory_id, vec in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                  strict=True):
            if vec is not None and not vector_decodes(vec):
                raise StoreError(f"{label}: memory {str(memory_id)[:200]!r} has a stored "
                                 "vector that is not base64 of finite float32 values")
    for what, read in (("version", graph.versions),
                       ("event", lambda: graph.events(EventQuery()))):
        try:
            read()
        except (ValueError, TypeError) as exc:
            raise StoreError(f"{label}: a {what} row is not valid: {_first_line(exc)}"
                             ) from None


def build_store(directory: Path, schema_version: int, open_file: Opener, *, label: str,
                files_label: str, pool_mb: int) -> tuple[int, int, int, str | None]:
    """Build a store in the empty ``directory`` from backup files of ``schema_version``
    (``build_from_parquet``; ``files_label`` names their directory in messages), open it
    (which migrates an older schema) and check its rows (``label`` names the backup);
    returns its (memories, versions, events, embedder fingerprint)."""
    from ._engine import KuzuEngine

    db = Database(str(directory), buffer_pool_mb=pool_mb)
    try:
        build_from_parquet(db, schema_version, open_file, label=files_label)
    finally:
        db.close()
    engine = KuzuEngine(str(directory), buffer_pool_mb=pool_mb)
    try:
        check_rows(engine, label=label)
        counts = engine.counts()
        fingerprint = engine.meta().get("embedder_fingerprint")
    finally:
        engine.close()
    return sum(counts.by_kind.values()), counts.versions, counts.events, fingerprint


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return " ".join(line.strip() for line in lines[:3])[:300]
