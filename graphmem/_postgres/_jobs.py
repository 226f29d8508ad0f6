"""Set-based lifecycle jobs: decisions are COPYed into a temporary ``stage`` table and
applied by one ``UPDATE ... FROM stage``, whose returned rows feed ``INSERT ... SELECT``
for the version rows and the events; all in the caller's transaction. The jobs are
``_engine_rules.JOBS``, rendered here into SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .. import _engine_rules as rules
from .._engine import Decision, Job
from ._db import Cursor, copy_rows

__all__ = ["run_job", "statement"]

_STAGE = ("CREATE TEMP TABLE stage (id text COLLATE \"C\" PRIMARY KEY, num float8, "
          "xrefs int8, event_id text, meta text, reason text) ON COMMIT DROP")
#: A staged value -> its stage column.
_COLUMN = {"number": "num", "xrefs": "xrefs", "reason": "reason", "event_id": "event_id",
           "metadata": "meta"}


class _Sql:
    """Terms in the UPDATE (``moved`` false: ``m`` the memory before, ``s`` the stage)
    or in a SELECT from its returned rows (``moved``: the memory after, ``s_*``)."""

    def __init__(self, *, moved: bool) -> None:
        self.moved = moved

    def field(self, name: str) -> str:
        return f'"{name}"' if self.moved else f'm."{name}"'

    def staged(self, name: str) -> str:
        return f"s_{_COLUMN[name]}" if self.moved else f"s.{_COLUMN[name]}"

    def param(self, name: str) -> str:
        return f"%({name})s"

    def next(self, name: str) -> str:
        return f'm."{name}" + 1'

    def version_id(self) -> str:
        return f"id || '{rules.VERSION_MARK}' || version"

    def text(self, value: str) -> str:
        return "'" + value.replace("'", "''") + "'"


def _term(term: rules.Term, *, moved: bool) -> str:
    return rules.render(term, _Sql(moved=moved))


def statement(rule: rules.JobRule) -> str:
    """The SQL applying ``rule`` to each staged memory that still needs it."""
    assignments = ", ".join(f'"{n}" = {_term(v, moved=False)}' for n, v in rule.assignments())
    guard = " OR ".join(f'm."{n}" IS DISTINCT FROM {_term(v, moved=False)}'
                        for n, v in rule.guard()) or "true"
    if rule.states:
        guard = f"({guard}) AND m.\"status\" IN (" + ", ".join(
            f"'{state}'" for state in rule.states) + ")"
    staged_columns = ", ".join(f"s.{c} AS s_{c}" for c in _COLUMN.values())
    parts = [f"WITH moved AS (UPDATE memories m SET {assignments} FROM stage s "
             f"WHERE s.id = m.id AND ({guard}) RETURNING m.*, {staged_columns})"]
    if version := rule.version_row():
        parts.append(
            ", versions_written AS (INSERT INTO versions ("
            + ", ".join(f'"{c}"' for c, _ in version) + ") SELECT "
            + ", ".join(_term(v, moved=True) for _, v in version) + " FROM moved)")
    if event := rule.event_row():
        parts.append(
            " INSERT INTO events (" + ", ".join(f'"{c}"' for c, _ in event) + ") SELECT "
            + ", ".join(_term(v, moved=True) for _, v in event) + " FROM moved")
    else:
        parts.append(" SELECT count(*) FROM moved")
    return "".join(parts)


def run_job(cur: Cursor, job: Job, decisions: Sequence[Decision], *, now: datetime,
            actor: str) -> int:
    """Apply ``job`` to the memories of ``decisions`` inside the open transaction;
    returns how many it changed."""
    cur.execute(_STAGE)
    rows = rules.staged(decisions)
    copy_rows(cur, "stage", ["id", *_COLUMN.values()],
              [(r["id"], *(r[k] for k in _COLUMN)) for r in rows])
    rule = rules.JOBS[job]
    cur.execute(statement(rule), {"now": now, "actor": actor})
    # one event per memory changed, or the count of them
    changed = cur.rowcount if rule.event_row() else int(cur.fetchone()[0])  # type: ignore[index]
    cur.execute("DROP TABLE stage")
    return changed
