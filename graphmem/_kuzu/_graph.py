"""Domain operations on the Kuzu graph: the only place with Cypher for the store's own work.

Upward it speaks memories, versions, events and edges; row layouts and query text stay here.
Bulk paths are batched: nodes through ``UNWIND`` in one transaction (vectors travel as
base64 strings: a 384-float list parameter costs ~5 ms a row, a string ~0.1 ms),
relationships between existing nodes through ``COPY`` from Arrow inside the same
transaction (``UNWIND ... MATCH {id: ...}`` plans as a cross product here).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from .._errors import InvalidInputError
from .._models import LifecycleEvent, Memory, Version
from . import _jobs
from ._db import Database, Tx, check_parameters
from ._guard import check_user_query
from ._schema import (
    EVENT_TYPES,
    MEMORY_TYPES,
    SCHEMA_VERSION,
    VERSION_TYPES,
    ensure_schema,
)

__all__ = ["EDGE_KINDS", "MEMORY_COLUMNS", "Change", "KuzuGraph"]

MEMORY_COLUMNS: tuple[str, ...] = tuple(MEMORY_TYPES)
VERSION_COLUMNS: tuple[str, ...] = tuple(VERSION_TYPES)
EVENT_COLUMNS: tuple[str, ...] = tuple(EVENT_TYPES)
_JSON_COLUMNS = ("provenance", "integrity", "ump")
_INTERNAL = ("vec", "payload_at", "prev_status", "prev_kind", "state_changed")
_MODEL_COLUMNS = tuple(c for c in MEMORY_COLUMNS if c not in _INTERNAL)


#: Up to this many ids, look each up by primary key; beyond, one scan is cheaper.
_LOOKUP_LIMIT = 32


_ARROW_TYPES = {
    "STRING": pa.string(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(),
    "INT64": pa.int64(), "TIMESTAMP": pa.timestamp("us"),
    "STRING[]": pa.list_(pa.string()), "TIMESTAMP[]": pa.list_(pa.timestamp("us")),
}


def _naive(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, list):
        return [_naive(v) for v in value]
    return value


def _arrow(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> pa.Table:
    """Rows as an Arrow table with the node table's columns, in its order (for COPY)."""
    arrays = [pa.array([_naive(r.get(c)) for r in rows], type=_ARROW_TYPES[t])
              for c, t in types.items()]
    return pa.Table.from_arrays(arrays, names=list(types))


def _typed(expr: str, kuzu_type: str) -> str:
    """``expr`` cast to its column type: Kuzu types a NULL or [] parameter as STRING."""
    return expr if kuzu_type == "STRING" else f"CAST({expr} AS {kuzu_type})"


#: Relationship tables between memories, by the names the API uses.
EDGE_KINDS = {"references": "REFERENCES", "co_occurs": "CO_OCCURS", "supersedes": "SUPERSEDES"}
_EDGE_PROPS = {
    "REFERENCES": ("source", "weight", "at"),
    "CO_OCCURS": ("weight", "count", "source", "at"),
    "SUPERSEDES": ("reason", "at"),
}


@dataclass
class Change:
    """One memory's state change, applied with its version row and event atomically."""

    memory_id: str
    set: dict[str, Any] = field(default_factory=dict)
    version: dict[str, Any] | None = None
    event: dict[str, Any] | None = None


