"""What each commit changed, for the other processes that share the database.

Every write transaction appends one row to ``changes`` (the memories it changed, the
ends of the edges it changed, the memories it erased, or ``bulk``), tagged with the
writing engine's ``origin`` and, by default, its transaction id. A process polls the
rows of others before it reads (``ChangeLog.poll``) and refreshes what it keeps in
memory (the recall index, cached entities).

Sequence numbers are handed out when a transaction inserts, not when it commits, so a
reader that kept "the last number seen" would miss a slow transaction that commits
after a faster, later-numbered one. The poll keeps a transaction horizon instead:
the oldest transaction still running at its last snapshot (``pg_snapshot_xmin``).
Everything older had finished then and was read; rows at or past the horizon are read
again until the horizon passes them, and the numbers already delivered are skipped.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable

from .._engine import ForeignChange
from ._db import Cursor, Database

__all__ = ["BULK_IDS", "ChangeLog", "ChangeSet"]

#: Past this many ids a change is recorded as bulk (readers rebuild what they keep).
BULK_IDS = 1000
#: Rows older than this are deleted by the writer that notices (hours).
_RETAIN_HOURS = 24


class ChangeSet:
    """What one transaction changed, collected while it writes."""

    def __init__(self) -> None:
        self.ids: dict[str, None] = {}
        self.edge_ends: dict[str, None] = {}
        self.removed: dict[str, None] = {}
        self.bulk = False

    def touch(self, ids: Iterable[str]) -> None:
        self.ids.update(dict.fromkeys(ids))

    def edges(self, ends: Iterable[str]) -> None:
        self.edge_ends.update(dict.fromkeys(ends))

    def __bool__(self) -> bool:
        return bool(self.ids or self.edge_ends or self.removed or self.bulk)

    def record(self, cur: Cursor, origin: str) -> None:
        """Append the row (inside the writing transaction)."""
        if not self:
            return
        bulk = self.bulk or len(self.ids) + len(self.edge_ends) > BULK_IDS
        cur.execute("INSERT INTO changes (origin, ids, edge_ends, removed, bulk) "
                    "VALUES (%s, %s, %s, %s, %s) RETURNING seq",
                    (origin, None if bulk else list(self.ids),
                     None if bulk else list(self.edge_ends), list(self.removed), bulk))
        row = cur.fetchone()
        if row is not None and row[0] % 1000 == 0:
            cur.execute("DELETE FROM changes WHERE at < now() - make_interval(hours => %s)",
                        (_RETAIN_HOURS,))


class ChangeLog:
    """The change feed of one engine (``Engine.changes``): the commits of other origins
    since the last poll."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.origin = uuid.uuid4().hex
        self._lock = threading.Lock()
        row = db.rows("SELECT pg_snapshot_xmin(pg_current_snapshot())::text, "
                      "(SELECT max(seq) FROM changes)")
        self._horizon = int(row[0][0])
        self._high: int = int(row[0][1] or 0)
        self._delivered: set[int] = set()

    def poll(self) -> list[ForeignChange]:
        with self._lock:
            rows = self._db.rows(
                "WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin), "
                "o AS (SELECT min(seq) AS low, max(seq) AS high FROM changes) "
                "SELECT s.xmin::text, o.low, o.high, c.seq, c.origin, c.ids, c.edge_ends, "
                "c.removed, c.bulk FROM s CROSS JOIN o LEFT JOIN changes c "
                "ON c.txid >= %s::text::xid8 AND NOT (c.seq = ANY(%s)) ORDER BY c.seq",
                (str(self._horizon), list(self._delivered)))
            horizon, low, high = int(rows[0][0]), rows[0][1], rows[0][2]
            out: list[ForeignChange] = []
            if low is not None and low > self._high + 1:
                # rows this process never read were pruned: refresh everything
                out.append(ForeignChange(bulk=True))
            self._high = max(self._high, int(high or 0))
            for *_, seq, origin, ids, ends, removed, bulk in rows:
                if seq is None:
                    continue
                self._delivered.add(int(seq))
                if origin == self.origin:
                    continue
                out.append(ForeignChange(ids=tuple(ids or ()), edge_ends=tuple(ends or ()),
                                         removed=tuple(removed or ()), bulk=bool(bulk)))
            if horizon > self._horizon:
                self._horizon = horizon
                self._forget_old()
            return out

    def _forget_old(self) -> None:
        """Numbers whose transactions are all behind the horizon are read no more."""
        if not self._delivered:
            return
        rows = self._db.rows("SELECT seq FROM changes WHERE seq = ANY(%s) AND txid >= "
                             "%s::text::xid8", (list(self._delivered), str(self._horizon)))
        self._delivered = {int(r[0]) for r in rows}
