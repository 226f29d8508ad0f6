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

from .._arrow import array_of
from .._engine import (
    EdgeRecord,
    EntityRecord,
    FactRecord,
    MentionRecord,
    NewMemory,
)
from .._models import LifecycleEvent, Version
from .._records import (
    FIELD_COLUMNS,
    MODEL_COLUMNS,
    aware,
    event_from_values,
    event_row,
    json_dump,
    memory_from_columns,
    memory_row,
    merges_from_text,
    merges_text,
    stored_value,
    version_from_values,
    version_row,
)
from ._schema import EVENT_TYPES, VERSION_TYPES

__all__ = [
    "EDGE_PROPS",
    "EDGE_TABLES",
    "FIELD_COLUMNS",
    "MODEL_COLUMNS",
    "arrow_rows",
    "aware",
    "column_value",
    "decode_vector",
    "edge_from_row",
    "encode_vector",
    "event_from_row",
    "event_params",
    "json_dump",
    "memory_from_row",
    "memory_params",
    "source_needle",
    "sources_of",
    "sources_text",
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


def vector_decodes(text: str) -> bool:
    """Whether ``text`` is base64 of float32 values, all finite (a vector graphmem wrote).

    >>> vector_decodes("AACAPwAAAAA="), vector_decodes("AAAA"), vector_decodes("no!")
    (True, False, False)
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error is one
        return False
    return len(raw) % 4 == 0 and bool(np.isfinite(np.frombuffer(raw, dtype=np.float32)).all())


def decode_vectors(texts: Sequence[str | None], dim: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """base64 vectors as rows of one float32 matrix and which rows hold one: the width is
    ``dim``, else the first vector's; a vector of another width counts as none. Vectors
    whose base64 has no padding (384 dimensions: 2,048 characters) are decoded in one
    call; the rest one by one.

    >>> texts = [encode_vector(np.ones(3)), None, encode_vector(np.arange(3.0))]
    >>> matrix, present = decode_vectors(texts)
    >>> matrix.tolist(), present.tolist()
    ([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 2.0]], [True, False, True])
    """
    if dim is None:
        first = decode_vector(next((t for t in texts if t), None))
        dim = 0 if first is None else len(first)
    matrix = np.zeros((len(texts), dim), dtype=np.float32)
    present = np.zeros(len(texts), dtype=bool)
    if not dim:
        return matrix, present
    width = 4 * -(-dim * 4 // 3)  # base64 characters of one vector
    whole, parts = [], []
    for i, text in enumerate(texts):
        if text and len(text) == width and text[-1] != "=":
            whole.append(i)
            parts.append(text)
    if whole:
        try:
            decoded = base64.b64decode("".join(parts), validate=True)
        except ValueError:  # a stray character: one by one, below
            pass
        else:
            matrix[whole] = np.frombuffer(decoded, dtype=np.float32).reshape(len(whole), dim)
            present[whole] = True
    for i, text in enumerate(texts):
        if text and not present[i]:
            vector = decode_vector(text)
            if vector is not None and len(vector) == dim:
                matrix[i], present[i] = vector, True
    return matrix, present


def naive(value: Any) -> Any:
    """Aware datetimes as naive UTC (what Kuzu stores), recursively through lists."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, list):
        return [naive(v) for v in value]
    return value


def column_value(name: str, value: Any) -> tuple[str, Any]:
    """A graphmem field and its value as the Kuzu column and the value it stores."""
    column, stored = stored_value(name, value)
    return column, encode_vector(stored) if column == "vec" else stored


def memory_params(new: NewMemory) -> dict[str, Any]:
    """The ``Memory`` node row of a new memory (its vector as base64)."""
    row = memory_row(new)
    row["vec"] = encode_vector(new.vector)
    return row


memory_from_row = memory_from_columns


def version_params(version: Version) -> dict[str, Any]:
    return version_row(version)


def version_from_row(row: Sequence[Any]) -> Version:
    return version_from_values(dict(zip(VERSION_TYPES, row, strict=True)))


