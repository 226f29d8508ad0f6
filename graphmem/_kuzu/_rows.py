"""graphmem's types as Kuzu rows and back: the one place that knows the column layout.

Vectors travel as base64 float32 strings (a 384-float list parameter costs Kuzu ~5 ms a
row, a string ~0.1 ms); JSON fields as strings; ``Memory.extra`` lives in ``ump``;
timestamps are naive UTC in Kuzu and aware UTC in graphmem.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from .._engine import (
    EdgeRecord,
    EntityRecord,
    FactRecord,
    MentionRecord,
    NewMemory,
    memory_from_fields,
)
from .._models import LifecycleEvent, Memory, Version
from ._schema import EVENT_TYPES, MEMORY_TYPES, VERSION_TYPES

__all__ = [
    "EDGE_PROPS",
    "EDGE_TABLES",
    "FIELD_COLUMNS",
    "MODEL_COLUMNS",
    "arrow_rows",
    "column_value",
    "decode_vector",
    "edge_from_row",
    "encode_vector",
    "event_from_row",
    "event_params",
    "memory_from_row",
    "memory_params",
    "version_from_row",
    "version_params",
]

#: Relationship tables between memories, by edge kind.
EDGE_TABLES = {"references": "REFERENCES", "co_occurs": "CO_OCCURS", "supersedes": "SUPERSEDES"}
EDGE_PROPS = {
    "REFERENCES": ("source", "weight", "at"),
    "CO_OCCURS": ("weight", "count", "source", "at"),
    "SUPERSEDES": ("reason", "at"),
}
JSON_COLUMNS = ("provenance", "integrity", "ump")
LIST_COLUMNS = ("tags", "superseded_by", "access_times", "entities", "times_from", "times_to")
_INTERNAL = ("vec", "payload_at", "prev_status", "prev_kind", "state_changed")
#: The columns a ``Memory`` is built from.
MODEL_COLUMNS: tuple[str, ...] = tuple(c for c in MEMORY_TYPES if c not in _INTERNAL)
#: graphmem field -> Kuzu column, where they differ.
FIELD_COLUMNS = {"extra": "ump", "vector": "vec"}
_ARROW_TYPES = {
    "STRING": pa.string(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(),
    "INT64": pa.int64(), "TIMESTAMP": pa.timestamp("us"),
    "STRING[]": pa.list_(pa.string()), "TIMESTAMP[]": pa.list_(pa.timestamp("us")),
}


def encode_vector(vector: np.ndarray | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def decode_vector(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


def naive(value: Any) -> Any:
    """Aware datetimes as naive UTC (what Kuzu stores), recursively through lists."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, list):
        return [naive(v) for v in value]
    return value


