"""The Kuzu engine: graphmem's port (``graphmem._engine.Engine``) over one Kuzu database.

The only place with Cypher for the store's own work. Bulk paths are batched: nodes
through ``UNWIND ... CREATE`` for small writes and ``COPY`` from Arrow for big ones, in
one transaction; relationships between existing nodes through ``COPY`` as well, or for
small writes one statement a row that finds its ends by key (``UNWIND ... MATCH {id:
...}`` plans as a cross product here).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from .. import _engine_rules as rules
from .._arrow import column_values, numbers, to_pylist
from .._engine import (
    INTERNAL_FIELDS,
    AccessRecord,
    BatchWriter,
    ChangeFeed,
    ChangeSet,
    Counts,
    CypherCapability,
    CypherResult,
    Decision,
    EdgeArrays,
    EdgeKind,
    EdgeRecord,
    EntityRecord,
    Erasure,
    EventQuery,
    FactRecord,
    ForeignChange,
    Job,
    Link,
    MemoryScan,
    MentionRecord,
    NewMemory,
    Patch,
    SqlCapability,
    TableName,
    WriteBatch,
    check_vector_dtype,
)
from .._errors import ConflictError, GraphmemError, InvalidInputError, StoreError
from .._models import LifecycleEvent, Memory, Version
from .._records import sentences_text
from .._redact import forgotten_holds
from . import _jobs
from ._bindcheck import BindCheck, holds_none
from ._db import Database, Tx, check_parameters, link_problem
from ._guard import check_generated, check_user_query
from ._journal import ChangeJournal
from ._readable import refuse_unreadable, values_before
from ._restore import build_from_parquet, export_tables, table_files
from ._rows import (
    EDGE_PROPS,
    EDGE_TABLES,
    FIELD_COLUMNS,
    MODEL_COLUMNS,
    aware,
    column_value,
    decode_vectors,
    edge_from_row,
    edge_params,
    encode_vector,
    entity_from_row,
    entity_params,
    event_from_row,
    event_params,
    fact_from_row,
    fact_params,
    json_dump,
    memory_from_row,
    memory_params,
    mention_params,
    naive,
    source_needle,
    sources_text,
    version_from_row,
    version_params,
)
from ._schema import (
    ENTITY_TYPES,
    EVENT_TYPES,
    FACT_TYPES,
    MEMORY_TYPES,
    MENTION_TYPES,
    SCHEMA_VERSION,
    SCHEMAS,
    VERSION_TYPES,
    count_facts,
    ensure_schema,
    finish_facts,
    remake_facts,
)
from ._secrets import KeyFile
from ._tables import load_table, read_table

__all__ = ["KuzuEngine"]

#: Meta key: "1" while some edge is marked gone (see ``KuzuEngine._live``).
_GONE_KEY = "gone_edges"
#: Meta key of the forget key before v6 (it lives in the key file now).
_LEGACY_FORGET_KEY = "forget_key"
#: Meta: how many facts the FACT table held when it was last made (``remake_facts``)
_FACTS_MADE = "facts_made"
#: Up to this many ids, look each up by primary key; beyond, one scan is cheaper.
_LOOKUP_LIMIT = 32
#: at close, the most pieces of purged texts looked for in the files (``_needles``: one
#: every ``_NEEDLE_STRIDE`` bytes and the last, of two forms); more are purged again
#: without a look (``_scrub_apart``)
_SCAN_LIMIT = 64
#: how far apart the pieces of a purged text looked for are (a page is 4,096 bytes)
_NEEDLE_STRIDE = 4_000
#: Whole-store scans read this many memories at a time (``KuzuEngine._arrow_scan``,
#: ``KuzuEngine._vectors``).
_PAGE = 50_000
#: Writes up to this many rows CREATE; bigger ones COPY (see ``KuzuEngine.commit``).
_SMALL_WRITE = 64
#: The node tables with list columns, for ``Database.watch_lists`` (a checkpoint of
#: Kuzu 0.11.3 can write new rows' lists wrong: ``_db``'s notes).
LIST_TABLES: dict[str, tuple[str, dict[str, str]]] = {
    table: (key, {c: t for c, t in types.items() if t.endswith("[]")})
    for table, key, types in (("Memory", "id", MEMORY_TYPES), ("Entity", "id", ENTITY_TYPES))}
_MEMORY_LISTS = frozenset(LIST_TABLES["Memory"][1])


def _typed(expr: str, kuzu_type: str) -> str:
    """``expr`` cast to its column type: Kuzu types a NULL or [] parameter as STRING."""
    return expr if kuzu_type == "STRING" else f"CAST({expr} AS {kuzu_type})"


_MEMORY_RETURN = ", ".join(f"m.{c}" for c in MODEL_COLUMNS)
_CREATE_EVENTS = (
    "UNWIND $rows AS e CREATE (:LifecycleEvent {"
    + ", ".join(f"{c}: {_typed(f'e.{c}', t)}" for c, t in EVENT_TYPES.items()) + "})"
)
_CREATE_MEMORIES = (
    "UNWIND $rows AS r CREATE (:Memory {"
    + ", ".join(f"{c}: {_typed(f'r.{c}', t)}" for c, t in MEMORY_TYPES.items()) + "})"
)
# A statement that finds existing nodes by key runs once per row (``Tx.run_many``):
# ``UNWIND $rows AS r MATCH (m:Memory {id: r.from})`` plans as a scan of the whole table
# (a cross product of two scans for a relationship), 4 s for one memory's mentions at 100k
# memories, measured by eval.bench_writes.
_CREATE_VERSION = (
    "MATCH (m:Memory {id: $memory_id}) CREATE (m)-[:HAS_VERSION]->"
    "(:Version {" + ", ".join(f"{c}: {_typed(f'${c}', t)}" for c, t in VERSION_TYPES.items())
    + "})"
)
_EDGE_TYPES = {"source": "STRING", "reason": "STRING", "weight": "DOUBLE", "count": "INT64",
               "at": "TIMESTAMP"}
_CREATE_EDGE = {
    table: "MATCH (a:Memory {id: $src}), (b:Memory {id: $dst}) "
    f"CREATE (a)-[:{table} {{"
    + ", ".join(f"{p}: {_typed(f'${p}', _EDGE_TYPES[p])}" for p in props) + "}]->(b)"
    for table, props in EDGE_PROPS.items()
}
_CREATE_ENTITIES = (
    "UNWIND $rows AS r CREATE (:Entity {"
    + ", ".join(f"{c}: {_typed(f'r.{c}', t)}" for c, t in ENTITY_TYPES.items()) + "})"
)
#: A memory mentions only entities of its own owner (imports are checked before; this is
#: the second wall).
_CREATE_MENTION = (
    "MATCH (m:Memory {id: $from}), (e:Entity {id: $to}) "
    "WHERE coalesce(m.owner, '') = coalesce(e.owner, '') "
    "CREATE (m)-[:MENTIONS {"
    + ", ".join(f"{c}: {_typed(f'${c}', t)}" for c, t in MENTION_TYPES.items()) + "}]->(e)"
)
_CREATE_FACT = (
    "MATCH (a:Entity {id: $from}), (b:Entity {id: $to}) "
    "WHERE coalesce(a.owner, '') = coalesce($owner, '') "
    "AND coalesce(b.owner, '') = coalesce($owner, '') "
    "CREATE (a)-[:FACT {"
    + ", ".join(f"{c}: {_typed(f'${c}', t)}" for c, t in FACT_TYPES.items()) + "}]->(b)"
)
_LOCATE_FACT = "MATCH (a:Entity {id: $s})-[f:FACT]->(b:Entity {id: $o}) WHERE f.id = $id "
_MERGE_EDGE = {
    "CO_OCCURS": "MERGE (a)-[r:CO_OCCURS]->(b) "
                 "ON CREATE SET r.weight = $weight, r.count = $count, r.source = $source, "
                 "r.at = $at ON MATCH SET r.weight = r.weight + $weight, "
                 "r.count = r.count + $count, r.at = $at",
    "REFERENCES": "MERGE (a)-[r:REFERENCES]->(b) "
                  "ON CREATE SET r.weight = $weight, r.source = $source, r.at = $at "
                  "ON MATCH SET r.weight = CASE WHEN r.weight > $weight THEN r.weight "
                  "ELSE $weight END",
    "SUPERSEDES": "MERGE (a)-[r:SUPERSEDES]->(b) ON CREATE SET r.reason = $reason, r.at = $at",
}
_ARROW_EDGE_TYPES = {"from": pa.string(), "to": pa.string(), "source": pa.string(),
                     "reason": pa.string(), "weight": pa.float64(), "count": pa.int64(),
                     "at": pa.timestamp("us"), "gone": pa.bool_()}


#: What a store directory may hold before its Kuzu file is there (a store being made, or
#: one whose open failed half-way), beside the WAL's and the index's temporaries.
_OWN_FILES = frozenset({"graph.kuzu", "graph.kuzu.wal", "graph.kuzu.vectors",
                        "graph.kuzu.walmark", "graphmem.keys", "recall.index",
                        ".DS_Store"})  # (macOS's Finder leaves one in a folder it opened)


class KuzuEngine(rules.Writes):
    """One store in an embedded Kuzu database (a directory, or ``":memory:"``)."""

    @staticmethod
    def holds_store(path: str | os.PathLike[str]) -> bool:
        """Whether the directory ``path`` holds a store already (its Kuzu file): a
        directory of other files does not, and opening it without creating is refused."""
        return os.path.isfile(os.path.join(path, Database.FILE_NAME))

    @staticmethod
    def foreign_directory(path: str | os.PathLike[str]) -> str | None:
        """Why a new store may not go into ``path``: a directory of other files that
        holds no store (a mistyped path would mix a database into someone's folder),
        or None."""
        if os.fspath(path) == ":memory:" or KuzuEngine.holds_store(path):
            return None
        if os.path.isfile(path):
            return f"{os.fspath(path)} is a file, not a graphmem database directory"
        try:
            names = sorted(entry.name for entry in os.scandir(path)
                           if entry.name not in _OWN_FILES
                           and not entry.name.startswith(("graph.kuzu.wal", "recall.index.")))
        except (NotADirectoryError, FileNotFoundError):
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from None
        if not names:
            return None
        shown = names[:3] + (["..."] if len(names) > 3 else [])
        return (f"{os.fspath(path)} holds other files ({', '.join(shown)}) and no graphmem "
                "database: a new database goes into a new or empty directory")

    @staticmethod
    def link_problem(path: str | os.PathLike[str]) -> str | None:
        """What is wrong when ``path`` leads through a symbolic link to nothing (``_db``)."""
        return link_problem(path)

    def __init__(self, path: str, *, buffer_pool_mb: int = 512, read_only: bool = False) -> None:
        self.db = Database(path, buffer_pool_mb=buffer_pool_mb, read_only=read_only)
        try:
            self._start(path, read_only)
        except BaseException:  # nothing of a failed open stays held (the file, the keys)
            self.db.close()
            raise

    def _start(self, path: str, read_only: bool) -> None:
        self.schema_version = ensure_schema(self.db, target=SCHEMA_VERSION)
        if not read_only:
            finish_facts(self.db)
            self._remake_facts_when_due()
        self.db.watch_lists(LIST_TABLES)
        self.path = path if self.db.in_memory else os.path.abspath(path)
        self.read_only = read_only
        self._keys = KeyFile(None if self.db.in_memory else path, read_only=read_only)
        self.secrets_location = self._keys.where
        if not read_only:
            self._move_forget_key()
        self.recovery_note = self.db.recovery_note
        self.cypher: CypherCapability | None = KuzuCypher(self.db)
        self.sql: SqlCapability | None = None
        #: one writing process per database: no other process commits anything
        self.changes: ChangeFeed | None = None
        self.local_dir: str | None = None if self.db.in_memory else path
        #: every write transaction's change-ring row and vectors (``_journal``)
        self._journal = ChangeJournal(self.db, self.local_dir, self.meta(),
                                      read_only=read_only)
        self.db.journal = self._journal
        if not read_only and self.local_dir and not self._journal.vectors.trusted \
                and self.memory_count() == 0:
            self._journal.set_log(self._journal.vectors.rewrite().finish())  # a new store
        # Whether any edge is marked gone (until the next purge): bulk edge scans skip
        # the filter when none is, which halves their cost at 400k edges (measured).
        self._has_gone = self.meta().get(_GONE_KEY, "0") != "0"
        #: bytes of the texts purged away while open, looked for in the files at close
        self._erased: set[bytes] = set()

    def close(self) -> None:
        self.db.close()
        if self._erased:
            erased, self._erased = self._erased, set()
            _scrub_apart(self.path, erased, buffer_pool_mb=self.db.buffer_pool_mb)

    def exclusive(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A no-op: the file lock keeps every other writing process out already."""
        return contextlib.nullcontext()

    # -- store properties ------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {k: v for k, v in self.db.read("MATCH (m:Meta) RETURN m.key, m.value")}

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.db.write() as tx:
            tx.changes = ChangeSet(bulk=any(k.startswith("embedder") for k in values))
            for key, value in values.items():
                tx.run("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    # -- the change log ----------------------------------------------------------------
    def change_mark(self) -> str:
        return self._journal.mark()

    def changes_since(self, mark: str) -> list[ForeignChange] | None:
        return self._journal.since(mark)

    # -- secret keys -------------------------------------------------------------------
    def secrets(self) -> list[tuple[str, str]]:
        """The store's keys, from the key file beside the database (``_secrets``)."""
        return self._keys.read()

    def add_secret(self, purpose: str, value: str) -> None:
        self._keys.add(purpose, value)

    def _move_forget_key(self) -> None:
        """Stores before v6 kept the forget key in ``Meta``, where read-only Cypher and
        every backup found it beside the digests: it moves to the key file (kept
        first, then deleted from ``Meta``; a crash between leaves it in both, and the
        next opening finishes)."""
        legacy = self.meta().get(_LEGACY_FORGET_KEY)
        if legacy is None:
            return
        if ("forget", legacy) not in self._keys.read():
            self._keys.add("forget", legacy)
        self.db.run_auto("MATCH (m:Meta {key: $k}) DELETE m", {"k": _LEGACY_FORGET_KEY})

    # -- writes (``commit``, ``apply_decisions``: ``Writes``) ---------------------------
    @contextlib.contextmanager
    def writer(self) -> Iterator[BatchWriter]:
        """One transaction for several batches (a streamed import): everything written
        through it is committed when the block ends, or nothing if it raises."""
        erased = False
        with self.db.write() as tx:
            writer = _TxWriter(self, tx)
            yield writer
            erased = writer.erased
        if erased:
            # Crash recovery keeps torn write-ahead logs beside the file; they may hold
            # the erased text.
            self.db.remove_torn_copies()

    #: The FACT table is made again, when the store opens, once this many facts were
    #: added since it was last made, or this share of the facts it then held when more
    #: (``remake_facts``: 2.3 s at 159k facts, where a checkpoint after new facts took up
    #: to 6 s more before it). Only when it opens: made again after writes, as facts came,
    #: a process building bench_writes' store with the default 1 GB buffer pool found it
    #: full at 51k memories (a COMMIT after COPY), where one that never made it again went
    #: on (past 77k, measured).
    REMAKE_FACTS = 10_000
    REMAKE_SHARE = 0.05

    def _remake_facts_when_due(self) -> None:
        """On opening: the FACT table made again when due. The store opens whatever
        happens here (a failure is a warning, and the next opening tries again)."""
        try:
            made, now = int(self.meta().get(_FACTS_MADE) or 0), count_facts(self.db)
            if now - made < max(self.REMAKE_FACTS, self.REMAKE_SHARE * made):
                return
            remake_facts(self.db)
            self.set_meta({_FACTS_MADE: str(now)})
        except GraphmemError as exc:
            logging.getLogger("graphmem").warning(
                "making the fact table again failed (tried again when the store opens "
                "next): %s", exc)
            try:  # a new table filled already is not left beside the old one
                finish_facts(self.db)
            except GraphmemError as again:
                logging.getLogger("graphmem").warning(
                    "the fact table's copy is left until the store opens again: %s", again)

    def _write(self, tx: Tx, batch: WriteBatch) -> None:
        # COPY from Arrow: ~0.06 ms a memory with its version and edge, against ~0.8 ms
        # through UNWIND ... CREATE; but Kuzu checkpoints when a transaction that copied
        # commits (~30 ms, and it must wait for running reads). Small writes (one add(),
        # a sidecar request) therefore CREATE, and only bulk ones COPY.
        small = len(batch.memories) + len(batch.events) + len(batch.new_edges) <= _SMALL_WRITE
        _declare(tx, batch)
        rules.write_batch(batch, _Steps(self, tx, small))

    def _existing_entities(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are in the Entity table already (gone ones too)."""
        wanted = set(ids)
        if len(wanted) <= _LOOKUP_LIMIT:
            return {i for i in wanted
                    if self.db.read("MATCH (e:Entity {id: $id}) RETURN e.id", {"id": i})}
        rows = self.db.read("MATCH (e:Entity) RETURN e.id")
        return wanted & {str(r[0]) for r in rows}

    def _run_job(self, job: Job, decisions: Sequence[Decision], changes: ChangeSet, *,
                 now: datetime, actor: str) -> int:
        return _jobs.run_job(self.db, job, decisions, changes, now=now, actor=actor)

    def record_access(self, records: Mapping[str, AccessRecord]) -> None:
        """Write access counters (absolute values) for many memories in one transaction."""
        with self.db.write() as tx:
            tx.changes = ChangeSet()
            tx.changes.accessed.update(dict.fromkeys(records))
            tx.set_lists("Memory")
            tx.run_many(
                "MATCH (m:Memory {id: $id}) SET m.access_count = $n, m.last_accessed = $t, "
                "m.access_times = CAST($ts AS TIMESTAMP[])",
                [{"id": memory_id, "n": n, "t": t, "ts": list(ts)}
                 for memory_id, (n, t, ts) in records.items()])

    def set_vectors(self, vectors: Mapping[str, np.ndarray | None],
                    sentences: Mapping[str, np.ndarray | None] | None = None) -> None:
        """Replace stored vectors (and with ``sentences`` the sentence vectors of the same
        memories) in one transaction."""
        with self.db.write() as tx:
            tx.changes = ChangeSet()
            tx.changes.touch(vectors)
            tx.vectors.update(vectors)
            if sentences is None:
                tx.run_many("MATCH (m:Memory {id: $id}) SET m.vec = $vec",
                            [{"id": i, "vec": encode_vector(v)} for i, v in vectors.items()])
                return
            tx.run_many("MATCH (m:Memory {id: $id}) SET m.vec = $vec, m.sentences = $s",
                        [{"id": i, "vec": encode_vector(v),
                          "s": sentences_text(sentences.get(i))} for i, v in vectors.items()])

    def purge(self, erased: Collection[str] = ()) -> None:
        """Rewrite the database file from its live data (see ``Database.rebuild``):
        graphmem's own schema, every table copied from an export, gone edges left out.

        ``erased``: the texts the purge removes. Kuzu can write a page's unused bytes
        from this process's freed memory (a forgotten message came back so in 2 of 300
        forgets under CPU load, measured): ``close`` looks for them in the files
        and, where any is, purges again in a process that never held them."""

        def build(fresh: Database, export: Path) -> None:
            build_from_parquet(fresh, SCHEMA_VERSION, lambda name: (export / name).open("rb"),
                               label=f"rebuild of {self.path}", drop_gone=True)
            fresh.run_auto("MERGE (m:Meta {key: $k}) SET m.value = '0'", {"k": _GONE_KEY})

        tables = table_files(self.db)
        self.db.rebuild(build, lambda db, export: export_tables(db, tables, export))
        self._has_gone = self.meta().get(_GONE_KEY, "0") != "0"
        needles = _needles(erased) if not self.db.in_memory else set()
        if 0 < len(needles | self._erased) <= _SCAN_LIMIT:
            # what the rebuilt file holds is live (another memory says it): not looked for
            needles -= _held(self.path, needles)
        self._erased |= needles
        with self.db.snapshot():  # the vectors that erasures replaced leave the log too
            if self._journal.vectors.trusted:
                value = self._journal.vectors.compact()
                self._journal.set_log(value or "")

    def _live(self, prefix: str = "WHERE") -> str:
        """The filter that leaves out gone edges (``r``), when there are any."""
        return f"{prefix} r.gone IS NULL " if self._has_gone else ""

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Hold off every writer (reads go on) for a consistent multi-step read."""
        with self.db.snapshot():
            yield

    # -- reads -------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        rows = self.db.read_prepared(
            f"MATCH (m:Memory {{id: $id}}) RETURN {_MEMORY_RETURN}", {"id": memory_id})
        if not rows:
            return None
        return memory_from_row(dict(zip(MODEL_COLUMNS, rows[0], strict=True)))

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id, in the order asked (unknown ids are left out). A few ids are
        primary-key lookups (~3 ms each); many are one scan."""
        wanted = list(dict.fromkeys(ids))
        if len(wanted) <= _LOOKUP_LIMIT:
            found = {i: m for i in wanted if (m := self.get(i)) is not None}
        else:
            keep = set(wanted)
            table = self._arrow_scan(MODEL_COLUMNS, owner=None)
            found = {row["id"]: memory_from_row(row) for row in to_pylist(table)
                     if row["id"] in keep}
        return {i: found[i] for i in wanted if i in found}

    def existing(self, ids: Sequence[str]) -> set[str]:
        wanted = set(ids)
        if len(wanted) <= _LOOKUP_LIMIT:
            return {i for i in wanted
                    if self.db.read("MATCH (m:Memory {id: $id}) RETURN m.id", {"id": i})}
        table = self._arrow_scan(("id",), owner=None)
        return wanted & set(table.column("id").to_pylist())

    def forgotten(self, ids: Sequence[str]) -> set[str]:
        wanted = set(ids)
        if not wanted:
            return set()
        if len(wanted) <= _LOOKUP_LIMIT:  # link, supersede; a re-embedding batch scans
            return {i for i in wanted if self.db.read_prepared(
                "MATCH (m:Memory {id: $id}) RETURN m.status", {"id": i}) == [["forgotten"]]}
        rows = self.db.read("MATCH (m:Memory) WHERE m.status = 'forgotten' RETURN m.id")
        return wanted & {str(r[0]) for r in rows}

    def forgotten_digests(self, digests: Sequence[str], *, owner: str | None) -> set[str]:
        if not digests:
            return set()
        whose = "m.owner = $o" if owner is not None else "m.owner IS NULL"
        rows = self.db.read(f"MATCH (m:Memory) WHERE m.status = 'forgotten' AND {whose} "
                            "RETURN m.text_sha256, m.integrity",
                            {"o": owner} if owner is not None else {})
        return set(digests) & set().union(*(forgotten_holds(*r) for r in rows))

    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        return [memory_from_row(row) for row in to_pylist(self._arrow_scan(
            MODEL_COLUMNS, owner=owner, offset=offset, limit=limit))]

    def memory_count(self, *, owner: str | None = None) -> int:
        if owner is None:
            return int(self.db.read("MATCH (m:Memory) RETURN count(*)")[0][0])
        return int(self.db.read("MATCH (m:Memory) WHERE m.owner = $owner RETURN count(*)",
                                {"owner": owner})[0][0])

    def scan(self, fields: Sequence[str], *, owner: str | None = None,
             ids: Sequence[str] | None = None,
             vector_dtype: type[np.floating[Any]] = np.float32) -> MemoryScan:
        import pyarrow.compute as pc  # lazily: 0.2 s of every start

        check_vector_dtype(vector_dtype)
        columns = []
        for name in fields:
            column = FIELD_COLUMNS.get(name, name)
            if column not in MEMORY_TYPES:
                raise InvalidInputError(f"not a memory field: {name}", field=name)
            columns.append(column)
        vectors = has_vector = None
        if ids is not None and len(ids) <= _LOOKUP_LIMIT:
            table = self._lookup(columns, ids)
            if "vec" in columns:
                encoded = table.column("vec").to_pylist()
                table = table.drop_columns(["vec"])
                vectors, has_vector = _matrix(encoded)
                vectors = vectors.astype(vector_dtype, copy=False)
        else:
            # The vectors are read apart, a page of ids at a time, into one matrix: as
            # one Arrow column of base64 text they were 2 GB at 1M memories, and their
            # decoded copies as much again.
            rest = [c for c in columns if c not in ("id", "vec")]
            table = self._arrow_scan(["id", *rest], owner=owner)
            if ids is not None:
                table = table.filter(pc.is_in(table.column("id"), value_set=pa.array(list(ids))))
            if "vec" in columns:
                vectors, has_vector = self._vectors(column_values(table.column("id")),
                                                    paged=ids is None, dtype=vector_dtype,
                                                    every=ids is None and owner is None)
            table = table.select([c for c in columns if c != "vec"])
        renamed = [next((f for f, c in FIELD_COLUMNS.items() if c == n), n)
                   for n in table.column_names]
        table = table.rename_columns(renamed)
        if "extra" in renamed or any(c in ("provenance", "integrity") for c in renamed):
            table = _json_columns(table)
        return MemoryScan(table=table, vectors=vectors, has_vector=has_vector)

    def _vectors(self, ids: Sequence[str], *, paged: bool,
                 dtype: type[np.floating[Any]] = np.float32, every: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of ``ids`` (in order) as ``_matrix`` gives them: from the vector
        log when it is sound (``paged``: ``ids`` are all memories, of an owner or of
        every one), else from the column a page at a time. Reading the column for
        ``every`` memory writes the log again (a store made before it, or whose log a
        Cypher write or a model switch emptied)."""
        where = {memory_id: row for row, memory_id in enumerate(ids)}
        if paged:
            found = self._journal.vectors.read(where, len(ids), dtype)
            if found is not None:
                return found
            if every and self.local_dir and not self.read_only:
                return self._vectors_rewriting(where, len(ids), dtype)
        return self._vector_pages(ids, where, len(ids), dtype, paged=paged)

    def _vectors_rewriting(self, where: Mapping[str, int], n: int,
                           dtype: type[np.floating[Any]]) -> tuple[np.ndarray, np.ndarray]:
        """Every vector from the column (``where`` places the rows returned) while a new
        log is written from it; writers wait meanwhile, so that no vector is missed."""
        with self.db.snapshot():
            every = column_values(self.db.read_arrow(
                "MATCH (m:Memory) RETURN m.id AS id ORDER BY m.id").column("id"))
            rewrite = self._journal.vectors.rewrite()
            try:
                found = self._vector_pages(every, where, n, dtype, paged=True,
                                           sink=rewrite.add)
                value = rewrite.finish()
            except BaseException:
                rewrite.abandon()
                raise
            self._journal.set_log(value)
        return found

    def _vector_pages(self, ids: Sequence[str], where: Mapping[str, int], n: int,
                      dtype: type[np.floating[Any]], *, paged: bool,
                      sink: Callable[[list[str], np.ndarray, np.ndarray], None] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of ``ids`` from the column, read a page at a time (ranges of
        ``ids`` when they are memories in id order, ``paged``, else lists of them), into
        the rows ``where`` gives (of ``n``); ``sink`` gets each page as read."""
        matrix = np.zeros((n, 0), dtype=dtype)
        present = np.zeros(n, dtype=bool)
        width: int | None = None
        for start in range(0, len(ids), _PAGE):
            page = ids[start:start + _PAGE]
            if paged:
                found = self.db.read_arrow(
                    "MATCH (m:Memory) WHERE m.id >= $first AND m.id <= $last "
                    "RETURN m.id AS id, m.vec AS vec", {"first": page[0], "last": page[-1]})
            else:
                found = self.db.read_arrow("MATCH (m:Memory) WHERE m.id IN $ids "
                                           "RETURN m.id AS id, m.vec AS vec", {"ids": page})
            found_ids = found.column("id").to_pylist()
            rows = np.fromiter((where.get(i, -1) for i in found_ids), dtype=np.int64,
                               count=found.num_rows)
            # the first vector sets the width, as in _matrix
            vectors, ok = decode_vectors(found.column("vec").to_pylist(), width)
            if ok.any():
                width = vectors.shape[1]
            if sink is not None:
                sink(found_ids, vectors, ok)
            ok &= rows >= 0
            if ok.any():
                if not matrix.shape[1]:
                    matrix = np.zeros((n, vectors.shape[1]), dtype=dtype)
                matrix[rows[ok]] = vectors[ok]
                present[rows[ok]] = True
        return matrix, present

    def _arrow_scan(self, columns: Sequence[str], *, owner: str | None, offset: int = 0,
                    limit: int | None = None) -> pa.Table:
        """``columns`` of every memory (of ``owner``) in id order, or of ``limit`` of
        them after the first ``offset``. The ids are read first; beyond a page of
        memories, the rows a page of ids at a time: sorting every row at once needed
        more than a 1 GB buffer pool at 700k memories."""
        where = "WHERE m.owner = $owner " if owner is not None else ""
        params: dict[str, Any] = {"owner": owner} if owner is not None else {}
        names = ", ".join(f"m.{c} AS {c}" for c in columns)
        ids = column_values(self.db.read_arrow(
            f"MATCH (m:Memory) {where}RETURN m.id AS id ORDER BY m.id", params).column("id"))
        everything = offset == 0 and (limit is None or limit >= len(ids))
        ids = ids[offset:] if limit is None else ids[offset:offset + limit]
        if everything and len(ids) <= _PAGE:
            return _utc(self.db.read_arrow(
                f"MATCH (m:Memory) {where}RETURN {names} ORDER BY m.id", params))
        if not ids:
            return _utc(self.db.read_arrow(
                f"MATCH (m:Memory) WHERE m.id = '\x00' RETURN {names}"))
        within = "WHERE m.id >= $first AND m.id <= $last" + (
            " AND m.owner = $owner " if owner is not None else " ")
        pages = [self.db.read_arrow(f"MATCH (m:Memory) {within}RETURN {names} ORDER BY m.id",
                                    {**params, "first": ids[start],
                                     "last": ids[min(len(ids), start + _PAGE) - 1]})
                 for start in range(0, len(ids), _PAGE)]
        return _utc(pa.concat_tables(pages))

    def _lookup(self, columns: Sequence[str], ids: Sequence[str]) -> pa.Table:
        """A few memories' columns by primary key (unknown ids left out), as Arrow."""
        query = "MATCH (m:Memory {id: $id}) RETURN " + ", ".join(f"m.{c}" for c in columns)
        rows = [row for memory_id in dict.fromkeys(ids)
                for row in self.db.read_prepared(query, {"id": memory_id})]
        if not rows:
            return _utc(self.db.read_arrow(
                "MATCH (m:Memory) WHERE m.id = '\x00' RETURN "
                + ", ".join(f"m.{c} AS {c}" for c in columns)))
        from ._rows import arrow_rows

        return _utc(arrow_rows([dict(zip(columns, r, strict=True)) for r in rows],
                               {c: MEMORY_TYPES[c] for c in columns}))

    def read_table(self, name: TableName, *, page: int = _PAGE) -> Iterator[pa.Table]:
        return read_table(self, name, page)

    def history(self, memory_id: str) -> list[Version]:
        cols = ", ".join(f"v.{c}" for c in VERSION_TYPES)
        rows = self.db.read(f"MATCH (:Memory {{id: $id}})-[:HAS_VERSION]->(v:Version) "
                            f"RETURN {cols} ORDER BY v.seq", {"id": memory_id})
        return [version_from_row(r) for r in rows]

    def versions(self, *, owner: str | None = None) -> list[Version]:
        cols = ", ".join(f"v.{c}" for c in VERSION_TYPES)
        where = "WHERE m.owner = $owner " if owner is not None else ""
        params = {"owner": owner} if owner is not None else {}
        rows = self.db.read(f"MATCH (m:Memory)-[:HAS_VERSION]->(v:Version) {where}"
                            f"RETURN {cols} ORDER BY v.memory_id, v.seq", params)
        return [version_from_row(r) for r in rows]

    def events(self, query: EventQuery) -> list[LifecycleEvent]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        match = "MATCH (e:LifecycleEvent) "
        for i, (name, operator, value) in enumerate(rules.event_conditions(query)):
            if name == "owner":
                # A value join (planned as a hash join), not a list scan per event.
                match = "MATCH (m:Memory), (e:LifecycleEvent) "
                clauses += ["m.id = e.memory_id", f"m.owner = $p{i}"]
            else:
                clauses.append(f"e.{name} {operator} $p{i}")
            params[f"p{i}"] = value
        where = ("WHERE " + " AND ".join(clauses) + " ") if clauses else ""
        tail = ""
        if query.limit is not None:
            tail = " LIMIT $limit"
            params["limit"] = int(query.limit)
        cols = ", ".join(f"e.{c}" for c in EVENT_TYPES)
        order = ", ".join(f"e.{c}" for c in rules.EVENT_ORDER)
        rows = self.db.read(f"{match}{where}RETURN {cols} ORDER BY {order}" + tail, params)
        return [event_from_row(r) for r in rows]

    def edges(self, kind: EdgeKind, *, owner: str | None = None) -> list[EdgeRecord]:
        table = EDGE_TABLES[kind]
        props = EDGE_PROPS[table]
        where = "WHERE r.gone IS NULL " if self._has_gone else "WHERE true "
        if owner is not None:
            where += "AND a.owner = $owner AND b.owner = $owner "
        params = {"owner": owner} if owner is not None else {}
        cols = ", ".join(f"r.{p}" for p in props)
        rows = self.db.read(
            f"MATCH (a:Memory)-[r:{table}]->(b:Memory) {where}RETURN a.id, b.id, {cols} "
            "ORDER BY a.id, b.id", params)
        return [edge_from_row(kind, r[0], r[1], dict(zip(props, r[2:], strict=True)))
                for r in rows]

    def edge_arrays(self, kind: EdgeKind) -> EdgeArrays:
        table = EDGE_TABLES[kind]
        weight = "r.weight" if table != "SUPERSEDES" else "1.0"
        data = self.db.read_arrow(f"MATCH (a:Memory)-[r:{table}]->(b:Memory) {self._live()}"
                                  f"RETURN a.id AS src, b.id AS dst, {weight} AS weight")
        src, dst = _shared_ids(data.column("src"), data.column("dst"))
        return EdgeArrays(src=src, dst=dst, weight=numbers(data.column("weight")))

    def links_of(self, memory_id: str, kind: EdgeKind | None = None) -> list[Link]:
        out: list[Link] = []
        tables = EDGE_TABLES if kind is None else {kind: EDGE_TABLES[kind]}
        for name, table in tables.items():
            weight = "r.weight" if table != "SUPERSEDES" else "1.0"
            for arrow, direction in (("-[r:{t}]->", "out"), ("<-[r:{t}]-", "in")):
                for other, w in self.db.read(
                        f"MATCH (a:Memory {{id: $id}}){arrow.format(t=table)}(b:Memory) "
                        f"WHERE r.gone IS NULL RETURN b.id, {weight}", {"id": memory_id}):
                    out.append(Link(kind=name, other=other, direction=direction,
                                    weight=float(w)))
        return out

    def counts(self) -> Counts:
        one = self.db.read
        return Counts(
            by_kind={str(k): int(n) for k, n in one("MATCH (m:Memory) RETURN m.kind, count(*)")},
            by_status={str(k): int(n)
                       for k, n in one("MATCH (m:Memory) RETURN m.status, count(*)")},
            hot=one("MATCH (m:Memory) WHERE m.hot RETURN count(*)")[0][0],
            superseded=one("MATCH (m:Memory) WHERE size(m.superseded_by) > 0 "
                           "RETURN count(*)")[0][0],
            owners=one("MATCH (m:Memory) WHERE m.owner IS NOT NULL "
                       "RETURN count(DISTINCT m.owner)")[0][0],
            edges={kind: one(f"MATCH ()-[r:{table}]->() {self._live()}RETURN count(*)")[0][0]
                   for kind, table in EDGE_TABLES.items()},
            versions=one("MATCH (v:Version) RETURN count(*)")[0][0],
            events=one("MATCH (e:LifecycleEvent) RETURN count(*)")[0][0],
        )

    def entities(self, *, owner: str | None = None, all_owners: bool = False,
                 ids: Sequence[str] | None = None) -> list[EntityRecord]:
        """The live entities of ``owner`` (None: unowned ones), of every owner, or
        these ``ids``."""
        columns = ", ".join(f"e.{c}" for c in ENTITY_TYPES if c != "gone")
        if ids is not None:
            rows = [row for entity_id in dict.fromkeys(ids) for row in self.db.read_prepared(
                f"MATCH (e:Entity {{id: $id}}) WHERE e.gone IS NULL RETURN {columns}",
                {"id": entity_id})]
        else:
            where, params = _owner_clause("e", owner, all_owners)
            rows = self.db.read(f"MATCH (e:Entity) WHERE e.gone IS NULL{where} RETURN "
                                f"{columns} ORDER BY e.id", params)
        return [entity_from_row(r) for r in rows]

    def mentions(self, *, memory_ids: Sequence[str] | None = None,
                 entity_ids: Sequence[str] | None = None) -> list[MentionRecord]:
        """Live mentions of these memories, or of these entities, or all of them."""
        ret = "RETURN m.id, e.id, r.role, r.weight, r.surface"
        match = "MATCH (m:Memory)-[r:MENTIONS]->(e:Entity) WHERE r.gone IS NULL "
        if memory_ids is None and entity_ids is None:
            table = self.db.read_arrow(match + ret.replace("m.id", "m.id AS m")
                                       .replace("e.id", "e.id AS e")
                                       .replace("r.role", "r.role AS role")
                                       .replace("r.weight", "r.weight AS weight")
                                       .replace("r.surface", "r.surface AS surface"))
            columns = [table.column(c).to_pylist() for c in ("m", "e", "role", "weight",
                                                              "surface")]
            return [MentionRecord(*row) for row in zip(*columns, strict=True)]
        rows: list[list[Any]] = []
        for memory_id in memory_ids or ():
            rows += self.db.read_prepared(
                "MATCH (m:Memory {id: $id})-[r:MENTIONS]->(e:Entity) WHERE r.gone IS NULL "
                + ret, {"id": memory_id})
        for entity_id in entity_ids or ():
            rows += self.db.read_prepared(
                "MATCH (m:Memory)-[r:MENTIONS]->(e:Entity {id: $id}) WHERE r.gone IS NULL "
                + ret, {"id": entity_id})
        return [MentionRecord(*row) for row in rows]

    def mentioned_elsewhere(self, entity_ids: Sequence[str], memory_id: str) -> set[str]:
        # LIMIT 1 stops at the first: 1.0 ms against 15 for the 2,089 mentions of a place
        # at 100k memories
        return {entity_id for entity_id in dict.fromkeys(entity_ids) if self.db.read_prepared(
            "MATCH (m:Memory)-[r:MENTIONS]->(e:Entity {id: $e}) WHERE r.gone IS NULL "
            "AND m.id <> $m RETURN m.id LIMIT 1", {"e": entity_id, "m": memory_id})}

    def facts(self, *, owner: str | None = None, all_owners: bool = False,
              sources: Sequence[str] | None = None,
              entity_ids: Sequence[str] | None = None) -> list[FactRecord]:
        """Live facts of ``owner`` (or every owner), or those stated by these memories,
        or those about these entities (as subject or object), oldest recorded first."""
        ret = ("RETURN f.id, f.owner, a.id, f.predicate, b.id, f.confidence, f.valid_from, "
               "f.valid_to, f.recorded, f.sources, f.rule, f.ended_by")
        base = "MATCH (a:Entity)-[f:FACT]->(b:Entity) WHERE f.gone IS NULL "
        rows: list[list[Any]] = []
        if sources is not None:
            for memory_id in sources:
                rows += self.db.read(base + "AND f.sources CONTAINS $m " + ret,
                                     {"m": source_needle(memory_id)})
        elif entity_ids is not None:
            # The hints start from the entity found by key: planned freely, Kuzu scanned
            # every fact (17 ms against 3 for one entity at 160k facts).
            for entity_id in entity_ids:
                rows += self.db.read_prepared(
                    "MATCH (a:Entity {id: $e})-[f:FACT]->(b:Entity) WHERE f.gone IS NULL "
                    "HINT (a JOIN f) JOIN b " + ret, {"e": entity_id})
                rows += self.db.read_prepared(
                    "MATCH (a:Entity)-[f:FACT]->(b:Entity {id: $e}) WHERE f.gone IS NULL "
                    "AND a.id <> $e HINT (b JOIN f) JOIN a " + ret, {"e": entity_id})
        else:
            where, params = _owner_clause("f", owner, all_owners)
            rows = self.db.read(base + where.replace(" AND", "AND", 1) + " " + ret, params) \
                if where else self.db.read(base + ret)
        seen: dict[str, FactRecord] = {}
        for row in rows:
            fact = fact_from_row(row)
            seen.setdefault(fact.id, fact)
        return sorted(seen.values(), key=lambda f: (f.recorded, f.id))

    def graph_owners(self, *, entities: Sequence[str] = (), facts: Sequence[str] = ()
                     ) -> dict[str, str | None]:
        """Owners of entity and fact ids, gone ones too (imports check them)."""
        found: dict[str, str | None] = {}
        for entity_id in dict.fromkeys(entities):
            for owner, in self.db.read_prepared("MATCH (e:Entity {id: $id}) RETURN e.owner",
                                                {"id": entity_id}):
                found[entity_id] = owner
        if facts:
            rows = self.db.read("MATCH ()-[f:FACT]->() WHERE f.id IN $ids "
                                "RETURN f.id, f.owner", {"ids": list(dict.fromkeys(facts))})
            found.update({str(fact_id): owner for fact_id, owner in rows})
        return found

    def holding(self, field: Literal["context", "payload"], probe: str, *,
                whole: bool = False, session: str | None = None) -> list[Memory]:
        if not probe and session is None:
            return []
        column = {"context": "context", "payload": "payload"}[field]
        test = f"m.{column} {'=' if whole else 'CONTAINS'} $t" if probe else \
            f"m.{column} IS NOT NULL"
        of = " AND m.session = $s" if session is not None else ""
        rows = self.db.read(f"MATCH (m:Memory) WHERE {test}{of} "
                            f"RETURN {_MEMORY_RETURN} ORDER BY m.id",
                            {**({"t": probe} if probe else {}),
                             **({"s": session} if session is not None else {})})
        return [memory_from_row(dict(zip(MODEL_COLUMNS, r, strict=True))) for r in rows]

    def events_mentioning(self, memory_id: str, probe: str
                          ) -> list[tuple[str, dict[str, Any]]]:
        probes = rules.quoting_probes(memory_id, probe)
        params: dict[str, Any] = {"id": memory_id, **{f"p{i}": p for i, p in enumerate(probes)}}
        rows = self.db.read(
            "MATCH (e:LifecycleEvent) WHERE e.memory_id <> $id AND ("
            + " OR ".join(f"e.metadata CONTAINS $p{i}" for i in range(len(probes)))
            + ") RETURN e.event_id, e.metadata ORDER BY e.event_id", params)
        return rules.quoting_rows(rows)


class _TxWriter:
    """Writes batches into one open transaction (see ``KuzuEngine.writer``)."""

    def __init__(self, engine: KuzuEngine, tx: Tx) -> None:
        self._engine, self._tx = engine, tx
        self.erased = False

    def write(self, batch: WriteBatch) -> None:
        if batch:
            self._engine._write(self._tx, batch)
            self.erased |= bool(batch.erasures)

    def load(self, name: TableName, rows: pa.Table) -> None:
        tx = self._tx
        tx.changes = tx.changes or ChangeSet()
        tx.changes.bulk = True
        load_table(tx, name, rows, lambda ids, matrix, present: self._engine._journal.stage(
            tx, ids, matrix, present))


class _Steps:
    """Each part of a batch as Kuzu writes it, in the open transaction ``tx``
    (``_engine_rules.write_batch`` calls them in order); ``small`` batches CREATE,
    larger ones COPY (see ``KuzuEngine._write``)."""

    def __init__(self, engine: KuzuEngine, tx: Tx, small: bool) -> None:
        self._engine, self._tx, self._small = engine, tx, small

    def memories(self, rows: list[NewMemory]) -> None:
        tx = self._tx
        memories = [memory_params(m) for m in rows]
        versions = [version_params(m.version) for m in rows]
        if self._small:
            tx.created("Memory", (m["id"] for m in memories))
            tx.run(_CREATE_MEMORIES, {"rows": memories})
            tx.run_many(_CREATE_VERSION, versions)
            return
        tx.copy("Memory", _arrow(memories, MEMORY_TYPES))
        tx.copy("Version", _arrow(versions, VERSION_TYPES))
        tx.copy("HAS_VERSION", pa.table({"from": [r["id"] for r in memories],
                                         "to": [v["id"] for v in versions]}))

    def patches(self, rows: list[Patch]) -> None:
        # In a bulk batch, version rows alone (a copied or restored store's history) COPY:
        # a statement each took ~1 ms, 3.4 s of a 10k-memory restore's 10.
        alone = [] if self._small else [p for p in rows if p.version is not None
                                         and not p.set and p.event is None]
        if alone:
            versions = [version_params(p.version) for p in alone if p.version is not None]
            self._tx.copy("Version", _arrow(versions, VERSION_TYPES))
            self._tx.copy("HAS_VERSION", pa.table({"from": [p.memory_id for p in alone],
                                                   "to": [v["id"] for v in versions]}))
        copied = {id(p) for p in alone}
        if any(_MEMORY_LISTS.intersection(p.set) for p in rows):
            self._tx.set_lists("Memory")
        for patch in (p for p in rows if id(p) not in copied):
            query, params = patch_statement(patch)
            if query:
                self._tx.run(query, params)

    def events(self, rows: list[LifecycleEvent]) -> None:
        events = [event_params(e) for e in rows]
        if self._small:
            self._tx.run(_CREATE_EVENTS, {"rows": events})
        else:
            self._tx.copy("LifecycleEvent", _arrow(events, EVENT_TYPES))

    def new_edges(self, rows: list[EdgeRecord]) -> None:
        by_kind: dict[str, list[EdgeRecord]] = {}
        for edge in rows:
            by_kind.setdefault(edge.kind, []).append(edge)
        for kind, edges in by_kind.items():
            if self._small:
                self._tx.run_many(_CREATE_EDGE[EDGE_TABLES[kind]],
                                  [edge_params(e) for e in edges])
            else:
                _copy_edges(self._tx, kind, edges)

    def merged_edges(self, rows: list[EdgeRecord]) -> None:
        for edge in rows:
            table = EDGE_TABLES[edge.kind]
            params = {"src": edge.src, "dst": edge.dst, "at": edge.at,
                      **({"reason": edge.reason} if table == "SUPERSEDES" else
                         {"weight": edge.weight, "source": edge.source}),
                      **({"count": edge.count} if table == "CO_OCCURS" else {})}
            self._tx.run("MATCH (a:Memory {id: $src}), (b:Memory {id: $dst}) "
                         + _MERGE_EDGE[table], params)

    # the knowledge graph: what leaves first, then what comes
    def unmentioned(self, rows: list[str]) -> None:
        self._tx.run_many(
            "MATCH (m:Memory {id: $id})-[r:MENTIONS]->(:Entity) SET r.gone = true",
            [{"id": i} for i in rows])

    def gone_facts(self, rows: list[FactRecord]) -> None:
        # the id goes too: one made before ids were keyed hashes what the fact said
        self._tx.run_many(_LOCATE_FACT + "SET f.gone = true, f.sources = '[]', f.id = NULL",
                          [{"s": f.subject, "o": f.object, "id": f.id} for f in rows])

    def gone_entities(self, rows: list[str]) -> None:
        # the name and forms are text of the memories that mentioned it
        self._tx.set_lists("Entity")
        ids = [{"id": i} for i in rows]
        self._tx.run_many("MATCH (e:Entity {id: $id}) SET e.gone = true, e.name = '', "
                          "e.aliases = CAST([] AS STRING[]), e.merges = NULL", ids)
        # and every fact between it and another, whatever its sources say: one left
        # between a gone entity and another (its sources written by hand) could not be
        # copied into the purge's new file, and no purge finished after it
        # (one direction a statement, the keyed entity written last: an undirected
        # pattern failed an assertion of Kuzu, and one with the key first scanned Entity)
        for pattern in ("()<-[f:FACT]-(e:Entity {id: $id})",
                        "()-[f:FACT]->(e:Entity {id: $id})"):
            self._tx.run_many(f"MATCH {pattern} WHERE f.gone IS NULL SET f.gone = true, "
                              "f.sources = '[]', f.id = NULL", ids)

    def new_entities(self, rows: list[EntityRecord]) -> None:
        tx, engine = self._tx, self._engine
        entities = [entity_params(e) for e in rows]
        # An entity that went (its last mention was forgotten) comes back under its
        # old id when a new memory names it again.
        returning = engine._existing_entities([e["id"] for e in entities])
        owners = engine.graph_owners(entities=sorted(returning))
        taken = [e["id"] for e in entities if e["id"] in owners
                 and owners[e["id"]] != e["owner"]]
        if taken:  # an id is its owner's for good, even once the entity went
            raise ConflictError(f"entity {taken[0]} belongs to another owner")
        if returning:
            tx.set_lists("Entity")
            tx.run_many("MATCH (e:Entity {id: $id}) SET e.owner = $owner, e.name = $name, "
                        "e.type = $type, e.aliases = CAST($aliases AS STRING[]), "
                        "e.merges = $merges, e.created = $created, e.gone = NULL",
                        [{k: v for k, v in e.items() if k != "gone"} for e in entities
                         if e["id"] in returning])
            entities = [e for e in entities if e["id"] not in returning]
        if entities and (self._small or len(entities) <= _SMALL_WRITE):
            tx.created("Entity", (e["id"] for e in entities))
            tx.run(_CREATE_ENTITIES, {"rows": entities})
        elif entities:
            tx.copy("Entity", _arrow(entities, ENTITY_TYPES))

    def changed_entities(self, rows: list[EntityRecord]) -> None:
        self._tx.set_lists("Entity")
        self._tx.run_many("MATCH (e:Entity {id: $id}) SET e.name = $name, e.type = $type, "
                          "e.aliases = CAST($aliases AS STRING[]), e.merges = $merges, "
                          "e.gone = NULL",
                          [{k: v for k, v in entity_params(e).items()
                            if k in ("id", "name", "type", "aliases", "merges")}
                           for e in rows])

    def mentions(self, rows: list[MentionRecord]) -> None:
        mentions = [mention_params(m) for m in rows]
        if len(mentions) <= _SMALL_WRITE:
            self._tx.run_many(_CREATE_MENTION, mentions)
        else:
            self._tx.copy("MENTIONS", _rel_arrow(mentions, MENTION_TYPES))

    def facts(self, rows: list[FactRecord]) -> None:
        facts = [fact_params(f) for f in rows]
        if len(facts) <= _SMALL_WRITE:
            self._tx.run_many(_CREATE_FACT, facts)
        else:
            self._tx.copy("FACT", _rel_arrow(facts, FACT_TYPES))

    def changed_facts(self, rows: list[FactRecord]) -> None:
        self._tx.run_many(
            _LOCATE_FACT + "SET f.valid_from = $valid_from, f.valid_to = $valid_to, "
            "f.recorded = $recorded, f.ended_by = $ended_by, "
            "f.sources = $sources, f.confidence = $confidence, "
            "f.rule = $rule",
            [{"s": f.subject, "o": f.object, "id": f.id, "valid_from": f.valid_from,
              "valid_to": f.valid_to, "recorded": f.recorded, "ended_by": f.ended_by,
              "sources": sources_text(f.sources), "confidence": f.confidence,
              "rule": f.rule}
             for f in rows])

    def meta(self, rows: dict[str, str]) -> None:
        for key, value in rows.items():
            self._tx.run("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    def erasures(self, rows: list[Erasure]) -> None:
        for erasure in rows:
            rules.erase(erasure, self)
        self._tx.run("MERGE (m:Meta {key: $k}) SET m.value = '1'", {"k": _GONE_KEY})
        self._engine._has_gone = True

    # the steps of an erasure (``_engine_rules.erase``)
    def set_event_metadata(self, metadata: Mapping[str, Mapping[str, Any]]) -> None:
        self._tx.run_many("MATCH (e:LifecycleEvent {event_id: $e}) SET e.metadata = $m",
                          [{"e": e, "m": json_dump(dict(m))} for e, m in metadata.items()])

    def set_versions(self, memory_id: str, values: Mapping[str, Any]) -> None:
        self._tx.run("MATCH (:Memory {id: $id})-[:HAS_VERSION]->(v:Version) SET "
                     + ", ".join(f"v.{c} = {_literal(v)}" for c, v in values.items()),
                     {"id": memory_id})

    def set_version_digests(self, digests: Mapping[str, str]) -> None:
        self._tx.run_many("MATCH (v:Version {id: $v}) SET v.text_sha256 = $d",
                          [{"v": v, "d": d} for v, d in digests.items()])

    def redact_events(self, memory_id: str, metadata: Mapping[str, Any], reason: str,
                      keep: Sequence[str]) -> None:
        self._tx.run("MATCH (e:LifecycleEvent) WHERE e.memory_id = $id AND NOT "
                     "list_contains($keep, e.event_type) SET e.metadata = $m, e.reason = $r",
                     {"id": memory_id, "keep": list(keep), "m": json_dump(dict(metadata)),
                      "r": reason})

    def drop_edges(self, memory_id: str) -> None:
        # Edges are marked gone, never deleted (see ``_schema``); their text goes.
        blank = {"REFERENCES": "r.source = NULL", "CO_OCCURS": "r.source = NULL",
                 "SUPERSEDES": "r.reason = NULL"}
        for table in EDGE_TABLES.values():
            for pattern in ("-[r:{t}]->", "<-[r:{t}]-"):
                self._tx.run(f"MATCH (:Memory {{id: $id}}){pattern.format(t=table)}(:Memory) "
                             f"SET r.gone = true, {blank[table]}", {"id": memory_id})


def _literal(value: Any) -> str:
    """A Cypher literal of None or a bool (the values an erasure sets)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    raise TypeError(f"no literal for {value!r}")


_BIND_CHECK: list[BindCheck] = []


def bind_check() -> BindCheck:
    """This process's ``BindCheck`` for the current schema, started on first use."""
    if not _BIND_CHECK:
        _BIND_CHECK.append(BindCheck(SCHEMAS[SCHEMA_VERSION]))
    return _BIND_CHECK[0]


class KuzuCypher:
    """User Cypher through the guard (``_guard``): one reading statement in a READ ONLY
    transaction, or with ``write`` one data-changing statement committed with its audit
    event in one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def run(self, query: str, params: Mapping[str, Any], *, write: bool,
            event: LifecycleEvent | None, timeout_s: float) -> CypherResult:
        checked = check_user_query(query, write=write)
        check_parameters(query, params)
        check_generated(checked.text, params)
        if checked.names_null or any(holds_none(v) for v in params.values()):
            bind_check().check(checked.text, params)
        if not checked.writes:
            result = self._db.read_only_query(checked.text, params, checked.plan,
                                              timeout_s=timeout_s)
            return CypherResult(columns=result.columns, rows=result.rows)
        with self._db.write() as tx:
            before = values_before(tx, checked.text)
            result = tx.run_user(checked.text, params, checked.plan, timeout_s=timeout_s)
            refuse_unreadable(tx, checked.text, before)
            if event is not None:
                tx.run(_CREATE_EVENTS, {"rows": [event_params(event)]})
        return CypherResult(columns=result.columns, rows=result.rows)


def patch_statement(patch: Patch) -> tuple[str, dict[str, Any]]:
    """One memory's patch as one statement: its fields set, its version row and its
    event created (the event in a statement of its own made a tombstone or a feedback
    0.6-0.8 ms slower, measured in one process, interleaved). An event without fields
    or version row stands alone; a patch of nothing is no statement ("")."""
    params: dict[str, Any] = {"mid": patch.memory_id}
    sets, creates = [], []
    for name, value in patch.set.items():
        column, stored = column_value(name, value)
        params[f"s_{column}"] = stored
        sets.append(f"m.{column} = {_typed(f'$s_{column}', MEMORY_TYPES[column])}")
    if patch.version is not None:
        row = version_params(patch.version)
        params.update({f"v_{c}": row[c] for c in row})
        creates.append("(m)-[:HAS_VERSION]->(:Version {" + ", ".join(
            f"{c}: {_typed(f'$v_{c}', t)}" for c, t in VERSION_TYPES.items()) + "})")
    query = ""
    if sets or creates:
        query = "MATCH (m:Memory {id: $mid})" + (" SET " + ", ".join(sets) if sets else "")
    else:
        del params["mid"]
    if patch.event is not None:
        row = event_params(patch.event)
        params.update({f"e_{c}": row[c] for c in row})
        creates.append("(:LifecycleEvent {" + ", ".join(
            f"{c}: {_typed(f'$e_{c}', t)}" for c, t in EVENT_TYPES.items()) + "})")
    return " ".join([query, *(f"CREATE {c}" for c in creates)]).strip(), params


def _declare(tx: Tx, batch: WriteBatch) -> None:
    """Tell the journal what ``batch`` changes, and the vectors it stores."""
    if tx.changes is None:
        tx.changes = ChangeSet()
    tx.changes.add(batch)
    for new in batch.memories:
        tx.vectors[new.memory.id] = new.vector
    for patch in batch.patches:
        if "vector" in patch.set:
            tx.vectors[patch.memory_id] = patch.set["vector"]


def _owner_clause(var: str, owner: str | None, all_owners: bool
                  ) -> tuple[str, dict[str, Any]]:
    if all_owners:
        return "", {}
    if owner is None:
        return f" AND {var}.owner IS NULL", {}
    return f" AND {var}.owner = $owner", {"owner": owner}


def _rel_arrow(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> pa.Table:
    """Relationship rows (``from``, ``to`` and the properties) for COPY."""
    table = _arrow(rows, {"from": "STRING", "to": "STRING", **types})
    return table


def _arrow(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> pa.Table:
    from ._rows import arrow_rows

    return arrow_rows(rows, types)


def _copy_edges(tx: Tx, kind: str, edges: Sequence[EdgeRecord]) -> None:
    table = EDGE_TABLES[kind]
    props = EDGE_PROPS[table]
    columns: dict[str, list[Any]] = {"from": [e.src for e in edges], "to": [e.dst for e in edges]}
    for prop in props:
        columns[prop] = [naive(getattr(e, prop)) for e in edges]
    columns["gone"] = [None] * len(edges)
    arrays = [pa.array(values, type=_ARROW_EDGE_TYPES[name]) for name, values in columns.items()]
    tx.copy(table, pa.Table.from_arrays(arrays, names=list(columns)))


def _shared_ids(*columns: pa.ChunkedArray, block: int = 65_536) -> list[list[str]]:
    """Each column of ids as a list, every distinct id one Python string whichever edge
    holds it, converted a block at a time: at 1M memories and 3M edges, a string per
    edge end (``to_pylist``) held ~0.4 GB more while the recall index was built."""
    seen: dict[str, str] = {}
    out: list[list[str]] = []
    for column in columns:
        ids: list[str] = []
        for chunk in column.chunks:
            for start in range(0, len(chunk), block):
                ids.extend(seen.setdefault(v, v)
                           for v in chunk.slice(start, block).to_pylist())
        out.append(ids)
    return out


def _matrix(encoded: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """base64 vectors as one float32 matrix (zero rows where missing) and a presence mask."""
    return decode_vectors(encoded)


def _utc(table: pa.Table) -> pa.Table:
    """Kuzu's naive timestamps marked as UTC (they are stored in UTC)."""
    fields = []
    arrays = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if pa.types.is_timestamp(kind) and kind.tz is None:
            column = column.cast(pa.timestamp(kind.unit, tz="UTC"))
        elif pa.types.is_list(kind) and pa.types.is_timestamp(kind.value_type) \
                and kind.value_type.tz is None:
            column = column.cast(pa.list_(pa.timestamp(kind.value_type.unit, tz="UTC")))
        fields.append(name)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, names=fields)


def _json_columns(table: pa.Table) -> pa.Table:
    """JSON text columns as they are (strings): callers that want objects use
    ``memories()``; scans keep them compact."""
    return table


assert set(INTERNAL_FIELDS) - {"vector"} <= set(MEMORY_TYPES)
assert aware is not None


def _needles(texts: Collection[str]) -> set[bytes]:
    """What a purged text leaves in a file's bytes: 32 bytes of it every 4,000 (so a page
    of 4 KiB that holds any of it holds one) and its last 32, as stored and with its
    whitespace collapsed (as a context holds it); none under 8 bytes (which any live
    text may hold)."""
    found: set[bytes] = set()
    for text in texts:
        for form in {text.encode(), " ".join(text.split()).encode()}:
            pieces = [form[k:k + 32] for k in range(0, len(form), _NEEDLE_STRIDE)]
            found.update(p for p in (*pieces, form[-32:]) if len(p) >= 8)
    return found


def _held(directory: str, needles: Collection[bytes]) -> set[bytes]:
    """Which of ``needles`` the files of a store directory hold (read in 16 MiB pieces
    that overlap by the longest needle)."""
    overlap = max(map(len, needles), default=1) - 1
    found: set[bytes] = set()
    for path in sorted(Path(directory).glob(Database.FILE_NAME + "*")):
        with path.open("rb") as data:
            tail = b""
            while piece := data.read(16 << 20):
                window = tail + piece
                tail = window[len(window) - overlap:]
                found.update(n for n in needles if n not in found and n in window)
    return found


def _scrub_apart(directory: str, erased: Collection[bytes], *, buffer_pool_mb: int) -> None:
    """After a close: where a file still holds bytes of a purged text, purge it again in
    a new process (``_apart``), which never held the text, so none of its freed memory
    can reach a page; a warning says what is left. Each needle is one read of the files
    (~5 GB/s): past ``_SCAN_LIMIT`` of them, the purge runs without a look before or
    after."""
    look = len(erased) <= _SCAN_LIMIT
    if look and not _held(directory, erased):
        return
    log = logging.getLogger("graphmem")
    log.info("%s may hold bytes of a purged text; purging again in a new process", directory)
    package = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (package, os.environ.get("PYTHONPATH")) if p)}
    failed: str | None = None
    if not sys.executable or getattr(sys, "frozen", False):
        failed = "this program has no Python interpreter to start"
    else:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "graphmem._kuzu._apart", directory,
                 str(buffer_pool_mb)], env=env, capture_output=True, text=True,
                check=False, cwd=directory)
            lines = done.stderr.strip().splitlines()
            failed = (lines[-1] if lines else f"exit {done.returncode}") \
                if done.returncode else None
        except (OSError, subprocess.SubprocessError) as error:
            failed = str(error)
    if failed or (look and _held(directory, erased)):
        log.warning("the purge of %s could not remove every byte of a forgotten text "
                    "(%s); open the store in a new process and call purge()", directory,
                    failed or "they are still in its files")
