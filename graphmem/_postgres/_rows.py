"""graphmem's types as PostgreSQL row values and back (the column layout is
``graphmem._records``'; vectors are pgvector values, timestamps ``timestamptz``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .._engine import EdgeRecord, EntityRecord, FactRecord, MentionRecord, NewMemory
from .._models import LifecycleEvent, Version
from .._records import (
    EVENT_COLUMNS,
    MEMORY_COLUMNS,
    VERSION_COLUMNS,
    arrow_type,
    event_row,
    memory_row,
    merges_from_text,
    merges_text,
    version_row,
)

__all__ = [
    "EDGE_COLUMNS",
    "arrow_table",
    "edge_from_values",
    "entity_from_values",
    "entity_values",
    "event_values",
    "fact_from_values",
    "fact_values",
    "memory_values",
    "mention_values",
    "vector_value",
    "version_values",
]

EDGE_COLUMNS = "e.kind, e.src, e.dst, e.weight, e.count, e.source, e.reason, e.at"


def vector_value(vector: Any) -> np.ndarray | None:
    """A vector as pgvector stores it (float32), or None."""
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32)


def memory_values(new: NewMemory) -> list[Any]:
    row = memory_row(new)
    row["vec"] = vector_value(row["vec"])
    return [row[c] for c in MEMORY_COLUMNS]


def version_values(version: Version) -> list[Any]:
    row = version_row(version)
    return [row[c] for c in VERSION_COLUMNS]


def event_values(event: LifecycleEvent) -> list[Any]:
    row = event_row(event)
    return [row[c] for c in EVENT_COLUMNS]


def edge_from_values(row: Mapping[str, Any]) -> EdgeRecord:
    kind = row["kind"]
    return EdgeRecord(kind=kind, src=row["src"], dst=row["dst"],
                      weight=float(row["weight"]) if kind != "supersedes" else 1.0,
                      count=int(row["count"]) if kind == "co_occurs" else 1,
                      source=str(row["source"] or ""), reason=str(row["reason"] or ""),
                      at=row["at"])


def entity_values(entity: EntityRecord) -> list[Any]:
    return [entity.id, entity.owner, entity.name, entity.type, list(entity.aliases),
            merges_text(entity), entity.created]


def entity_from_values(row: Mapping[str, Any]) -> EntityRecord:
    merges = row["merges"]
    return EntityRecord(id=row["id"], owner=row["owner"], name=row["name"], type=row["type"],
                        aliases=tuple(row["aliases"] or ()),
                        merges=merges_from_text(merges),
                        created=row["created"])


def mention_values(row: Sequence[Any]) -> MentionRecord:
    memory_id, entity_id, role, weight, surface = row
    return MentionRecord(memory_id, entity_id, role, float(weight), surface)


def fact_values(fact: FactRecord) -> list[Any]:
    return [fact.id, fact.owner, fact.subject, fact.predicate, fact.object, fact.confidence,
            fact.valid_from, fact.valid_to, fact.recorded, list(fact.sources), fact.rule,
            fact.ended_by]


def fact_from_values(row: Mapping[str, Any]) -> FactRecord:
    return FactRecord(id=row["id"], owner=row["owner"], subject=row["subject"],
                      predicate=row["predicate"], object=row["object"],
                      confidence=float(row["confidence"]), valid_from=row["valid_from"],
                      valid_to=row["valid_to"], recorded=row["recorded"],
                      sources=tuple(row["sources"] or ()), rule=row["rule"] or "",
                      ended_by=row["ended_by"])


def arrow_table(columns: Mapping[str, list[Any]], kinds: Mapping[str, str]) -> pa.Table:
    """Scanned columns (field -> values) as an Arrow table with the store's types."""
    return pa.Table.from_arrays(
        [pa.array(values, type=arrow_type(kinds[name])) for name, values in columns.items()],
        names=list(columns))
