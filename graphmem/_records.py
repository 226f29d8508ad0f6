"""graphmem's types as plain rows and back, for every engine: the columns a memory, a
version and an event are stored as, with engine-neutral values (aware UTC datetimes,
lists, JSON as text, the vector as a numpy array). Each engine adapts these rows to its
driver (``_kuzu._rows``: base64 vectors and naive timestamps; ``_postgres._rows``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ._engine import INTERNAL_FIELDS, EntityRecord, NewMemory, memory_from_fields
from ._models import LifecycleEvent, Memory, Version

__all__ = [
    "EVENT_COLUMNS",
    "FIELD_COLUMNS",
    "MEMORY_COLUMNS",
    "MEMORY_TABLE_FIELDS",
    "MODEL_COLUMNS",
    "TABLE_TYPES",
    "VECTOR_TYPE",
    "VERSION_COLUMNS",
    "arrow_type",
    "aware",
    "check_merges",
    "event_from_values",
    "event_row",
    "json_dump",
    "json_load",
    "memory_from_columns",
    "memory_row",
    "merges_from_text",
    "merges_text",
    "patched_memory",
    "sentences_matrix",
    "sentences_text",
    "stored_value",
    "version_from_values",
    "version_row",
]

#: Every stored column of a memory and its type (``str``, ``bool``, ``float``, ``int``,
#: ``time``, ``str[]``, ``time[]``, ``json``: an object as text; ``vector``), in the
#: order engines lay them out. ``extra`` is stored as ``ump``; five of them hold what
#: ``INTERNAL_FIELDS`` name (the vector as ``vec``), and ``sentences`` the sixth (base64
#: text in every engine and backup, ``sentences_text``: a column no engine encodes its way).
MEMORY_COLUMNS: dict[str, str] = {
    "id": "str", "owner": "str", "project": "str", "visibility": "str",
    "kind": "str", "status": "str", "hot": "bool",
    "subject": "str", "text": "str", "tags": "str[]",
    "importance": "float", "original_importance": "float", "confidence": "float",
    "created": "time", "modified": "time", "observed": "time",
    "valid_from": "time", "valid_to": "time",
    "access_count": "int", "last_accessed": "time", "access_times": "time[]",
    "useful_count": "int", "ignored_count": "int",
    "superseded_by": "str[]", "session": "str",
    "provenance": "json", "integrity": "json", "ump": "json",
    "payload": "str", "payload_hash": "str", "payload_at": "time",
    "text_sha256": "str", "version": "int",
    "centrality": "float", "xref_count": "int",
    "prev_status": "str", "prev_kind": "str", "state_changed": "time",
    "vec": "vector",
    "entities": "str[]", "context": "str", "times_from": "time[]", "times_to": "time[]",
    "sentences": "str",
}  # fmt: skip
VERSION_COLUMNS: dict[str, str] = {
    "id": "str", "memory_id": "str", "seq": "int", "change_type": "str",
    "at": "time", "reason": "str", "actor": "str", "text": "str",
    "subject": "str", "text_sha256": "str", "importance": "float", "status": "str",
    "kind": "str", "redacted": "bool",
}  # fmt: skip
EVENT_COLUMNS: dict[str, str] = {
    "event_id": "str", "memory_id": "str", "event_type": "str",
    "from_state": "str", "to_state": "str", "reason": "str",
    "triggered_by": "str", "agent_id": "str", "timestamp": "time",
    "metadata": "json",
}  # fmt: skip
#: graphmem field -> stored column, where they differ.
FIELD_COLUMNS = {"extra": "ump", "vector": "vec"}
_INTERNAL = ("vec", "payload_at", "prev_status", "prev_kind", "state_changed", "sentences")
#: The columns a ``Memory`` is built from.
MODEL_COLUMNS: tuple[str, ...] = tuple(c for c in MEMORY_COLUMNS if c not in _INTERNAL)
_JSON = frozenset(c for c, t in MEMORY_COLUMNS.items() if t == "json")
_LISTS = frozenset(c for c, t in MEMORY_COLUMNS.items() if t.endswith("[]"))
_TIMES = frozenset(c for c, t in MEMORY_COLUMNS.items() if t == "time")
_ARROW = {"str": pa.string(), "json": pa.string(), "bool": pa.bool_(), "float": pa.float64(),
          "int": pa.int64(), "time": pa.timestamp("us", tz="UTC"),
          "str[]": pa.list_(pa.string()), "time[]": pa.list_(pa.timestamp("us", tz="UTC"))}

assert set(INTERNAL_FIELDS) - {"vector"} <= set(MEMORY_COLUMNS)

#: A memory's fields in the neutral ``memories`` table: ``Memory``'s, then the engine's
#: own (``INTERNAL_FIELDS``), the vector last.
MEMORY_TABLE_FIELDS: tuple[str, ...] = (
    *Memory.model_fields, *(f for f in INTERNAL_FIELDS if f != "vector"), "vector")
#: A vector in the neutral ``memories`` table.
VECTOR_TYPE = pa.list_(pa.float32())
_STR, _FLOAT, _INT = pa.string(), pa.float64(), pa.int64()
_TIME, _STRINGS = _ARROW["time"], _ARROW["str[]"]
#: The engine-neutral tables of a store (``Engine.read_table``, ``BatchWriter.load``, a
#: backup's files): columns and their Arrow types, in order. JSON as text, timestamps
#: in UTC; an edge has every kind's properties (weight 1 and count 1 where its kind has
#: none, source or reason "").
TABLE_TYPES: dict[str, dict[str, pa.DataType]] = {
    "memories": {**{f: _ARROW[MEMORY_COLUMNS[FIELD_COLUMNS.get(f, f)]]
                    for f in MEMORY_TABLE_FIELDS if f != "vector"}, "vector": VECTOR_TYPE},
    "versions": {c: _ARROW[t] for c, t in VERSION_COLUMNS.items()},
    "events": {c: _ARROW[t] for c, t in EVENT_COLUMNS.items()},
    "edges": {"kind": _STR, "src": _STR, "dst": _STR, "weight": _FLOAT, "count": _INT,
              "source": _STR, "reason": _STR, "at": _TIME},
    "entities": {"id": _STR, "owner": _STR, "name": _STR, "type": _STR,
                 "aliases": _STRINGS, "merges": _STR, "created": _TIME},
    "mentions": {"memory_id": _STR, "entity_id": _STR, "role": _STR, "weight": _FLOAT,
                 "surface": _STR},
    "facts": {"id": _STR, "owner": _STR, "subject": _STR, "predicate": _STR,
              "object": _STR, "confidence": _FLOAT, "valid_from": _TIME,
              "valid_to": _TIME, "recorded": _TIME, "sources": _STRINGS, "rule": _STR,
              "ended_by": _STR},
}


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type a scan gives a column of this type (timestamps in UTC)."""
    return _ARROW[kind]


