"""A whole store as graphmem's records, read from one engine and written into another
through the port: memories with their vectors and every version row, events, edges,
entities, mentions, facts and store properties. ``copy_store`` moves a store between
engines (Kuzu to PostgreSQL and back) in one transaction of the target, then the
store's secret keys, which the target keeps its own way; a backup (``_backup``) writes
the same records to files and reads them back (``_backup_tables``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._engine import EDGE_KINDS, Engine, EventQuery, NewMemory, Patch, WriteBatch
from ._errors import StoreError
from ._models import Kind, Status, Version
from ._records import MEMORY_TABLE_FIELDS, memory_from_columns

__all__ = ["ENGINE_META", "MEMORY_FIELDS", "check_empty", "copy_store", "graph_batch",
           "memory_batch"]

#: Store properties that belong to one engine's files, not to the store: its schema, the
#: edges it marked gone, where its vector log stands.
ENGINE_META = frozenset({"schema_version", "gone_edges", "vector_log"})
#: What a store's memories are read with: ``Memory``'s fields, then the engine's own
#: (``INTERNAL_FIELDS``), the vector last.
MEMORY_FIELDS = MEMORY_TABLE_FIELDS
#: The internal fields a memory's last transition left (set after it is created).
_STATE = ("prev_status", "prev_kind", "state_changed")
_STATUSES = tuple(s.value for s in Status)
_KINDS = tuple(k.value for k in Kind)


def copy_store(source: Engine, target: Engine, *, keys: bool = True) -> int:
    """Copy every row of ``source`` into ``target`` (which must hold no memory) in one
    transaction of the target, and its keys unless ``keys`` is false (a backup holds
    none); returns how many memories were copied. Read inside ``source.snapshot()`` for
    a consistent copy while writers go on."""
    check_empty(target)
    scan = source.scan(MEMORY_FIELDS)
    rows: list[dict[str, Any]] = scan.table.to_pylist()
    vectors: list[np.ndarray | None] = [None] * len(rows)
    if scan.vectors is not None and scan.has_vector is not None:
        vectors = [v if has else None
                   for v, has in zip(scan.vectors, scan.has_vector, strict=True)]
    history: dict[str, list[Version]] = {}
    for version in source.versions():
        history.setdefault(version.memory_id, []).append(version)
    batch = memory_batch(rows, vectors, history, where=source.path)
    graph = graph_batch(source)
    with target.writer() as writer:
        writer.write(batch)
        writer.write(graph)
    held = set(target.secrets()) if keys else set()
    for key in source.secrets() if keys else ():
        if key not in held:
            target.add_secret(*key)
    return len(rows)


def check_empty(target: Engine) -> None:
    """A store is copied or restored only into one that holds no memory."""
    if target.memory_count():
        raise StoreError(f"{target.path} already holds memories; restore into an empty "
                         "store")


def memory_batch(rows: Iterable[Mapping[str, Any]], vectors: Sequence[np.ndarray | None],
                 history: Mapping[str, list[Version]], *, where: str) -> WriteBatch:
    """The writes that create memories: each row holds ``MEMORY_FIELDS`` but the vector
    (``vectors``, in the same order; None for a memory without one), ``history`` each
    memory's version rows (the first creates it, the others follow as patches with
    the state its last transition left). A row that is not a valid memory, or has no
    version row, is a ``StoreError`` naming it (``where`` names the rows' source)."""
    batch = WriteBatch()
    for row, vector in zip(rows, vectors, strict=True):
        name = str(row["id"])[:200]
        versions = sorted(history.get(row["id"], ()), key=lambda v: v.seq)
        if not versions:
            raise StoreError(f"{where}: memory {name!r} has no version row")
        try:
            memory = memory_from_columns({("ump" if k == "extra" else k): v
                                          for k, v in row.items()})
            state = {k: row[k] for k in _STATE if row.get(k) is not None}
            for key, values in (("prev_status", _STATUSES), ("prev_kind", _KINDS)):
                if key in state and state[key] not in values:
                    raise ValueError(f"{key} {str(state[key])[:40]!r} is not one of "
                                     f"{', '.join(values)}")
        except (ValueError, TypeError) as exc:
            lines = " ".join(line.strip() for line in str(exc).splitlines()[:3])[:300]
            raise StoreError(f"{where}: memory {name!r} is not a valid memory: {lines}"
                             ) from None
        batch.memories.append(NewMemory(memory, vector, versions[0],
                                        payload_at=row.get("payload_at")))
        if state:
            batch.patches.append(Patch(memory.id, set=state))
        batch.patches += [Patch(memory.id, version=v) for v in versions[1:]]
    return batch


def graph_batch(source: Engine) -> WriteBatch:
    """Everything of ``source`` but its memories and their versions: events, edges,
    entities, mentions, facts and the store's properties (not the engine's own)."""
    batch = WriteBatch(meta={k: v for k, v in source.meta().items() if k not in ENGINE_META})
    batch.events = source.events(EventQuery())
    for kind in EDGE_KINDS:
        batch.new_edges += source.edges(kind)
    batch.new_entities = source.entities(all_owners=True)
    batch.mentions = source.mentions()
    batch.facts = source.facts(all_owners=True)
    return batch
