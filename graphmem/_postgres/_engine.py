"""The PostgreSQL engine: graphmem's port (``graphmem._engine.Engine``) over one
PostgreSQL database (or one schema of it) with pgvector.

Many processes may share it: every graphmem write is one transaction, appends what it
changed to ``changes`` (``_changes``) so that the others refresh what they keep in
memory, and merges where two writers may meet (an entity or a fact with the same id,
a co-occurrence seen twice) instead of failing. Edges, mentions, facts and entities
that leave the graph are deleted (Kuzu marks them gone; the port's reads are the same).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from .. import _engine_rules as rules
from .._engine import (
    EDGE_KINDS,
    AccessRecord,
    BatchWriter,
    ChangeFeed,
    ChangeSet,
    Counts,
    CypherCapability,
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
from .._errors import ConflictError, InvalidInputError
from .._models import LifecycleEvent, Memory, Version
from .._records import (
    EVENT_COLUMNS,
    FIELD_COLUMNS,
    MEMORY_COLUMNS,
    MODEL_COLUMNS,
    VERSION_COLUMNS,
    json_dump,
    memory_from_columns,
    sentences_text,
    stored_value,
)
from .._redact import forgotten_holds
from . import _jobs
from ._changes import ChangeLog, record
from ._db import Cursor, Database, copy_rows
from ._rows import (
    EDGE_COLUMNS,
    arrow_table,
    edge_from_values,
    entity_from_values,
    entity_values,
    event_values,
    fact_from_values,
    fact_values,
    memory_values,
    mention_values,
    vector_value,
    version_values,
)
from ._schema import SCHEMA_VERSION, ensure_schema
from ._search import SqlSearch
from ._sql import PostgresSql
from ._tables import load_table, read_table

__all__ = ["PostgresEngine"]

#: Writes of more rows than this go through COPY.
_COPY_ROWS = 64
_MEMORY_COLS = ", ".join(f'"{c}"' for c in MEMORY_COLUMNS)
_MODEL_COLS = ", ".join(f'"{c}"' for c in MODEL_COLUMNS)
_VERSION_COLS = ", ".join(f'"{c}"' for c in VERSION_COLUMNS)
_EVENT_COLS = ", ".join(f'"{c}"' for c in EVENT_COLUMNS)
_INSERT_MEMORY = (f"INSERT INTO memories ({_MEMORY_COLS}) VALUES "
                  f"({', '.join(['%s'] * len(MEMORY_COLUMNS))})")
_INSERT_VERSION = (f"INSERT INTO versions ({_VERSION_COLS}) VALUES "
                   f"({', '.join(['%s'] * len(VERSION_COLUMNS))})")
_INSERT_EVENT = (f"INSERT INTO events ({_EVENT_COLS}) VALUES "
                 f"({', '.join(['%s'] * len(EVENT_COLUMNS))})")
#: New edges between stored memories (a missing end creates nothing, as in Kuzu).
_INSERT_EDGES = (
    "INSERT INTO edges (kind, src, dst, owner, weight, count, source, reason, at) "
    "SELECT e.kind, e.src, e.dst, a.owner, e.weight, e.count, e.source, e.reason, e.at "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::float8[], %s::int8[], %s::text[], "
    "%s::text[], %s::timestamptz[]) AS e(kind, src, dst, weight, count, source, reason, at) "
    "JOIN memories a ON a.id = e.src JOIN memories b ON b.id = e.dst ")
#: How a merged edge meets the one stored: references keep the larger weight,
#: co-occurrences add up, supersedes stay as they are.
_MERGE_EDGE = {
    "references": "ON CONFLICT (kind, src, dst) DO UPDATE SET "
                  "weight = GREATEST(edges.weight, excluded.weight)",
    "co_occurs": "ON CONFLICT (kind, src, dst) DO UPDATE SET weight = edges.weight + "
                 "excluded.weight, count = edges.count + excluded.count, at = excluded.at",
    "supersedes": "ON CONFLICT (kind, src, dst) DO NOTHING",
}
_ENTITY_COLS = "id, owner, name, type, aliases, merges, created"
_FACT_COLS = ("id, owner, subject, predicate, object, confidence, valid_from, valid_to, "
              "recorded, sources, rule, ended_by")


class PostgresEngine(rules.Writes):
    """One store in a PostgreSQL database (a ``postgresql://`` URL; its schema is the
    first of the URL's search path, which must exist). Without ``create`` a schema that
    holds no store is an error instead of getting the tables."""

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4,
                 create: bool = True) -> None:
        self.db = Database(url, read_only=read_only, pool_size=pool_size)
        try:
            self.schema_version = ensure_schema(self.db, target=SCHEMA_VERSION, create=create)
            self._changes = ChangeLog(self.db)
        except BaseException:
            self.db.close()
            raise
        self.path = self.db.where
        self.secrets_location = f"table secrets of {self.db.where}"
        self.read_only = read_only
        self.recovery_note: str | None = None
        #: Cypher is Kuzu's; the named queries' SQL texts (and ``store.sql``) run here
        self.cypher: CypherCapability | None = None
        self.sql: SqlCapability | None = PostgresSql(self.db)
        self.changes: ChangeFeed | None = self._changes
        #: the database is a server's: nothing of it lives on this host
        self.local_dir: str | None = None
        #: vector and full-text search in SQL (an engine feature, not part of the port)
        self.search = SqlSearch(self.db)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Hold a session advisory lock named ``name`` (every process of every host that
        shares the database waits for it)."""
        key = zlib.crc32(f"graphmem:{name}".encode())
        with self.db.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    # -- store properties ------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.db.rows("SELECT key, value FROM meta")}

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.writer() as writer:
            writer.write(WriteBatch(meta=dict(values)))

    def change_mark(self) -> str:
        return self._changes.mark()

    def changes_since(self, mark: str) -> list[ForeignChange] | None:
        return self._changes.since(mark)

    # -- secret keys -------------------------------------------------------------------
    def secrets(self) -> list[tuple[str, str]]:
        """The store's keys, from their own table (``_schema``: no read of the port, no
        export and no backup selects from it)."""
        return [(str(p), str(v)) for p, v in
                self.db.rows("SELECT purpose, value FROM secrets ORDER BY n")]

    def add_secret(self, purpose: str, value: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("INSERT INTO secrets (purpose, value) VALUES (%s, %s) "
                        "ON CONFLICT DO NOTHING", (purpose, value))

    # -- writes (``commit``, ``apply_decisions``: ``Writes``) ---------------------------
    @contextlib.contextmanager
    def writer(self) -> Iterator[BatchWriter]:
        """One transaction for several batches: committed when the block ends, with one
        row in ``changes`` saying what changed; nothing if it raises."""
        with self.db.transaction() as cur:
            writer = _TxWriter(cur)
            yield writer
            record(cur, writer.changes, self._changes.origin)

    def _run_job(self, job: Job, decisions: Sequence[Decision], changes: ChangeSet, *,
                 now: datetime, actor: str) -> int:
        with self.db.transaction() as cur:
            changed = _jobs.run_job(cur, job, decisions, now=now, actor=actor)
            record(cur, changes, self._changes.origin)
        return changed

    def record_access(self, records: Mapping[str, AccessRecord]) -> None:
        """Write access counters for many memories in one transaction. Counters are
        merged, not overwritten: another process may have recorded accesses to the same
        memory meanwhile, so the count grows by what this process adds (its count past
        the stored one, or its access times the stored ones lack, whichever is more)
        and the recent times are the union of both, newest kept; a time both hold counts
        as often as the one that holds it more often does (three recalls at one instant
        are three accesses)."""
        if not records:
            return
        ids = list(records)
        with self.db.transaction() as cur:
            cur.executemany(_RECORD_ACCESS,
                    [{"id": memory_id, "n": n, "t": last, "ts": list(times), "keep": len(times)}
                     for memory_id, (n, last, times) in records.items()])
            changes = ChangeSet()
            changes.accessed.update(dict.fromkeys(ids))
            record(cur, changes, self._changes.origin)

    def set_vectors(self, vectors: Mapping[str, np.ndarray | None],
                    sentences: Mapping[str, np.ndarray | None] | None = None) -> None:
        """Replace stored vectors (and with ``sentences`` the sentence vectors of the same
        memories) in one transaction."""
        with self.db.transaction() as cur:
            if sentences is None:
                cur.executemany("UPDATE memories SET vec = %s WHERE id = %s",
                                [(vector_value(v), i) for i, v in vectors.items()])
            else:
                cur.executemany("UPDATE memories SET vec = %s, sentences = %s WHERE id = %s",
                                [(vector_value(v), sentences_text(sentences.get(i)), i)
                                 for i, v in vectors.items()])
            changes = ChangeSet()
            changes.touch(vectors)
            record(cur, changes, self._changes.origin)

    def purge(self, erased: Collection[str] = ()) -> None:
        """Rewrite the tables that held text (VACUUM FULL), so that erased text leaves
        their files, and sample them again (ANALYZE): the planner's statistics hold
        values of their columns (an erased name among the most common ones), kept in
        ``pg_statistic``, whose replaced rows are rewritten away too where the role may
        (a superuser, as the embedded server's; another role's VACUUM of it is skipped
        with a warning). PostgreSQL's write-ahead log and any replica or base backup
        still hold the text until they are recycled."""
        with self.db.connection() as conn:
            for table in ("memories", "versions", "events", "edges", "entities", "mentions",
                          "facts", "meta"):
                conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
            conn.execute("VACUUM FULL pg_statistic")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read of this thread inside the block sees one snapshot (writers go on)."""
        with self.db.pinned():
            yield

    # -- reads -------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        rows = self.db.dict_rows(f"SELECT {_MODEL_COLS} FROM memories WHERE id = %s",
                                 (memory_id,))
        return memory_from_columns(rows[0]) if rows else None

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Memories by id, in the order asked (unknown ids are left out)."""
        wanted = list(dict.fromkeys(ids))
        rows = self.db.dict_rows(f"SELECT {_MODEL_COLS} FROM memories WHERE id = ANY(%s)",
                                 (wanted,))
        found = {r["id"]: memory_from_columns(r) for r in rows}
        return {i: found[i] for i in wanted if i in found}

    def existing(self, ids: Sequence[str]) -> set[str]:
        rows = self.db.rows("SELECT id FROM memories WHERE id = ANY(%s)", (list(set(ids)),))
        return {str(r[0]) for r in rows}

    def forgotten(self, ids: Sequence[str]) -> set[str]:
        rows = self.db.rows("SELECT id FROM memories WHERE id = ANY(%s) AND "
                            "status = 'forgotten'", (list(set(ids)),))
        return {str(r[0]) for r in rows}

    def forgotten_digests(self, digests: Sequence[str], *, owner: str | None) -> set[str]:
        rows = self.db.rows("SELECT text_sha256, integrity FROM memories WHERE status = "
                            "'forgotten' AND owner IS NOT DISTINCT FROM %s", (owner,))
        return set(digests) & set().union(*(forgotten_holds(*r) for r in rows))

    def memories(self, *, owner: str | None = None, offset: int = 0,
                 limit: int | None = None) -> list[Memory]:
        where, params = ("WHERE owner = %s ", (owner,)) if owner is not None else ("", ())
        page = " OFFSET %s" + (" LIMIT %s" if limit is not None else "")
        rows = self.db.dict_rows(f"SELECT {_MODEL_COLS} FROM memories {where}ORDER BY id{page}",
                                 (*params, offset, *(() if limit is None else (limit,))))
        return [memory_from_columns(r) for r in rows]

    def memory_count(self, *, owner: str | None = None) -> int:
        if owner is None:
            return int(self.db.rows("SELECT count(*) FROM memories")[0][0])
        return int(self.db.rows("SELECT count(*) FROM memories WHERE owner = %s",
                                (owner,))[0][0])

    def scan(self, fields: Sequence[str], *, owner: str | None = None,
             ids: Sequence[str] | None = None,
             vector_dtype: type[np.floating[Any]] = np.float32) -> MemoryScan:
        check_vector_dtype(vector_dtype)
        columns: list[str] = []
        for name in fields:
            column = FIELD_COLUMNS.get(name, name)
            if column not in MEMORY_COLUMNS:
                raise InvalidInputError(f"not a memory field: {name}", field=name)
            columns.append(column)
        clauses: list[str] = []
        params: list[Any] = []
        if owner is not None:
            clauses.append("owner = %s")
            params.append(owner)
        if ids is not None:
            clauses.append("id = ANY(%s)")
            params.append(list(ids))
        where = ("WHERE " + " AND ".join(clauses) + " ") if clauses else ""
        names = ", ".join(f'"{c}"' for c in columns)
        with self.db.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(f"SELECT {names} FROM memories {where}ORDER BY id",
                        params)
            rows = cur.fetchall()
        values = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
        vectors = has_vector = None
        if "vec" in values:
            vectors, has_vector = _matrix(values.pop("vec"), vector_dtype)
        renamed = {next((f for f, c in FIELD_COLUMNS.items() if c == n), n): v
                   for n, v in values.items()}
        kinds = {f: MEMORY_COLUMNS[FIELD_COLUMNS.get(f, f)] for f in renamed}
        return MemoryScan(table=arrow_table(renamed, kinds), vectors=vectors,
                          has_vector=has_vector)

    def read_table(self, name: TableName, *, page: int = 20_000) -> Iterator[pa.Table]:
        return read_table(self.db, name, page)

    def history(self, memory_id: str) -> list[Version]:
        rows = self.db.dict_rows(f"SELECT {_VERSION_COLS} FROM versions WHERE memory_id = %s "
                                 "ORDER BY seq", (memory_id,))
        return [_version(r) for r in rows]

    def versions(self, *, owner: str | None = None) -> list[Version]:
        where, params = ("WHERE m.owner = %s ", (owner,)) if owner is not None else ("", ())
        cols = ", ".join(f'v."{c}"' for c in VERSION_COLUMNS)
        rows = self.db.dict_rows(f"SELECT {cols} FROM versions v JOIN memories m ON "
                                 f"m.id = v.memory_id {where}ORDER BY v.memory_id, v.seq",
                                 params)
        return [_version(r) for r in rows]

    def events(self, query: EventQuery) -> list[LifecycleEvent]:
        clauses: list[str] = []
        params: list[Any] = []
        join = ""
        for name, operator, value in rules.event_conditions(query):
            if name == "owner":
                join = "JOIN memories m ON m.id = e.memory_id "
                clauses.append("m.owner = %s")
            else:
                clauses.append(f'e."{name}" {operator} %s')
            params.append(value)
        where = ("WHERE " + " AND ".join(clauses) + " ") if clauses else ""
        tail = ""
        if query.limit is not None:
            tail = " LIMIT %s"
            params.append(int(query.limit))
        cols = ", ".join(f'e."{c}"' for c in EVENT_COLUMNS)
        order = ", ".join(f'e."{c}"' for c in rules.EVENT_ORDER)
        rows = self.db.dict_rows(f"SELECT {cols} FROM events e {join}{where}"
                                 f"ORDER BY {order}{tail}", params)
        return [_event(r) for r in rows]

    def edges(self, kind: EdgeKind, *, owner: str | None = None) -> list[EdgeRecord]:
        where = "WHERE e.kind = %s "
        params: list[Any] = [kind]
        if owner is not None:
            where += "AND a.owner = %s AND b.owner = %s "
            params += [owner, owner]
        rows = self.db.dict_rows(f"SELECT {EDGE_COLUMNS} FROM edges e JOIN memories a ON "
                                 f"a.id = e.src JOIN memories b ON b.id = e.dst {where}"
                                 "ORDER BY e.src, e.dst", params)
        return [edge_from_values(r) for r in rows]

    def edge_arrays(self, kind: EdgeKind) -> EdgeArrays:
        weight = "weight" if kind != "supersedes" else "1.0::float8"
        rows = self.db.rows(f"SELECT src, dst, {weight} FROM edges WHERE kind = %s "
                            "ORDER BY src, dst", (kind,))
        return EdgeArrays(src=[r[0] for r in rows], dst=[r[1] for r in rows],
                          weight=np.array([r[2] for r in rows], dtype=np.float64))

    def links_of(self, memory_id: str, kind: EdgeKind | None = None) -> list[Link]:
        of = "" if kind is None else " AND kind = %(kind)s"
        rows = self.db.rows(
            "SELECT kind, dst, 'out', CASE WHEN kind = 'supersedes' THEN 1.0 ELSE weight END "
            f"FROM edges WHERE src = %(id)s{of} UNION ALL "
            "SELECT kind, src, 'in', CASE WHEN kind = 'supersedes' THEN 1.0 ELSE weight END "
            f"FROM edges WHERE dst = %(id)s{of}", {"id": memory_id, "kind": kind})
        return [Link(kind=k, other=o, direction=d, weight=float(w)) for k, o, d, w in rows]

    def counts(self) -> Counts:
        one = self.db.rows
        edges = {str(k): int(n) for k, n in one("SELECT kind, count(*) FROM edges GROUP BY kind")}
        head = one("SELECT count(*) FILTER (WHERE hot), count(*) FILTER (WHERE "
                   "cardinality(superseded_by) > 0), count(DISTINCT owner), "
                   "(SELECT count(*) FROM versions), (SELECT count(*) FROM events) "
                   "FROM memories")[0]
        return Counts(
            by_kind={str(k): int(n) for k, n in one("SELECT kind, count(*) FROM memories "
                                                    "GROUP BY kind ORDER BY kind")},
            by_status={str(k): int(n) for k, n in one("SELECT status, count(*) FROM "
                                                      "memories GROUP BY status ORDER BY status")},
            hot=int(head[0]), superseded=int(head[1]), owners=int(head[2]),
            edges={kind: edges.get(kind, 0) for kind in EDGE_KINDS},
            versions=int(head[3]), events=int(head[4]))

    def entities(self, *, owner: str | None = None, all_owners: bool = False,
                 ids: Sequence[str] | None = None) -> list[EntityRecord]:
        """The entities of ``owner`` (None: unowned ones), of every owner, or these ``ids``."""
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            rows = self.db.dict_rows(f"SELECT {_ENTITY_COLS} FROM entities WHERE "
                                     "id = ANY(%s)", (wanted,))
            found = {r["id"]: entity_from_values(r) for r in rows}
            return [found[i] for i in wanted if i in found]
        where, params = _owner_clause(owner, all_owners)
        rows = self.db.dict_rows(f"SELECT {_ENTITY_COLS} FROM entities {where}ORDER BY id",
                                 params)
        return [entity_from_values(r) for r in rows]

    def mentions(self, *, memory_ids: Sequence[str] | None = None,
                 entity_ids: Sequence[str] | None = None) -> list[MentionRecord]:
        """Mentions of these memories, or of these entities, or all of them."""
        cols = "memory_id, entity_id, role, weight, surface"
        if memory_ids is None and entity_ids is None:
            rows = self.db.rows(f"SELECT {cols} FROM mentions ORDER BY n")
        else:
            rows = self.db.rows(f"SELECT {cols} FROM mentions WHERE memory_id = ANY(%s) "
                                f"UNION ALL SELECT {cols} FROM mentions WHERE entity_id = "
                                "ANY(%s)", (list(memory_ids or ()), list(entity_ids or ())))
        return [mention_values(r) for r in rows]

    def mentioned_elsewhere(self, entity_ids: Sequence[str], memory_id: str) -> set[str]:
        rows = self.db.rows("SELECT e FROM unnest(%s::text[]) AS e WHERE EXISTS (SELECT 1 "
                            "FROM mentions WHERE entity_id = e AND memory_id <> %s)",
                            (list(dict.fromkeys(entity_ids)), memory_id))
        return {str(e) for e, in rows}

    def facts(self, *, owner: str | None = None, all_owners: bool = False,
              sources: Sequence[str] | None = None,
              entity_ids: Sequence[str] | None = None) -> list[FactRecord]:
        """Facts of ``owner`` (or every owner), or those stated by these memories, or
        those about these entities (as subject or object), oldest recorded first."""
        if sources is not None:
            where, params = "WHERE sources && %s::text[] ", [list(sources)]
        elif entity_ids is not None:
            where = "WHERE subject = ANY(%s) OR object = ANY(%s) "
            params = [list(entity_ids), list(entity_ids)]
        else:
            where, params = _owner_clause(owner, all_owners)
        rows = self.db.dict_rows(f"SELECT {_FACT_COLS} FROM facts {where}"
                                 "ORDER BY recorded, id", params)
        return [fact_from_values(r) for r in rows]

    def graph_owners(self, *, entities: Sequence[str] = (), facts: Sequence[str] = ()
                     ) -> dict[str, str | None]:
        """Owners of entity and fact ids (gone ones are deleted here: nothing to hold)."""
        rows = self.db.rows("SELECT id, owner FROM entities WHERE id = ANY(%s) UNION ALL "
                            "SELECT id, owner FROM facts WHERE id = ANY(%s)",
                            (list(entities), list(facts)))
        return {str(i): (str(o) if o is not None else None) for i, o in rows}

    def holding(self, field: Literal["context", "payload"], probe: str, *,
                whole: bool = False, session: str | None = None) -> list[Memory]:
        if not probe and session is None:
            return []
        column = {"context": "context", "payload": "payload"}[field]
        test = (f"{column} = %s" if whole else f"strpos({column}, %s) > 0") if probe else \
            f"{column} IS NOT NULL"
        of = " AND session = %s" if session is not None else ""
        rows = self.db.dict_rows(f"SELECT {_MODEL_COLS} FROM memories WHERE {test}{of} "
                                 "ORDER BY id", (*((probe,) if probe else ()),
                                                 *(() if session is None else (session,))))
        return [memory_from_columns(r) for r in rows]

    def events_mentioning(self, memory_id: str, probe: str
                          ) -> list[tuple[str, dict[str, Any]]]:
        probes = rules.quoting_probes(memory_id, probe)
        rows = self.db.rows("SELECT event_id, metadata FROM events WHERE memory_id <> %s AND ("
                            + " OR ".join(["strpos(metadata, %s) > 0"] * len(probes))
                            + ") ORDER BY event_id", [memory_id, *probes])
        return rules.quoting_rows(rows)


#: ``record_access``: each time as often as the stored times or this process's hold it,
#: whichever holds it more often (a multiset union), the newest kept; the count grows by
#: this process's count past the stored one, or by the times it adds, whichever is more.
_TIMES_OF = ("(SELECT t, count(*) AS c FROM unnest({}) t GROUP BY t)")
_STORED_TIMES = _TIMES_OF.format("COALESCE(m.access_times, '{}')")
_NEW_TIMES = _TIMES_OF.format("%(ts)s::timestamptz[]")
_RECORD_ACCESS = (
    "UPDATE memories m SET access_count = m.access_count + GREATEST("
    "%(n)s - m.access_count, (SELECT COALESCE(sum(GREATEST(n.c - COALESCE(s.c, 0), 0)), 0) "
    f"FROM {_NEW_TIMES} n LEFT JOIN {_STORED_TIMES} s USING (t)), 0), "
    "last_accessed = GREATEST(m.last_accessed, %(t)s), access_times = ARRAY("
    "SELECT t FROM (SELECT g.t FROM (SELECT t, max(c) AS c FROM ("
    f"SELECT * FROM {_STORED_TIMES} a UNION ALL SELECT * FROM {_NEW_TIMES} b) u "
    "GROUP BY t) g, generate_series(1, g.c) ORDER BY g.t DESC LIMIT GREATEST("
    "%(keep)s, cardinality(m.access_times))) AS recent ORDER BY t) "
    "WHERE m.id = %(id)s")


class _TxWriter:
    """Writes batches into one open transaction (``PostgresEngine.writer``)."""

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur
        self.changes = ChangeSet()

    def write(self, batch: WriteBatch) -> None:
        if not batch:
            return
        rules.write_batch(batch, _Steps(self._cur))
        self.changes.add(batch)

    def load(self, name: TableName, rows: pa.Table) -> None:
        load_table(self._cur, name, rows)
        self.changes.bulk = True


class _Steps:
    """Each part of a batch as PostgreSQL writes it, in the open transaction of ``cur``
    (``_engine_rules.write_batch`` calls them in order)."""

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur

    def memories(self, rows: list[NewMemory]) -> None:
        memories = [memory_values(n) for n in rows]
        versions = [version_values(n.version) for n in rows]
        if len(memories) > _COPY_ROWS:
            copy_rows(self._cur, "memories", list(MEMORY_COLUMNS), memories)
            copy_rows(self._cur, "versions", list(VERSION_COLUMNS), versions)
        else:
            self._cur.executemany(_INSERT_MEMORY, memories)
            self._cur.executemany(_INSERT_VERSION, versions)

    def patches(self, rows: list[Patch]) -> None:
        for patch in rows:
            _patch(self._cur, patch)

    def events(self, rows: list[LifecycleEvent]) -> None:
        events = [event_values(e) for e in rows]
        if len(events) > _COPY_ROWS:
            copy_rows(self._cur, "events", list(EVENT_COLUMNS), events)
        else:
            self._cur.executemany(_INSERT_EVENT, events)

    def new_edges(self, rows: list[EdgeRecord]) -> None:
        self._cur.execute(_INSERT_EDGES + "ON CONFLICT (kind, src, dst) DO NOTHING",
                          _edge_arrays(rows))

    def merged_edges(self, rows: list[EdgeRecord]) -> None:
        for edge in rows:  # in order: the same pair twice in a batch adds up
            self._cur.execute(_INSERT_EDGES + _MERGE_EDGE[edge.kind], _edge_arrays([edge]))

    # the knowledge graph: what leaves first, then what comes. An entity or a fact
    # another process created meanwhile under the same id (ids are derived from the
    # owner and the name or statement) is merged, not refused.
    def unmentioned(self, rows: list[str]) -> None:
        self._cur.execute("DELETE FROM mentions WHERE memory_id = ANY(%s)", (rows,))

    def gone_facts(self, rows: list[FactRecord]) -> None:
        self._cur.execute("DELETE FROM facts WHERE id = ANY(%s)", ([f.id for f in rows],))

    def gone_entities(self, rows: list[str]) -> None:
        # and every fact between it and another, whatever its sources say
        self._cur.execute("DELETE FROM facts WHERE subject = ANY(%s) OR object = ANY(%s)",
                          (rows, rows))
        self._cur.execute("DELETE FROM entities WHERE id = ANY(%s)", (rows,))

    def new_entities(self, rows: list[EntityRecord]) -> None:
        cur = self._cur
        cur.execute("SELECT e.id FROM entities e JOIN unnest(%s::text[], %s::text[]) AS n(id, "
                    "owner) ON n.id = e.id WHERE e.owner IS DISTINCT FROM n.owner LIMIT 1",
                    ([e.id for e in rows], [e.owner for e in rows]))
        taken = cur.fetchone()
        if taken is not None:  # an id is its owner's for good
            raise ConflictError(f"entity {taken[0]} belongs to another owner")
        cur.executemany(
            f"INSERT INTO entities ({_ENTITY_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
            "type = excluded.type, aliases = entities.aliases || ARRAY(SELECT a FROM "
            "unnest(excluded.aliases) a WHERE NOT (a = ANY(entities.aliases))), "
            "merges = excluded.merges "
            # an id is its owner's: another owner's entity is never taken over
            "WHERE entities.owner IS NOT DISTINCT FROM excluded.owner",
            [entity_values(e) for e in rows])

    def changed_entities(self, rows: list[EntityRecord]) -> None:
        self._cur.executemany("UPDATE entities SET name = %s, type = %s, aliases = %s, "
                              "merges = %s WHERE id = %s",
                              [(*entity_values(e)[2:6], e.id) for e in rows])

    def mentions(self, rows: list[MentionRecord]) -> None:
        m = rows
        self._cur.execute(
            "INSERT INTO mentions (memory_id, entity_id, role, weight, surface) "
            "SELECT r.memory_id, r.entity_id, r.role, r.weight, r.surface FROM unnest(%s::text[], "
            "%s::text[], %s::text[], %s::float8[], "
            "%s::text[]) WITH ORDINALITY AS r(memory_id, entity_id, role, weight, surface, o) "
            "JOIN memories mm ON mm.id = r.memory_id JOIN entities e ON e.id = r.entity_id "
            "AND e.owner IS NOT DISTINCT FROM mm.owner "  # a memory mentions its owner's
            "ORDER BY r.o ON CONFLICT (memory_id, entity_id) DO UPDATE SET role = "
            "excluded.role, weight = excluded.weight, surface = excluded.surface",
            ([x.memory_id for x in m], [x.entity_id for x in m], [x.role for x in m],
             [x.weight for x in m], [x.surface for x in m]))

    def facts(self, rows: list[FactRecord]) -> None:
        # between two entities of the fact's own owner only (as Kuzu's MATCH of its ends)
        self._cur.executemany(
            f"INSERT INTO facts ({_FACT_COLS}) SELECT v.* FROM (VALUES (%s, %s, %s, %s, %s, "
            "%s::float8, %s::timestamptz, %s::timestamptz, %s::timestamptz, %s::text[], %s, "
            f"%s)) AS v({_FACT_COLS}) JOIN entities a ON a.id = v.subject AND a.owner IS NOT "
            "DISTINCT FROM v.owner JOIN entities b ON b.id = v.object AND b.owner IS NOT "
            "DISTINCT FROM v.owner ON CONFLICT (id) DO UPDATE "
            "SET sources = facts.sources || ARRAY(SELECT s FROM unnest(excluded.sources) s "
            "WHERE NOT (s = ANY(facts.sources))) "
            "WHERE facts.owner IS NOT DISTINCT FROM excluded.owner",
            [fact_values(f) for f in rows])

    def changed_facts(self, rows: list[FactRecord]) -> None:
        self._cur.executemany(
            "UPDATE facts SET valid_from = %s, valid_to = %s, recorded = %s, "
            "ended_by = %s, sources = %s, confidence = %s, rule = %s WHERE id = %s",
            [(f.valid_from, f.valid_to, f.recorded, f.ended_by, list(f.sources),
              f.confidence, f.rule, f.id) for f in rows])

    def meta(self, rows: dict[str, str]) -> None:
        for key, value in rows.items():
            self._cur.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT "
                              "(key) DO UPDATE SET value = excluded.value", (key, value))

    def erasures(self, rows: list[Erasure]) -> None:
        for erasure in rows:
            rules.erase(erasure, self)

    # the steps of an erasure (``_engine_rules.erase``)
    def set_event_metadata(self, metadata: Mapping[str, Mapping[str, Any]]) -> None:
        self._cur.executemany("UPDATE events SET metadata = %s WHERE event_id = %s",
                              [(json_dump(dict(m)), e) for e, m in metadata.items()])

    def set_versions(self, memory_id: str, values: Mapping[str, Any]) -> None:
        self._cur.execute("UPDATE versions SET " + ", ".join(f'"{c}" = %s' for c in values)
                          + " WHERE memory_id = %s", [*values.values(), memory_id])

    def set_version_digests(self, digests: Mapping[str, str]) -> None:
        self._cur.executemany("UPDATE versions SET text_sha256 = %s WHERE id = %s",
                              [(d, v) for v, d in digests.items()])

    def redact_events(self, memory_id: str, metadata: Mapping[str, Any], reason: str,
                      keep: Sequence[str]) -> None:
        self._cur.execute("UPDATE events SET metadata = %s, reason = %s WHERE memory_id = %s "
                          "AND NOT (event_type = ANY(%s))",
                          (json_dump(dict(metadata)), reason, memory_id, list(keep)))

    def drop_edges(self, memory_id: str) -> None:
        self._cur.execute("DELETE FROM edges WHERE src = %s OR dst = %s",
                          (memory_id, memory_id))


def _patch(cur: Cursor, patch: Patch) -> None:
    assignments, params = [], []
    for name, value in patch.set.items():
        column, stored = stored_value(name, value)
        assignments.append(f'"{column}" = %s')
        params.append(vector_value(stored) if column == "vec" else stored)
    if assignments:
        cur.execute(f"UPDATE memories SET {', '.join(assignments)} WHERE id = %s",
                    [*params, patch.memory_id])
    if patch.version is not None:
        cur.execute(_INSERT_VERSION, version_values(patch.version))
    if patch.event is not None:
        cur.execute(_INSERT_EVENT, event_values(patch.event))


def _edge_arrays(edges: Sequence[EdgeRecord]) -> list[list[Any]]:
    return [[e.kind for e in edges], [e.src for e in edges], [e.dst for e in edges],
            [e.weight for e in edges], [e.count for e in edges],
            [e.source if e.kind != "supersedes" else None for e in edges],
            [e.reason if e.kind == "supersedes" else None for e in edges],
            [e.at for e in edges]]


def _owner_clause(owner: str | None, all_owners: bool) -> tuple[str, list[Any]]:
    if all_owners:
        return "", []
    if owner is None:
        return "WHERE owner IS NULL ", []
    return "WHERE owner = %s ", [owner]


def _version(row: Mapping[str, Any]) -> Version:
    from .._records import version_from_values

    return version_from_values(row)


def _event(row: Mapping[str, Any]) -> LifecycleEvent:
    from .._records import event_from_values

    return event_from_values(row)


def _matrix(loaded: Sequence[Any], dtype: type[np.floating[Any]] = np.float32
            ) -> tuple[np.ndarray, np.ndarray]:
    """pgvector values as one matrix (zero rows where missing) and a mask."""
    arrays = [v.to_numpy() if v is not None else None for v in loaded]
    dim = next((len(a) for a in arrays if a is not None), 0)
    matrix = np.zeros((len(arrays), dim), dtype=dtype)
    present = np.zeros(len(arrays), dtype=bool)
    for i, vector in enumerate(arrays):
        if vector is not None and len(vector) == dim:
            matrix[i] = vector
            present[i] = True
    return matrix, present


assert pa is not None