def aware(value: Any) -> Any:
    """A naive datetime as UTC (engines that store naive UTC give these back)."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def json_dump(value: Any) -> str:
    return json.dumps(value or {}, ensure_ascii=False, sort_keys=True, allow_nan=False)


def json_load(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def merges_text(entity: EntityRecord) -> str:
    """An entity's ``merges`` as they are stored (JSON text)."""
    return json.dumps([dict(m) for m in entity.merges], sort_keys=True)


def merges_from_text(text: str | None) -> tuple[Any, ...]:
    """An entity's ``merges`` from the stored text."""
    return tuple(json.loads(text)) if text else ()


def check_merges(text: str) -> None:
    """``ValueError`` unless ``text`` is an entity's ``merges`` as graphmem writes them:
    a JSON list of objects of strings.

    >>> check_merges('[{"from": "e1"}]')
    >>> check_merges('[1, 2]')
    Traceback (most recent call last):
    ...
    ValueError: merges must be a list of objects of strings
    """
    try:
        merges = json.loads(text)
    except RecursionError:
        merges = None
    if not isinstance(merges, list) or not all(
            isinstance(m, dict) and all(isinstance(v, str) for v in (*m, *m.values()))
            for m in merges):
        raise ValueError("merges must be a list of objects of strings")


def sentences_text(vectors: np.ndarray | None) -> str | None:
    """A memory's sentence vectors (a matrix) as the ``sentences`` column holds them: the
    rows' float32 bytes in base64; None for none.

    >>> sentences_text(np.array([[1.0, 0.0]])), sentences_text(np.zeros((0, 2)))
    ('AACAPwAAAAA=', None)
    """
    if vectors is None or not len(vectors):
        return None
    return base64.b64encode(np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
                            ).decode("ascii")


