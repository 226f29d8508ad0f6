"""Whole-store views: the GDPR export, ad-hoc Cypher (an engine capability), and the
graph as networkx; ``to_json``, the one JSON form of graphmem's values (snake_case keys)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from ._context import Changed, StoreContext
from ._derive import lifecycle_event
from ._engine import EDGE_KINDS, CypherResult, EdgeRecord, EntityRecord, EventQuery, FactRecord
from ._errors import InvalidInputError, UnsupportedError
from ._input import check_flag
from ._lifecycle import EvaluationResult, LifecycleReport
from ._models import EventType, LifecycleEvent, Status
from ._time import format_iso

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Views", "snake_keys", "to_json"]

EXPORT_FORMAT = "graphmem-gdpr-export/1"


class Views:
    """Reads of the whole store for people and other tools."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx

    def export(self, owner: str | None = None) -> dict[str, Any]:
        """The GDPR export: every memory held (active, candidate, archived,
        and tombstoned ones listed as such), their version history, lifecycle events and
        edges. Forgotten memories appear only as ids with a keyed digest of what was deleted
        (the store can check a text against it; nobody else can recover it).

        The result is plain JSON data (``json.dumps`` works on it).
        """
        ctx = self._ctx
        ctx.before_read()
        engine = ctx.engine
        memories = engine.memories(owner=owner)
        held = {Status.ACTIVE, Status.CANDIDATE, Status.ARCHIVED}
        return {
            "format": EXPORT_FORMAT,
            "owner": owner,
            "generated": format_iso(ctx.now()),
            "memories": [to_json(m) for m in memories if m.status in held],
            "tombstoned": [to_json(m) for m in memories if m.status is Status.TOMBSTONED],
            "forgotten": [
                {"id": m.id, "text_digest": m.text_sha256,
                 "forgotten_at": format_iso(m.modified)}
                for m in memories if m.status is Status.FORGOTTEN
            ],
            "versions": [to_json(v) for v in engine.versions(owner=owner)],
            "events": [to_json(e) for e in engine.events(EventQuery(owner=owner))],
            "edges": {
                kind: [_edge_json(e) for e in engine.edges(kind, owner=owner)]
                for kind in EDGE_KINDS
            },
        }

    def cypher(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        as_dataframe: bool = False,
        actor: str | None = None,
    ) -> Any:
        """Run one Cypher statement against the graph: read-only unless ``write=True``.

        A read may use MATCH, WITH, UNWIND, RETURN ... and CALL of catalogue functions;
        never file I/O, extensions, settings or transaction control. A write (CREATE,
        MERGE, SET on memories and their edges; not of what graphmem derives from a
        memory's text or its lifecycle owns: ``update`` and the transitions change
        those) bypasses the version history: it is committed together with a
        ``cypher_write`` lifecycle event that records the statement and ``actor``.
        Parameters are bound by Kuzu, never pasted into the text, and every ``$name`` in
        the query must have a value. A statement
        still running after ``GRAPHMEM_CYPHER_TIMEOUT_S`` (10 s) is stopped with an
        ``InvalidInputError`` (a stopped write changes nothing). Returns a list of dicts
        (column -> value), or a pandas DataFrame with ``as_dataframe=True``.
        """
        check_flag(write, "write")  # "no" would be a write the caller did not mean
        _check_statement(query, params)
        ctx = self._ctx
        capability = ctx.engine.cypher
        if capability is None:
            raise UnsupportedError(
                f"ad-hoc Cypher needs the Kuzu engine; {ctx.engine.path} is a PostgreSQL "
                "store. Run a named query there (graphmem query --list; "
                "MemoryStore.named_query), or read-only SQL (MemoryStore.sql)")
        ctx.before_read()
        event = None
        if write:
            event = lifecycle_event("", EventType.CYPHER_WRITE, from_state="", to_state="",
                                    reason="ad-hoc Cypher write (bypasses versions)",
                                    at=ctx.now(), agent_id=ctx.actor(actor),
                                    metadata={"query": query, "params": sorted(params or {})})
        timeout_s = ctx.settings.cypher_timeout_s
        if write:
            with ctx.lock:  # one writer at a time; listeners hear of it before the next
                result = capability.run(query, params or {}, write=True, event=event,
                                        timeout_s=timeout_s)
                ctx.changed(Changed([], bulk=True))
        else:
            # A read takes no store lock: it runs in a read-only transaction on its own
            # connection, and writers (a recall recording access) go on meanwhile.
            result = capability.run(query, params or {}, write=False, event=None,
                                    timeout_s=timeout_s)
        return _result_rows(result, as_dataframe)

    def sql(self, query: str, params: Mapping[str, Any] | None = None, *,
            as_dataframe: bool = False) -> Any:
        """Run one read-only SQL statement on a PostgreSQL store's tables (``memories``,
        ``versions``, ``events``, ``edges``, ``entities``, ``mentions``, ``facts``), as
        the named queries do there. Parameters are ``%(name)s``, bound by PostgreSQL,
        never pasted into the text (a literal ``%`` is written ``%%``). It runs in a
        read-only transaction of its own, which is rolled back, and is stopped after
        ``GRAPHMEM_CYPHER_TIMEOUT_S`` (10 s) with an ``InvalidInputError``. It reads every
        owner's rows: it is for people who hold the database's credentials (the sidecar
        never runs it). Returns a list of dicts (column -> value), or a pandas DataFrame
        with ``as_dataframe=True``; a Kuzu store answers ``UnsupportedError``."""
        _check_statement(query, params)
        ctx = self._ctx
        capability = ctx.engine.sql
        if capability is None:
            raise UnsupportedError(f"SQL needs the PostgreSQL engine; {ctx.engine.path} is a "
                                   "Kuzu store: use MemoryStore.cypher or a named query")
        result = capability.run(query, params or {}, timeout_s=ctx.settings.cypher_timeout_s)
        return _result_rows(result, as_dataframe)

    def vectors(self, *, owner: str | None = None) -> tuple[list[str], np.ndarray]:
        """The stored vectors (of ``owner``'s memories) as a float32 matrix, row ``i``
        for the ``i``-th id; memories without a vector are left out."""
        self._ctx.before_read()
        scan = self._ctx.engine.scan(["id", "vector"], owner=owner)
        ids = scan.table.column("id").to_pylist()
        if scan.vectors is None or scan.has_vector is None:
            return [], np.zeros((0, self._ctx.vector_dim()), dtype=np.float32)
        keep = np.flatnonzero(scan.has_vector)
        return [ids[i] for i in keep], scan.vectors[keep]

    def to_networkx(
        self,
        *,
        owner: str | None = None,
        edge_kinds: Iterable[str] = tuple(EDGE_KINDS),
        statuses: Iterable[str] | None = None,
    ) -> nx.MultiDiGraph:
        """The memory graph as a ``networkx.MultiDiGraph``.

        Nodes are memory ids with kind, status, hot, subject, importance, owner and
        created as attributes; edges carry ``kind`` (references, co_occurs, supersedes)
        and their weight.
        """
        kinds = list(edge_kinds)
        for kind in kinds:
            if kind not in EDGE_KINDS:
                raise InvalidInputError(f"unknown edge kind {kind!r}", field="edge_kinds")
        self._ctx.before_read()
        wanted = set(statuses) if statuses is not None else None
        import networkx as nx  # ~90 ms to import: only when asked for

        graph = nx.MultiDiGraph()
        columns = ["id", "kind", "status", "hot", "subject", "text", "importance", "owner",
                   "created", "access_count"]
        for row in self._ctx.engine.scan(columns, owner=owner).table.to_pylist():
            if wanted is not None and row["status"] not in wanted:
                continue
            memory_id = row.pop("id")
            row["label"] = (row["subject"] or row.pop("text") or "")[:60]
            row.pop("text", None)
            graph.add_node(memory_id, **row)
        for kind in kinds:
            for edge in self._ctx.engine.edges(kind, owner=owner):  # type: ignore[arg-type]
                if edge.src in graph and edge.dst in graph:
                    graph.add_edge(edge.src, edge.dst, key=kind, kind=kind,
                                   weight=float(edge.weight))
        return graph


