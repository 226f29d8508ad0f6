"""What each commit changed, for the other processes that share the database.

Every write transaction appends one row to ``changes`` (the memories it changed, the
ends of the edges it changed, the memories it erased, the memories whose access counters
alone it changed, or ``bulk``), tagged with the
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

from .._engine import ChangeSet, ForeignChange
from ._db import Cursor, Database

__all__ = ["ChangeLog", "record"]
#: Rows older than this are deleted by the writer that notices (hours).
_RETAIN_HOURS = 24


def record(cur: Cursor, changes: ChangeSet, origin: str) -> None:
    """Append the row of ``changes`` (inside the writing transaction)."""
    if not changes:
        return
    bulk = changes.is_bulk
    cur.execute("INSERT INTO changes (origin, ids, edge_ends, removed, accessed, bulk) "
                "VALUES (%s, %s, %s, %s, %s, %s) RETURNING seq",
                (origin, None if bulk else list(changes.ids),
                 None if bulk else list(changes.edge_ends), list(changes.removed),
                 None if bulk else list(changes.accessed), bulk))
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
                "c.removed, c.accessed, c.bulk FROM s CROSS JOIN o LEFT JOIN changes c "
                "ON c.txid >= %s::text::xid8 AND NOT (c.seq = ANY(%s)) ORDER BY c.seq",
                (str(self._horizon), list(self._delivered)))
            horizon, low, high = int(rows[0][0]), rows[0][1], rows[0][2]
            out: list[ForeignChange] = []
            if low is not None and low > self._high + 1:
                # rows this process never read were pruned: refresh everything
                out.append(ForeignChange(bulk=True))
            self._high = max(self._high, int(high or 0))
            for *_, seq, origin, ids, ends, removed, accessed, bulk in rows:
                if seq is None:
                    continue
                self._delivered.add(int(seq))
                if origin == self.origin:
                    continue
                out.append(ForeignChange(ids=tuple(ids or ()), edge_ends=tuple(ends or ()),
                                         removed=tuple(removed or ()),
                                         accessed=tuple(accessed or ()), bulk=bool(bulk)))
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

    # -- marks: where the history stands, for state saved and read back later ----------
    def mark(self) -> str:
        """Where the history stands now: the oldest transaction still running, the last
        row and its writer (``since`` checks that the row is still the same one)."""
        row = self._db.rows(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, o.high, "
            "(SELECT origin FROM changes WHERE seq = o.high) "
            "FROM (SELECT max(seq) AS high FROM changes) o")[0]
        return f"{row[0]}:{int(row[1] or 0)}:{row[2] or ''}"

    def since(self, mark: str) -> list[ForeignChange] | None:
        """Every change recorded since ``mark`` (every writer's, this one's too), oldest
        first; rows of transactions that were running at the mark come again (applying
        a change twice is harmless). None when the mark is not of this history or rows
        after it were pruned."""
        try:
            horizon, high_text, origin = mark.split(":", 2)
            high = int(high_text)
            int(horizon)
        except ValueError:
            return None
        rows = self._db.rows(
            "WITH o AS (SELECT min(seq) AS low FROM changes) "
            "SELECT o.low, (SELECT origin FROM changes WHERE seq = %s), c.ids, c.edge_ends, "
            "c.removed, c.accessed, c.bulk FROM o LEFT JOIN changes c "
            "ON c.txid >= %s::text::xid8 ORDER BY c.seq", (high, horizon))
        low, at_mark = rows[0][0], rows[0][1]
        if (high and at_mark != origin) or (low is not None and low > high + 1):
            return None
        return [ForeignChange(ids=tuple(ids or ()), edge_ends=tuple(ends or ()),
                              removed=tuple(removed or ()), accessed=tuple(accessed or ()),
                              bulk=bool(bulk))
                for _, _, ids, ends, removed, accessed, bulk in rows if bulk is not None]
