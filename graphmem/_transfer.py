"""Copying a whole store from one engine to another through the port (Kuzu to PostgreSQL
and back): memories with their vectors and every version row, events, edges, entities,
mentions, facts and store properties, written into the target in one transaction; then
the store's secret keys, which the target keeps its own way.

A backup (``_backup``) of a store that is not Kuzu's is written by copying it into a
scratch Kuzu database first (``_kuzu._restore.export_store``), and a backup is restored
into PostgreSQL by restoring it into a scratch Kuzu database and copying that.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ._engine import EDGE_KINDS, INTERNAL_FIELDS, Engine, EventQuery, NewMemory, Patch, WriteBatch
from ._errors import StoreError
from ._models import Memory, Version
from ._records import memory_from_columns

__all__ = ["copy_store"]

#: Store properties that belong to one engine, not to the store.
_ENGINE_META = frozenset({"schema_version", "gone_edges"})


def copy_store(source: Engine, target: Engine, *, keys: bool = True) -> int:
    """Copy every row of ``source`` into ``target`` (which must hold no memory) in one
    transaction of the target, and its keys unless ``keys`` is false (a backup holds
    none); returns how many memories were copied. Read inside ``source.snapshot()`` for
    a consistent copy while writers go on."""
    if sum(target.counts().by_kind.values()):
        raise StoreError(f"{target.path} already holds memories; restore into an empty "
                         "store")
    fields = [*Memory.model_fields, *(f for f in INTERNAL_FIELDS if f != "vector"), "vector"]
    scan = source.scan(fields)
    versions: dict[str, list[Version]] = defaultdict(list)
    for version in source.versions():
        versions[version.memory_id].append(version)
    batch = WriteBatch(meta={k: v for k, v in source.meta().items() if k not in _ENGINE_META})
    rows: list[dict[str, Any]] = scan.table.to_pylist()
    for i, row in enumerate(rows):
        history = sorted(versions.get(row["id"], []), key=lambda v: v.seq)
        if not history:
            raise StoreError(f"{source.path}: memory {row['id']} has no version row")
        vector = None
        if scan.vectors is not None and scan.has_vector is not None and scan.has_vector[i]:
            vector = scan.vectors[i]
        memory = memory_from_columns({("ump" if k == "extra" else k): v
                                      for k, v in row.items()})
        batch.memories.append(NewMemory(memory, vector, history[0],
                                        payload_at=row.get("payload_at")))
        state = {k: row[k] for k in ("prev_status", "prev_kind", "state_changed")
                 if row.get(k) is not None}
        if state:
            batch.patches.append(Patch(memory.id, set=state))
        batch.patches += [Patch(memory.id, version=v) for v in history[1:]]
    batch.events = source.events(EventQuery())
    for kind in EDGE_KINDS:
        batch.new_edges += source.edges(kind)
    batch.new_entities = source.entities(all_owners=True)
    batch.mentions = source.mentions()
    batch.facts = source.facts(all_owners=True)
    with target.writer() as writer:
        writer.write(batch)
    held = set(target.secrets()) if keys else set()
    for key in source.secrets() if keys else ():
        if key not in held:
            target.add_secret(*key)
    return len(rows)