def to_json(value: BaseModel | EntityRecord | FactRecord) -> dict[str, Any]:
    """A graphmem value (memory, version, event, hit, result, report, entity, fact) as
    JSON data, with snake_case keys: the one casing of the command line, the sidecar and
    the exports; times in ISO 8601.
    Lifecycle events and the archivist's results keep their camelCase names for Python
    callers who ask (``model_dump(by_alias=True)``); their JSON is snake_case too, the
    metadata of events included (older events recorded it in camelCase).

    >>> from graphmem._derive import lifecycle_event
    >>> from graphmem._time import parse_iso
    >>> event = lifecycle_event("m1", EventType.ARCHIVE, from_state="active",
    ...                         to_state="archived", reason="age", agent_id="me",
    ...                         at=parse_iso("2026-07-15T12:00:00Z"),
    ...                         metadata={"accessCount": 0, "ageInDays": 41.5})
    >>> data = to_json(event)
    >>> data["event_type"], data["metadata"]
    ('archive', {'access_count': 0, 'age_in_days': 41.5})
    """
    if isinstance(value, EntityRecord | FactRecord):
        return {k: _json_field(v) for k, v in asdict(value).items()}
    data: dict[str, Any] = value.model_dump(mode="json")
    if isinstance(value, LifecycleEvent):
        data["metadata"] = snake_keys(data["metadata"])
    # The archivist's evaluation has no subject; people reading it over JSON need one.
    if isinstance(value, EvaluationResult):
        data["subject"] = value.subject
    if isinstance(value, LifecycleReport):
        for evaluation, out in zip(value.evaluations, data["evaluations"], strict=True):
            out["subject"] = evaluation.subject
    return data


def _json_field(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_iso(value)
    if isinstance(value, tuple | list):
        return [_json_field(v) for v in value]
    return value


def snake_keys(data: dict[str, Any]) -> dict[str, Any]:
    """The same mapping with camelCase keys spelled snake_case (values unchanged)."""
    return {_CAMEL.sub("_", key).lower(): value for key, value in data.items()}


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


#: The properties each edge kind exports (as before the engine port: the same JSON).
_EXPORTED = {"references": ("source", "weight", "at"),
             "co_occurs": ("weight", "count", "source", "at"),
             "supersedes": ("reason", "at")}


def _check_statement(query: Any, params: Any) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query is empty", field="query")
    if params is not None and (not isinstance(params, Mapping)
                               or not all(isinstance(k, str) for k in params)):
        raise InvalidInputError("params must be a mapping of name -> value, each name a "
                                "string", field="params")


def _result_rows(result: CypherResult, as_dataframe: bool) -> Any:
    """A statement's rows as dicts (column -> value), or as a DataFrame."""
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    if as_dataframe:
        import pandas as pd

        return pd.DataFrame(rows, columns=result.columns)
    return rows


def _edge_json(edge: EdgeRecord) -> dict[str, Any]:
    data = {"src": edge.src, "dst": edge.dst,
            **{p: getattr(edge, p) for p in _EXPORTED[edge.kind]}}
    return {k: (format_iso(v) if hasattr(v, "isoformat") else v) for k, v in data.items()}