def aware(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _json_load(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def json_dump(value: Any) -> str:
    return json.dumps(value or {}, ensure_ascii=False, sort_keys=True, allow_nan=False)


def column_value(name: str, value: Any) -> tuple[str, Any]:
    """A graphmem field and its value as the Kuzu column and the value it stores."""
    column = FIELD_COLUMNS.get(name, name)
    if column == "vec":
        return column, encode_vector(value)
    if column in JSON_COLUMNS:
        return column, json_dump(value)
    if column in LIST_COLUMNS:
        return column, [getattr(v, "value", v) for v in (value or [])]
    return column, getattr(value, "value", value)


def memory_params(new: NewMemory) -> dict[str, Any]:
    """The ``Memory`` node row of a new memory (field by field: a bulk insert builds one
    per memory, and a generic loop over the model cost ~0.16 ms each)."""
    m = new.memory
    return {
        "id": m.id, "owner": m.owner, "project": m.project, "visibility": m.visibility,
        "kind": m.kind.value, "status": m.status.value, "hot": m.hot, "subject": m.subject,
        "text": m.text, "tags": list(m.tags), "importance": m.importance,
        "original_importance": m.original_importance, "confidence": m.confidence,
        "created": m.created, "modified": m.modified, "observed": m.observed,
        "valid_from": m.valid_from, "valid_to": m.valid_to, "access_count": m.access_count,
        "last_accessed": m.last_accessed, "access_times": list(m.access_times),
        "useful_count": m.useful_count, "ignored_count": m.ignored_count,
        "superseded_by": list(m.superseded_by), "session": m.session,
        "provenance": json_dump(m.provenance), "integrity": json_dump(m.integrity),
        "ump": json_dump(m.extra), "payload": m.payload, "payload_hash": m.payload_hash,
        "payload_at": new.payload_at, "text_sha256": m.text_sha256, "version": m.version,
        "centrality": m.centrality, "xref_count": m.xref_count, "prev_status": None,
        "prev_kind": None, "state_changed": None, "vec": encode_vector(new.vector),
        "entities": list(m.entities), "context": m.context, "times_from": list(m.times_from),
        "times_to": list(m.times_to),
    }


def memory_from_row(row: Mapping[str, Any]) -> Memory:
    """A ``Memory`` from a row keyed by column (missing columns take defaults)."""
    fields = {("extra" if column == "ump" else column): aware(value) if column in (
        "created", "modified", "observed", "valid_from", "valid_to", "last_accessed")
        else value for column, value in row.items() if column in MODEL_COLUMNS}
    for name in ("access_times", "times_from", "times_to"):
        if fields.get(name):
            fields[name] = [aware(t) for t in fields[name]]
    return memory_from_fields(fields)


def version_params(version: Version) -> dict[str, Any]:
    v = version
    return {"id": v.id, "memory_id": v.memory_id, "seq": v.seq,
            "change_type": v.change_type.value, "at": v.at, "reason": v.reason,
            "actor": v.actor, "text": v.text, "subject": v.subject,
            "text_sha256": v.text_sha256, "importance": v.importance,
            "status": v.status.value if v.status is not None else None,
            "kind": v.kind.value if v.kind is not None else None, "redacted": v.redacted}


def version_from_row(row: Sequence[Any]) -> Version:
    data = dict(zip(VERSION_TYPES, row, strict=True))
    data["at"] = aware(data["at"])
    data["redacted"] = bool(data["redacted"])
    return Version(**data)


def event_params(event: LifecycleEvent) -> dict[str, Any]:
    data = event.model_dump()
    out = {c: getattr(data[c], "value", data[c]) for c in EVENT_TYPES}
    out["metadata"] = json_dump(out["metadata"])
    return out


def event_from_row(row: Sequence[Any]) -> LifecycleEvent:
    data = dict(zip(EVENT_TYPES, row, strict=True))
    data["timestamp"] = aware(data["timestamp"])
    data["metadata"] = _json_load(data["metadata"])
    return LifecycleEvent(**data)


def edge_params(edge: EdgeRecord) -> dict[str, Any]:
    table = EDGE_TABLES[edge.kind]
    return {"src": edge.src, "dst": edge.dst,
            **{p: getattr(edge, p) for p in EDGE_PROPS[table]}}


def edge_from_row(kind: str, src: str, dst: str, props: Mapping[str, Any]) -> EdgeRecord:
    return EdgeRecord(kind=kind, src=src, dst=dst,  # type: ignore[arg-type]
                      weight=float(props.get("weight") or 1.0),
                      count=int(props.get("count") or 1),
                      source=str(props.get("source") or ""),
                      reason=str(props.get("reason") or ""), at=aware(props.get("at")))


def entity_params(entity: EntityRecord) -> dict[str, Any]:
    return {"id": entity.id, "owner": entity.owner, "name": entity.name, "type": entity.type,
            "aliases": list(entity.aliases),
            "merges": json.dumps([dict(m) for m in entity.merges], sort_keys=True),
            "created": entity.created, "gone": None}


def entity_from_row(row: Sequence[Any]) -> EntityRecord:
    (entity_id, owner, name, kind, aliases, merges, created) = row
    return EntityRecord(id=entity_id, owner=owner, name=name, type=kind,
                        aliases=tuple(aliases or ()),
                        merges=tuple(json.loads(merges)) if merges else (),
                        created=aware(created))


def mention_params(mention: MentionRecord) -> dict[str, Any]:
    return {"from": mention.memory_id, "to": mention.entity_id, "role": mention.role,
            "weight": mention.weight, "surface": mention.surface, "gone": None}


def fact_params(fact: FactRecord) -> dict[str, Any]:
    return {"from": fact.subject, "to": fact.object, "id": fact.id, "owner": fact.owner,
            "predicate": fact.predicate, "confidence": fact.confidence,
            "valid_from": fact.valid_from, "valid_to": fact.valid_to,
            "recorded": fact.recorded, "sources": list(fact.sources), "rule": fact.rule,
            "ended_by": fact.ended_by, "gone": None}


def fact_from_row(row: Sequence[Any]) -> FactRecord:
    (fact_id, owner, subject, predicate, obj, confidence, valid_from, valid_to, recorded,
     sources, rule, ended_by) = row
    return FactRecord(id=fact_id, owner=owner, subject=subject, predicate=predicate,
                      object=obj, confidence=float(confidence),
                      valid_from=aware(valid_from), valid_to=aware(valid_to),
                      recorded=aware(recorded), sources=tuple(sources or ()), rule=rule or "",
                      ended_by=ended_by)


def arrow_rows(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> pa.Table:
    """Rows as an Arrow table with a node table's columns, in its order (for COPY)."""
    arrays = [pa.array([naive(r.get(c)) for r in rows] if t.startswith("TIMESTAMP")
                       else [r.get(c) for r in rows], type=_ARROW_TYPES[t])
              for c, t in types.items()]
    return pa.Table.from_arrays(arrays, names=list(types))