def sentences_matrix(text: str | None, dim: int) -> np.ndarray | None:
    """The sentence vectors of a ``sentences`` value, rows of ``dim`` (None for none);
    ``ValueError`` for a value that is not float32 rows of that width.

    >>> sentences_matrix("AACAPwAAAAA=", 2).tolist(), sentences_matrix(None, 2)
    ([[1.0, 0.0]], None)
    """
    if not text:
        return None
    raw = base64.b64decode(text, validate=True)
    if dim <= 0 or len(raw) % (4 * dim):
        raise ValueError(f"sentence vectors of {len(raw)} bytes are not rows of {dim} "
                         "float32")
    return np.frombuffer(raw, dtype=np.float32).reshape(-1, dim)


def stored_value(name: str, value: Any) -> tuple[str, Any]:
    """A graphmem field and its value as the stored column and value (the vector as
    given: each engine encodes it its way; sentence vectors as ``sentences_text``)."""
    if name == "sentences":
        return name, value if value is None or isinstance(value, str) \
            else sentences_text(value)
    column = FIELD_COLUMNS.get(name, name)
    if column in _JSON:
        return column, json_dump(value)
    if column in _LISTS:
        return column, [getattr(v, "value", v) for v in (value or [])]
    return column, getattr(value, "value", value)


def memory_from_columns(row: Mapping[str, Any]) -> Memory:
    """A ``Memory`` from a row keyed by column (missing columns take defaults)."""
    fields = {("extra" if column == "ump" else column): aware(value) if column in _TIMES
              else value for column, value in row.items() if column in MODEL_COLUMNS}
    for name in ("access_times", "times_from", "times_to"):
        if fields.get(name):
            fields[name] = [aware(t) for t in fields[name]]
    return memory_from_fields(fields)


def patched_memory(memory: Memory, fields: Mapping[str, Any]) -> Memory:
    """``memory`` as a commit that set ``fields`` on it leaves it: what reading the row
    back would give (each value through its stored form), without the read."""
    row = dict(stored_value(name, getattr(memory, name)) for name in Memory.model_fields)
    row.update(stored_value(name, value) for name, value in fields.items())
    return memory_from_columns(row)


def memory_row(new: NewMemory) -> dict[str, Any]:
    """The stored row of a new memory, by ``MEMORY_COLUMNS`` (field by field: a bulk
    insert builds one per memory, and a generic loop over the model cost ~0.16 ms each);
    ``vec`` is the vector as given."""
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
        "prev_kind": None, "state_changed": None, "vec": new.vector,
        "entities": list(m.entities), "context": m.context, "times_from": list(m.times_from),
        "times_to": list(m.times_to), "sentences": sentences_text(new.sentences),
    }


def version_row(version: Version) -> dict[str, Any]:
    v = version
    return {"id": v.id, "memory_id": v.memory_id, "seq": v.seq,
            "change_type": v.change_type.value, "at": v.at, "reason": v.reason,
            "actor": v.actor, "text": v.text, "subject": v.subject,
            "text_sha256": v.text_sha256, "importance": v.importance,
            "status": v.status.value if v.status is not None else None,
            "kind": v.kind.value if v.kind is not None else None, "redacted": v.redacted}


def version_from_values(values: Mapping[str, Any]) -> Version:
    data = dict(values)
    data["at"] = aware(data["at"])
    data["redacted"] = bool(data["redacted"])
    return Version(**data)


def event_row(event: LifecycleEvent) -> dict[str, Any]:
    data = event.model_dump()
    out = {c: getattr(data[c], "value", data[c]) for c in EVENT_COLUMNS}
    out["metadata"] = json_dump(out["metadata"])
    return out


def event_from_values(values: Mapping[str, Any]) -> LifecycleEvent:
    data = dict(values)
    data["timestamp"] = aware(data["timestamp"])
    data["metadata"] = json_load(data["metadata"])
    return LifecycleEvent(**data)
