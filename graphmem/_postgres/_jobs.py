"""Set-based lifecycle jobs: decisions are COPYed into a temporary ``stage`` table and
applied by one ``UPDATE ... FROM stage``, whose returned rows feed ``INSERT ... SELECT``
for the version rows and the events; all in the caller's transaction.

Each update only touches memories still in the state the decision was made from (a
memory already promoted is not promoted again), so two processes that apply the same
plan write each change, version and event once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from .._engine import Decision
from ._db import Cursor, copy_rows

__all__ = ["JOBS", "run_job"]

_STAGE = ("CREATE TEMP TABLE stage (id text COLLATE \"C\" PRIMARY KEY, num float8, "
          "xrefs int8, event_id text, meta text, reason text) ON COMMIT DROP")
#: job -> (assignments, the guard that the memory still needs it, version change type,
#: (event type, from state, to state) or None)
JOBS: dict[str, tuple[str, str, str | None, tuple[str, str, str] | None]] = {
    "promote": ("prev_kind = m.kind, state_changed = %(now)s, kind = 'semantic'",
                "m.kind <> 'semantic'", "promoted", ("promote", "prev_kind", "kind")),
    "archive": ("prev_status = m.status, state_changed = %(now)s, status = 'archived', "
                "hot = false", "m.status <> 'archived'", "archived",
                ("archive", "prev_status", "status")),
    "expire": ("prev_status = m.status, state_changed = %(now)s, status = 'tombstoned'",
               "m.status <> 'tombstoned'", "tombstoned", ("expire", "prev_status", "status")),
    "decay": ("importance = s.num", "m.importance IS DISTINCT FROM s.num",
              "importance_decay", None),
    "recompute": ("importance = s.num", "m.importance IS DISTINCT FROM s.num",
                  "importance_boost", None),
    "hot": ("hot = true", "NOT m.hot", None, ("hot", "status", "'hot'")),
    "cool": ("hot = false", "m.hot", None, ("cool", "'hot'", "status")),
    "payload": ("payload = NULL, payload_at = NULL",
                "(m.payload IS NOT NULL OR m.payload_at IS NOT NULL)", None, None),
    # graph signals: num is the centrality, xrefs the cross-reference count
    "signals": ("centrality = s.num, xref_count = COALESCE(s.xrefs, 0)", "true", None, None),
}
_BUMP = ", version = m.version + 1, modified = %(now)s"


def _statement(job: str) -> str:
    assignments, guard, change, event = JOBS[job]
    if change is not None:
        assignments += _BUMP
    parts = [f"WITH moved AS (UPDATE memories m SET {assignments} FROM stage s "
             f"WHERE s.id = m.id AND {guard} RETURNING m.*, s.reason AS s_reason, "
             "s.event_id AS s_event, s.meta AS s_meta)"]
    if change is not None:
        parts.append(
            ", versions_written AS (INSERT INTO versions (id, memory_id, seq, change_type, "
            "at, reason, actor, text, subject, text_sha256, importance, status, kind, "
            "redacted) SELECT id || '#v' || version, id, version, "
            f"'{change}', %(now)s, s_reason, %(actor)s, text, subject, text_sha256, "
            "importance, status, kind, false FROM moved)")
    if event is not None:
        kind, before, after = event
        parts.append(
            " INSERT INTO events (event_id, memory_id, event_type, from_state, to_state, "
            'reason, triggered_by, agent_id, "timestamp", metadata) SELECT s_event, id, '
            f"'{kind}', {before}, {after}, s_reason, 'auto', %(actor)s, %(now)s, s_meta "
            "FROM moved")
    else:
        parts.append(" SELECT count(*) FROM moved")
    return "".join(parts)


def run_job(cur: Cursor, job: str, decisions: Sequence[Decision], *, now: datetime,
            actor: str) -> None:
    """Apply ``job`` to the memories of ``decisions`` inside the open transaction."""
    cur.execute(_STAGE)
    copy_rows(cur, "stage", ["id", "num", "xrefs", "event_id", "meta", "reason"], [
        (d.memory_id, d.number, d.xrefs, d.event_id,
         json.dumps(dict(d.metadata), sort_keys=True) if d.metadata else "{}", d.reason)
        for d in dict((d.memory_id, d) for d in decisions).values()])
    cur.execute(_statement(job), {"now": now, "actor": actor})
    cur.execute("DROP TABLE stage")