def _aware(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _json_load(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    if isinstance(text, dict):  # a row about to be written, not yet serialised
        return dict(text)
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _json_dump(value: Any) -> str:
    return json.dumps(value or {}, ensure_ascii=False, sort_keys=True, allow_nan=False)


def memory_from_row(row: Mapping[str, Any]) -> Memory:
    """Build a ``Memory`` from a row keyed by column name (missing columns take defaults)."""
    data: dict[str, Any] = {}
    for column in _MODEL_COLUMNS:
        if column not in row:
            continue
        value = row[column]
        if column in ("tags", "superseded_by", "entities"):
            data[column] = tuple(value or ())
        elif column == "access_times":
            data[column] = tuple(_aware(v) for v in (value or ()))
        elif column in ("provenance", "integrity"):
            data[column] = _json_load(value)
        elif column == "ump":
            data["extra"] = _json_load(value)
        elif value is None and column in ("hot", "access_count", "useful_count",
                                          "ignored_count", "version", "visibility", "text",
                                          "text_sha256"):
            continue
        else:
            data[column] = _aware(value)
    return Memory(**data)


def _version_from_row(row: Sequence[Any]) -> Version:
    data = dict(zip(VERSION_COLUMNS, row, strict=True))
    data["at"] = _aware(data["at"])
    data["redacted"] = bool(data["redacted"])
    return Version(**data)


def _event_from_row(row: Sequence[Any]) -> LifecycleEvent:
    data = dict(zip(EVENT_COLUMNS, row, strict=True))
    data["timestamp"] = _aware(data["timestamp"])
    data["metadata"] = _json_load(data["metadata"])
    return LifecycleEvent(**data)


def _memory_params(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {column: row.get(column) for column in MEMORY_COLUMNS}
    for column in _JSON_COLUMNS:
        out[column] = _json_dump(out[column])
    out["tags"] = list(out["tags"] or [])
    out["entities"] = list(out["entities"] or [])
    out["superseded_by"] = list(out["superseded_by"] or [])
    out["access_times"] = list(out["access_times"] or [])
    return out


def _event_params(event: Mapping[str, Any]) -> dict[str, Any]:
    out = {column: event.get(column) for column in EVENT_COLUMNS}
    out["metadata"] = _json_dump(out["metadata"])
    return out


_MEMORY_RETURN = ", ".join(f"m.{c}" for c in _MODEL_COLUMNS)
_CREATE_EVENTS = (
    "UNWIND $rows AS e CREATE (:LifecycleEvent {"
    + ", ".join(f"{c}: {_typed(f'e.{c}', t)}" for c, t in EVENT_TYPES.items())
    + "})"
)
_SMALL_WRITE = 64
_CREATE_MEMORIES = (
    "UNWIND $rows AS r CREATE (:Memory {"
    + ", ".join(f"{c}: {_typed(f'r.{c}', t)}" for c, t in MEMORY_TYPES.items())
    + "})"
)
_CREATE_VERSIONS = (
    "UNWIND $rows AS v MATCH (m:Memory {id: v.memory_id}) CREATE (m)-[:HAS_VERSION]->"
    "(:Version {" + ", ".join(f"{c}: {_typed(f'v.{c}', t)}" for c, t in VERSION_TYPES.items())
    + "})"
)
_EDGE_TYPES = {"source": "STRING", "reason": "STRING", "weight": "DOUBLE", "count": "INT64",
               "at": "TIMESTAMP"}
_CREATE_EDGES = {
    table: "UNWIND $rows AS e MATCH (a:Memory {id: e.src}), (b:Memory {id: e.dst}) "
    f"CREATE (a)-[:{table} {{"
    + ", ".join(f"{p}: {_typed(f'e.{p}', _EDGE_TYPES[p])}" for p in props) + "}]->(b)"
    for table, props in _EDGE_PROPS.items()
}
_CREATE_VERSION = (
    "MATCH (m:Memory {id: $mid}) CREATE (m)-[:HAS_VERSION]->(:Version {"
    + ", ".join(f"{c}: {_typed(f'$v_{c}', t)}" for c, t in VERSION_TYPES.items())
    + "})"
)


class KuzuGraph:
    """The graph of memories in one Kuzu database, seen as domain operations."""

    def __init__(self, path: str, *, buffer_pool_mb: int = 512, read_only: bool = False) -> None:
        self.db = Database(path, buffer_pool_mb=buffer_pool_mb, read_only=read_only)
        try:
            self.schema_version = ensure_schema(self.db, target=SCHEMA_VERSION)
        except BaseException:
            self.db.close()
            raise

    @property
    def path(self) -> str:
        return self.db.path

    def close(self) -> None:
        self.db.close()

    # -- meta ----------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return {k: v for k, v in self.db.read("MATCH (m:Meta) RETURN m.key, m.value")}

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.db.write() as tx:
            for key, value in values.items():
                tx.run("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    # -- writes --------------------------------------------------------------------
    def insert(
        self,
        memories: Sequence[Mapping[str, Any]],
        versions: Sequence[Mapping[str, Any]],
        *,
        events: Sequence[Mapping[str, Any]] = (),
        edges: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        changes: Sequence[Change] = (),
    ) -> None:
        """Create memories (each with its first version), events, edges and changes in one
        transaction: all of it is committed, or none."""
        if len(memories) != len(versions):
            raise ValueError("each new memory needs exactly one version row")
        edges = edges or {}
        # COPY from Arrow: ~0.06 ms a memory with its version and edge, against ~0.8 ms
        # through UNWIND ... CREATE; but Kuzu checkpoints when a transaction that copied
        # commits (~30 ms, and it must wait for running reads). Small writes (one add(),
        # a sidecar request) therefore CREATE, and only bulk ones COPY.
        small = len(memories) + len(events) + sum(map(len, edges.values())) <= _SMALL_WRITE
        params = [_memory_params(m) for m in memories]
        with self.db.write() as tx:
            if memories and small:
                tx.run(_CREATE_MEMORIES, {"rows": params})
                tx.run(_CREATE_VERSIONS, {"rows": [dict(v) for v in versions]})
            elif memories:
                tx.copy("Memory", _arrow(params, MEMORY_TYPES))
                tx.copy("Version", _arrow(versions, VERSION_TYPES))
                tx.copy("HAS_VERSION", pa.table({"from": [m["id"] for m in memories],
                                                 "to": [v["id"] for v in versions]}))
            for change in changes:
                self._apply(tx, change)
            if events and small:
                tx.run(_CREATE_EVENTS, {"rows": [_event_params(e) for e in events]})
            elif events:
                tx.copy("LifecycleEvent", _arrow([_event_params(e) for e in events],
                                                 EVENT_TYPES))
            for kind, edge_rows in edges.items():
                if small and edge_rows:
                    table = EDGE_KINDS[kind]
                    tx.run(_CREATE_EDGES[table], {"rows": [
                        {"src": r["src"], "dst": r["dst"],
                         **{p: r.get(p) for p in _EDGE_PROPS[table]}} for r in edge_rows]})
                else:
                    self._copy_edges(tx, kind, edge_rows)

    def apply(self, changes: Sequence[Change], *, events: Sequence[Mapping[str, Any]] = ()) -> None:
        """Apply state changes (each with its version row and event) in one transaction."""
        with self.db.write() as tx:
            for change in changes:
                self._apply(tx, change)
            if events:
                tx.run(_CREATE_EVENTS, {"rows": [_event_params(e) for e in events]})

    def _apply(self, tx: Tx, change: Change) -> None:
        params: dict[str, Any] = {"mid": change.memory_id}
        assignments = []
        for column, value in change.set.items():
            if column not in MEMORY_COLUMNS or column == "id":
                raise InvalidInputError(f"not a memory column: {column}", field=column)
            if column in _JSON_COLUMNS:
                value = _json_dump(value)
            elif column in ("tags", "superseded_by", "access_times", "entities"):
                value = list(value or [])
            params[f"s_{column}"] = value
            assignments.append(f"m.{column} = {_typed(f'$s_{column}', MEMORY_TYPES[column])}")
        if assignments:
            tx.run(
                "MATCH (m:Memory {id: $mid}) SET " + ", ".join(assignments), params
            )
        if change.version is not None:
            version = {f"v_{c}": change.version.get(c) for c in VERSION_COLUMNS}
            tx.run(_CREATE_VERSION, {"mid": change.memory_id, **version})
        if change.event is not None:
            tx.run(_CREATE_EVENTS, {"rows": [_event_params(change.event)]})

    def _copy_edges(self, tx: Tx, kind: str, rows: Sequence[Mapping[str, Any]]) -> None:
        table = EDGE_KINDS[kind]
        if not rows:
            return
        props = _EDGE_PROPS[table]
        columns: dict[str, list[Any]] = {"from": [r["src"] for r in rows],
                                         "to": [r["dst"] for r in rows]}
        for prop in props:
            columns[prop] = [r.get(prop) for r in rows]
        types = {"from": pa.string(), "to": pa.string(), "source": pa.string(),
                 "reason": pa.string(), "weight": pa.float64(), "count": pa.int64(),
                 "at": pa.timestamp("us")}
        arrays = []
        for name, values in columns.items():
            if name == "at":
                values = [v.astimezone(UTC).replace(tzinfo=None) if v else None for v in values]
            arrays.append(pa.array(values, type=types[name]))
        tx.copy(table, pa.Table.from_arrays(arrays, names=list(columns)))

    def set_access(self, rows: Mapping[str, tuple[int, datetime, Sequence[datetime]]]) -> None:
        """Write access counters (absolute values) for many memories in one transaction."""
        with self.db.write() as tx:
            tx.run_many(
                "MATCH (m:Memory {id: $id}) SET m.access_count = $n, m.last_accessed = $t, "
                "m.access_times = CAST($ts AS TIMESTAMP[])",
                [{"id": memory_id, "n": n, "t": t, "ts": list(ts)}
                 for memory_id, (n, t, ts) in rows.items()],
            )

    def set_vectors(self, vectors: Mapping[str, str | None]) -> None:
        """Replace stored vectors (base64 float32) in one transaction."""
        with self.db.write() as tx:
            tx.run_many("MATCH (m:Memory {id: $id}) SET m.vec = $vec",
                        [{"id": i, "vec": v} for i, v in vectors.items()])

    def merge_edge(
        self, kind: str, src: str, dst: str, *, weight: float, source: str, at: datetime,
        reason: str | None = None,
    ) -> None:
        """Create an edge, or strengthen it when it exists (weights add, counts grow)."""
        table = EDGE_KINDS[kind]
        ends = "MATCH (a:Memory {id: $src}), (b:Memory {id: $dst}) "
        with self.db.write() as tx:
            if table == "CO_OCCURS":
                tx.run(
                    ends + "MERGE (a)-[r:CO_OCCURS]->(b) "
                    "ON CREATE SET r.weight = $w, r.count = 1, r.source = $s, r.at = $at "
                    "ON MATCH SET r.weight = r.weight + $w, r.count = r.count + 1, r.at = $at",
                    {"src": src, "dst": dst, "w": weight, "s": source, "at": at},
                )
            elif table == "REFERENCES":
                tx.run(
                    ends + "MERGE (a)-[r:REFERENCES]->(b) "
                    "ON CREATE SET r.weight = $w, r.source = $s, r.at = $at "
                    "ON MATCH SET r.weight = CASE WHEN r.weight > $w THEN r.weight ELSE $w END",
                    {"src": src, "dst": dst, "w": weight, "s": source, "at": at},
                )
            else:
                tx.run(
                    ends + "MERGE (a)-[r:SUPERSEDES]->(b) "
                    "ON CREATE SET r.reason = $reason, r.at = $at",
                    {"src": src, "dst": dst, "reason": reason or "", "at": at},
                )

    # -- reads ---------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        rows = self.db.read_prepared(
            f"MATCH (m:Memory {{id: $id}}) RETURN {_MEMORY_RETURN}", {"id": memory_id}
        )
        if not rows:
            return None
        return memory_from_row(dict(zip(_MODEL_COLUMNS, rows[0], strict=True)))

    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]:
        """Memories by id, in the order asked (unknown ids are left out).

        A few ids are primary-key lookups (~3 ms each); many are one scan.
        """
        wanted = list(dict.fromkeys(ids))
        if len(wanted) <= _LOOKUP_LIMIT:
            found = {i: m for i in wanted if (m := self.get(i)) is not None}
        else:
            keep = set(wanted)
            found = {row["id"]: memory_from_row(row)
                     for row in self.scan().to_pylist() if row["id"] in keep}
        return {i: found[i] for i in wanted if i in found}

    def existing(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are memories of the store."""
        wanted = set(ids)
        if len(wanted) <= _LOOKUP_LIMIT:
            return {i for i in wanted
                    if self.db.read("MATCH (m:Memory {id: $id}) RETURN m.id", {"id": i})}
        return wanted & set(self.all_ids())

    def forgotten(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are forgotten memories (their ids stay taken for good)."""
        wanted = set(ids)
        if not wanted:
            return set()
        rows = self.db.read("MATCH (m:Memory) WHERE m.status = 'forgotten' RETURN m.id")
        return wanted & {str(r[0]) for r in rows}

    def rows(self, ids: Iterable[str], columns: Sequence[str]) -> list[dict[str, Any]]:
        """Some columns of a few memories, as dicts (unknown ids are left out)."""
        for column in columns:
            if column not in MEMORY_COLUMNS:
                raise InvalidInputError(f"not a memory column: {column}", field=column)
        query = "MATCH (m:Memory {id: $id}) RETURN " + ", ".join(f"m.{c}" for c in columns)
        out = []
        for memory_id in dict.fromkeys(ids):
            for row in self.db.read_prepared(query, {"id": memory_id}):
                out.append({c: _aware(v) if not isinstance(v, list) else [_aware(x) for x in v]
                            for c, v in zip(columns, row, strict=True)})
        return out

    def contexts_with(self, probe: str) -> list[dict[str, Any]]:
        """Memories whose indexing context contains ``probe`` (id, subject, text,
        context)."""
        if not probe:
            return []
        rows = self.db.read("MATCH (m:Memory) WHERE m.context CONTAINS $t "
                            "RETURN m.id, m.subject, m.text, m.context", {"t": probe})
        return [dict(zip(("id", "subject", "text", "context"), r, strict=True)) for r in rows]

    def edge_table(self, kind: str) -> pa.Table:
        """Every edge of ``kind`` as an Arrow table of src, dst, weight."""
        table = EDGE_KINDS[kind]
        weight = "r.weight" if table != "SUPERSEDES" else "1.0"
        return self.db.read_arrow(
            f"MATCH (a:Memory)-[r:{table}]->(b:Memory) RETURN a.id AS src, b.id AS dst, "
            f"{weight} AS weight"
        )

    def all_ids(self) -> list[str]:
        return [str(i) for i in self.scan(columns=["id"]).column("id").to_pylist()]

    def scan(self, *, owner: str | None = None, columns: Sequence[str] = _MODEL_COLUMNS
             ) -> pa.Table:
        """Every memory (of ``owner``) as an Arrow table of ``columns``, ordered by id."""
        for column in columns:
            if column not in MEMORY_COLUMNS:
                raise InvalidInputError(f"not a memory column: {column}", field=column)
        where = "WHERE m.owner = $owner " if owner is not None else ""
        params = {"owner": owner} if owner is not None else {}
        names = ", ".join(f"m.{c} AS {c}" for c in columns)
        return self.db.read_arrow(f"MATCH (m:Memory) {where}RETURN {names} ORDER BY m.id", params)

    def memories(self, *, owner: str | None = None) -> list[Memory]:
        table = self.scan(owner=owner)
        return [memory_from_row(row) for row in table.to_pylist()]

    def history(self, memory_id: str) -> list[Version]:
        cols = ", ".join(f"v.{c}" for c in VERSION_COLUMNS)
        rows = self.db.read(
            f"MATCH (:Memory {{id: $id}})-[:HAS_VERSION]->(v:Version) RETURN {cols} ORDER BY v.seq",
            {"id": memory_id},
        )
        return [_version_from_row(r) for r in rows]

    def versions(self, *, owner: str | None = None) -> list[Version]:
        cols = ", ".join(f"v.{c}" for c in VERSION_COLUMNS)
        where = "WHERE m.owner = $owner " if owner is not None else ""
        params = {"owner": owner} if owner is not None else {}
        rows = self.db.read(
            f"MATCH (m:Memory)-[:HAS_VERSION]->(v:Version) {where}"
            f"RETURN {cols} ORDER BY v.memory_id, v.seq",
            params,
        )
        return [_version_from_row(r) for r in rows]

    def events(
        self,
        *,
        memory_id: str | None = None,
        owner: str | None = None,
        event_type: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[LifecycleEvent]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        match = "MATCH (e:LifecycleEvent) "
        if memory_id is not None:
            clauses.append("e.memory_id = $mid")
            params["mid"] = memory_id
        if owner is not None:
            # A value join (planned as a hash join), not a list scan per event.
            match = "MATCH (m:Memory), (e:LifecycleEvent) "
            clauses += ["m.id = e.memory_id", "m.owner = $owner"]
            params["owner"] = owner
        if event_type is not None:
            clauses.append("e.event_type = $etype")
            params["etype"] = event_type
        if since is not None:
            clauses.append("e.timestamp >= $since")
            params["since"] = since
        if until is not None:
            clauses.append("e.timestamp < $until")
            params["until"] = until
        where = ("WHERE " + " AND ".join(clauses) + " ") if clauses else ""
        tail = ""
        if limit is not None:
            tail = " LIMIT $limit"
            params["limit"] = int(limit)
        cols = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)
        rows = self.db.read(
            f"{match}{where}RETURN {cols} ORDER BY e.timestamp, e.event_id"
            + tail,
            params,
        )
        return [_event_from_row(r) for r in rows]

    def edges(self, kind: str, *, owner: str | None = None) -> list[dict[str, Any]]:
        """Every edge of ``kind`` as dicts (src, dst and the edge's properties)."""
        table = EDGE_KINDS[kind]
        props = _EDGE_PROPS[table]
        where = "WHERE a.owner = $owner AND b.owner = $owner " if owner is not None else ""
        params = {"owner": owner} if owner is not None else {}
        cols = ", ".join(f"r.{p}" for p in props)
        rows = self.db.read(
            f"MATCH (a:Memory)-[r:{table}]->(b:Memory) {where}RETURN a.id, b.id, {cols}", params
        )
        return [
            {"src": r[0], "dst": r[1], **{p: _aware(v) for p, v in zip(props, r[2:], strict=True)}}
            for r in rows
        ]

    def edges_of(self, memory_id: str) -> list[tuple[str, str, str, float]]:
        """(kind, other id, direction, weight) for every edge touching one memory."""
        out: list[tuple[str, str, str, float]] = []
        for kind, table in EDGE_KINDS.items():
            weight = "r.weight" if table != "SUPERSEDES" else "1.0"
            for other, w in self.db.read(
                f"MATCH (a:Memory {{id: $id}})-[r:{table}]->(b:Memory) RETURN b.id, {weight}",
                {"id": memory_id},
            ):
                out.append((kind, other, "out", float(w)))
            for other, w in self.db.read(
                f"MATCH (a:Memory {{id: $id}})<-[r:{table}]-(b:Memory) RETURN b.id, {weight}",
                {"id": memory_id},
            ):
                out.append((kind, other, "in", float(w)))
        return out

    def counts(self) -> dict[str, Any]:
        """Counts for ``stats()``: by kind and status, hot, superseded, edges, rows."""
        out: dict[str, Any] = {}
        out["by_kind"] = dict(self.db.read("MATCH (m:Memory) RETURN m.kind, count(*)"))
        out["by_status"] = dict(self.db.read("MATCH (m:Memory) RETURN m.status, count(*)"))
        out["hot"] = self.db.read("MATCH (m:Memory) WHERE m.hot RETURN count(*)")[0][0]
        out["superseded"] = self.db.read(
            "MATCH (m:Memory) WHERE size(m.superseded_by) > 0 RETURN count(*)"
        )[0][0]
        out["owners"] = self.db.read(
            "MATCH (m:Memory) WHERE m.owner IS NOT NULL RETURN count(DISTINCT m.owner)"
        )[0][0]
        out["edges"] = {
            kind: self.db.read(f"MATCH ()-[r:{table}]->() RETURN count(*)")[0][0]
            for kind, table in EDGE_KINDS.items()
        }
        out["versions"] = self.db.read("MATCH (v:Version) RETURN count(*)")[0][0]
        out["events"] = self.db.read("MATCH (e:LifecycleEvent) RETURN count(*)")[0][0]
        return out

    # -- lifecycle jobs and graph signals --------------------------------------------
    def run_job(self, job: str, rows: Sequence[Mapping[str, Any]], *, now: datetime,
                actor: str) -> int:
        """Apply a lifecycle job to staged rows (see ``_jobs.JOBS``) in one transaction."""
        return _jobs.run_job(self.db, job, rows, now=now, actor=actor)

    # -- hard delete ---------------------------------------------------------------
    def events_mentioning(self, memory_id: str, probe: str) -> list[tuple[str, dict[str, Any]]]:
        """Other memories' events (and store-wide ones) whose metadata names
        ``memory_id`` or contains ``probe``: (event id, metadata)."""
        clauses = ["e.metadata CONTAINS $id"] + (["e.metadata CONTAINS $probe"] if probe else [])
        params = {"id": memory_id, **({"probe": probe} if probe else {})}
        rows = self.db.read(
            "MATCH (e:LifecycleEvent) WHERE e.memory_id <> $id AND (" + " OR ".join(clauses)
            + ") RETURN e.event_id, e.metadata", params)
        return [(str(event_id), _json_load(raw)) for event_id, raw in rows]

    def redact(self, memory_id: str, *, node: Mapping[str, Any], version: Mapping[str, Any],
               event: Mapping[str, Any], changes: Sequence[Change] = (),
               event_metadata: Sequence[tuple[str, Mapping[str, Any]]] = (),
               version_digests: Mapping[str, str] | None = None) -> None:
        """Forget one memory: blank its node, redact its versions (their hashes replaced
        by ``version_digests``) and its events' metadata, delete its edges, apply
        ``changes`` (contexts scrubbed of its text), replace the metadata of other events
        that quoted it (``event_metadata``), and record one version and one event, in one
        transaction. Torn write-ahead-log copies kept for recovery are deleted: they may
        hold the text."""
        with self.db.write() as tx:
            for change in changes:
                self._apply(tx, change)
            for event_id, metadata in event_metadata:
                tx.run("MATCH (e:LifecycleEvent {event_id: $e}) SET e.metadata = $m",
                       {"e": event_id, "m": _json_dump(metadata)})
            self._apply(tx, Change(memory_id, set=dict(node)))
            tx.run(
                "MATCH (:Memory {id: $id})-[:HAS_VERSION]->(v:Version) "
                "SET v.text = NULL, v.subject = NULL, v.redacted = true, v.reason = NULL",
                {"id": memory_id},
            )
            for version_id, digest in (version_digests or {}).items():
                tx.run("MATCH (v:Version {id: $v}) SET v.text_sha256 = $d",
                       {"v": version_id, "d": digest})
            tx.run(
                "MATCH (e:LifecycleEvent) WHERE e.memory_id = $id SET e.metadata = $redacted",
                {"id": memory_id, "redacted": _json_dump({"redacted": True})},
            )
            for table in EDGE_KINDS.values():
                for pattern in ("-[r:{t}]->", "<-[r:{t}]-"):
                    tx.run(f"MATCH (:Memory {{id: $id}}){pattern.format(t=table)}(:Memory) "
                           "DELETE r", {"id": memory_id})
            self._apply(tx, Change(memory_id, version=dict(version), event=dict(event)))
        self.db.remove_torn_copies()

    # -- user Cypher ---------------------------------------------------------------
    def cypher(self, query: str, params: Mapping[str, Any] | None, *, write: bool,
               event: Mapping[str, Any] | None = None) -> Any:
        """User Cypher, through the guard (``_guard``): one reading statement in a READ
        ONLY transaction, or with ``write`` one data-changing statement committed with
        ``event`` (the audit record of it) in one transaction. Returns columns + rows."""
        check_parameters(query, params or {})
        checked = check_user_query(query, write=write)
        if not checked.writes:
            return self.db.read_only_query(checked.text, params)
        with self.db.write() as tx:
            result = tx.run_user(checked.text, params or {})
            if event is not None:
                tx.run(_CREATE_EVENTS, {"rows": [_event_params(event)]})
        return result

    def checkpoint(self) -> None:
        self.db.checkpoint()

    def rebuild(self) -> None:
        """Rewrite the database file from its live data (see ``Database.rebuild``)."""
        self.db.rebuild()
