"""Set-based lifecycle jobs: decisions are COPYed into ``Stage`` and applied with one hash
join, the state change, its version row and its event in one transaction. The jobs are
``_engine_rules.JOBS``, rendered here into Cypher.

An id-list match (``WHERE m.id IN $ids`` or ``UNWIND ... MATCH {id: ...}``) plans as a scan
per id in Kuzu 0.11; the staged join costs one hash build (~0.5 s at 100k memories).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pyarrow as pa

from .._engine import ChangeSet, Decision, Job
from .._engine_rules import (
    JOBS,
    VERSION_MARK,
    Field,
    JobRule,
    Next,
    Staged,
    Term,
    render,
    staged,
)
from ._db import Database
from ._schema import MEMORY_TYPES, STAGE_TYPES

__all__ = ["run_job", "statement"]

#: A staged value -> its Stage column (the cross-reference count rides in ``reason``:
#: no job that reads it records a reason).
_STAGE = {"number": "s.num", "xrefs": "CAST(s.reason AS INT64)", "reason": "s.reason",
          "event_id": "s.event_id", "metadata": "s.meta"}


class _Cypher:
    """Terms in Cypher: ``m`` the memory, ``s`` its Stage row."""

    def field(self, name: str) -> str:
        return f"m.{name}"

    def staged(self, name: str) -> str:
        return _STAGE[name]

    def param(self, name: str) -> str:
        return f"${name}"

    def next(self, name: str) -> str:
        return f"m.{name} + 1"

    def version_id(self) -> str:
        return f"m.id + '{VERSION_MARK}' + CAST(m.version AS STRING)"

    def text(self, value: str) -> str:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _term(term: Term) -> str:
    return render(term, _Cypher())


def _differs(name: str, value: Term) -> str:
    """The memory's field ``name`` is distinct from ``value`` (null is a value)."""
    field = f"m.{name}"
    if value is None:
        return f"{field} IS NOT NULL"
    if isinstance(value, str | bool):
        return f"({field} IS NULL OR {field} <> {_term(value)})"
    other = _term(value)
    return f"({field} <> {other} OR ({field} IS NULL) <> ({other} IS NULL))"


def statement(rule: JobRule) -> str:
    """The Cypher applying ``rule`` to each staged memory that still needs it. Values
    read from the memory are set first (Kuzu reads a field set earlier in the same SET
    clause as set), then the rest."""
    guard = rule.guard()
    where = "".join(f" AND {_differs(*guard[0])}" if len(guard) == 1 else
                    f" AND ({' OR '.join(_differs(n, v) for n, v in guard)})" if guard else "")
    if rule.states:
        where += " AND m.status IN [" + ", ".join(f"'{state}'" for state in rule.states) + "]"
    out = "MATCH (s:Stage), (m:Memory) WHERE s.id = m.id" + where + " "
    sets = rule.assignments()
    reading = [(n, v) for n, v in sets if isinstance(v, Field | Next)]
    for group in (reading, [(n, v) for n, v in sets if (n, v) not in reading]):
        if group:
            out += "SET " + ", ".join(f"m.{n} = {_term(v)}" for n, v in group) + " "
    if version := rule.version_row():
        out += ("CREATE (m)-[:HAS_VERSION]->(:Version {"
                + ", ".join(f"{c}: {_term(v)}" for c, v in version) + "}) ")
    if event := rule.event_row():
        out += ("CREATE (:LifecycleEvent {"
                + ", ".join(f"{c}: {_term(v)}" for c, v in event) + "}) ")
    return out + "RETURN count(*)"


def _stage_table(rows: list[dict[str, object]]) -> pa.Table:
    """Staged rows as Stage rows (see ``_STAGE``)."""
    columns = {
        "id": [r["id"] for r in rows],
        "num": [r["number"] for r in rows],
        "flag": [None] * len(rows),
        "event_id": [r["event_id"] for r in rows],
        "meta": [r["metadata"] for r in rows],
        "reason": [r["reason"] for r in rows],
    }
    types = {"STRING": pa.string(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}
    return pa.Table.from_arrays(
        [pa.array(columns[c], type=types[t]) for c, t in STAGE_TYPES.items()],
        names=list(STAGE_TYPES))


def run_job(db: Database, job: Job, decisions: Sequence[Decision], changes: ChangeSet, *,
            now: datetime, actor: str) -> int:
    """Apply ``job`` to the memories of ``decisions`` in one transaction that records
    ``changes``; returns how many it changed."""
    rule = JOBS[job]
    text = statement(rule)
    rows = staged(decisions)
    if any(isinstance(v, Staged) and v.name == "xrefs" for _, v in rule.sets):
        for row in rows:  # the count rides in ``reason`` (see ``_STAGE``)
            row["reason"] = str(row["xrefs"])
    params = {k: v for k, v in {"now": now, "actor": actor}.items() if f"${k}" in text}
    with db.write() as tx:
        tx.changes = changes
        if any(MEMORY_TYPES[name].endswith("[]") for name, _ in rule.assignments()):
            tx.set_lists("Memory")
        tx.copy("Stage", _stage_table(rows))
        changed = int(tx.run(text, params)[0][0])
        tx.run("MATCH (s:Stage) DELETE s")
    return changed