def event_params(event: LifecycleEvent) -> dict[str, Any]:
    return event_row(event)


def event_from_row(row: Sequence[Any]) -> LifecycleEvent:
    return event_from_values(dict(zip(EVENT_TYPES, row, strict=True)))


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
            "merges": merges_text(entity),
            "created": entity.created, "gone": None}


def entity_from_row(row: Sequence[Any]) -> EntityRecord:
    (entity_id, owner, name, kind, aliases, merges, created) = row
    return EntityRecord(id=entity_id, owner=owner, name=name, type=kind,
                        aliases=tuple(aliases or ()),
                        merges=merges_from_text(merges),
                        created=aware(created))


def mention_params(mention: MentionRecord) -> dict[str, Any]:
    return {"from": mention.memory_id, "to": mention.entity_id, "role": mention.role,
            "weight": mention.weight, "surface": mention.surface, "gone": None}


#: what ``_quoted`` writes as an escape: the characters JSON gives structure to, and controls
_STRUCTURAL = frozenset('"\\,[]') | {chr(c) for c in range(0x20)}


def _quoted(memory_id: str) -> str:
    """One id as a JSON string in which no quote, comma, bracket or backslash stands for
    itself (each is a ``\\uXXXX`` escape): such characters in the list's text are its
    structure alone, so ``CONTAINS`` of a quoted id matches that id and no other."""
    return '"' + "".join(f"\\u{ord(c):04x}" if c in _STRUCTURAL else c
                         for c in memory_id) + '"'


def sources_text(ids: Sequence[str]) -> str:
    """A fact's sources as the FACT table holds them: the JSON text of the ids, compact,
    each quoted by ``_quoted`` (``f.sources CONTAINS source_needle(id)`` finds the facts
    a memory states).

    >>> sources_text(["urn:a", 'say "hi", ok'])
    '["urn:a","say \\\\u0022hi\\\\u0022\\\\u002c ok"]'
    >>> sources_of(sources_text(["urn:a", 'say "hi", ok']))
    ('urn:a', 'say "hi", ok')
    """
    return "[" + ",".join(_quoted(i) for i in ids) + "]"


def source_needle(memory_id: str) -> str:
    """What ``sources_text`` writes for one id: found in a list's text exactly when the
    id is one of the list's (a quote there is a string's start or end, never inside it).

    >>> [source_needle(i) in sources_text(['z"x', "a", "b"]) for i in ("x", ",", "a")]
    [False, False, True]
    """
    return _quoted(memory_id)


def sources_of(text: str | None) -> tuple[str, ...]:
    """The ids ``sources_text`` wrote (none for none)."""
    return tuple(json.loads(text)) if text else ()


def fact_params(fact: FactRecord) -> dict[str, Any]:
    return {"from": fact.subject, "to": fact.object, "id": fact.id, "owner": fact.owner,
            "predicate": fact.predicate, "confidence": fact.confidence,
            "valid_from": fact.valid_from, "valid_to": fact.valid_to,
            "recorded": fact.recorded, "rule": fact.rule, "ended_by": fact.ended_by,
            "gone": None, "sources": sources_text(fact.sources)}


def fact_from_row(row: Sequence[Any]) -> FactRecord:
    (fact_id, owner, subject, predicate, obj, confidence, valid_from, valid_to, recorded,
     sources, rule, ended_by) = row
    return FactRecord(id=fact_id, owner=owner, subject=subject, predicate=predicate,
                      object=obj, confidence=float(confidence),
                      valid_from=aware(valid_from), valid_to=aware(valid_to),
                      recorded=aware(recorded), sources=sources_of(sources), rule=rule or "",
                      ended_by=ended_by)


def arrow_rows(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> pa.Table:
    """Rows as an Arrow table with a node table's columns, in its order (for COPY)."""
    arrays = [array_of([r.get(c) for r in rows], _ARROW_TYPES[t]) for c, t in types.items()]
    return pa.Table.from_arrays(arrays, names=list(types))
