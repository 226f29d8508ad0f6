"""What every write transaction leaves beside its own writes, in the same transaction: a
row of the change ring saying what it changed, and the vectors it stored (``_vectorlog``).

The ring (table ``Change``, ``SLOTS`` rows reused in turn) is what a recall index saved
beside the store catches up from when the store is opened again, by this process or
another (``changes_since``): each row holds the transaction's number, a random tag, and
what it changed in one JSON text (the ids, or ``bulk``). A transaction whose writer does
not declare what it changed (user Cypher) is recorded as bulk. Only one process writes a
Kuzu store at a time, so the next number is kept here.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._engine import ChangeSet, ForeignChange
from .._errors import GraphmemError
from ._db import Database, Row, Tx
from ._vectorlog import META_KEY, VectorLog

__all__ = ["NEW_ROW", "ChangeJournal", "ring_body"]

_SET_LOG = "MERGE (m:Meta {key: $k}) SET m.value = $v"
_RING_SETS = "SET c.seq = $seq, c.tag = $tag, c.body = $body"
#: A ring row into a slot that holds one (MATCH: it says whether it found it), into one
#: that does not yet (CREATE), and into one that may or may not (MERGE). At 100k memories
#: a field write's transaction took 2.7 and 2.5 ms of CPU with the first two, 3.0-3.2 ms
#: with MERGE (measured, interleaved, when a row held four lists: schema v9).
_SET_ROW = "MATCH (c:Change {slot: $slot}) " + _RING_SETS + " RETURN c.slot"
NEW_ROW = "CREATE (c:Change {slot: $slot, seq: $seq, tag: $tag, body: $body})"
_ANY_ROW = "MERGE (c:Change {slot: $slot}) " + _RING_SETS
_SLOTS = "MATCH (c:Change) WHERE c.slot >= $first RETURN c.slot"
_TAG = "MATCH (c:Change {slot: $slot}) RETURN c.seq, c.tag"
#: the lists of a ring row's text (JSON; an empty one is left out)
_LISTS = ("ids", "edge_ends", "removed", "accessed")


def ring_body(changes: ChangeSet) -> str:
    """What a ring row says ``changes`` changed: one JSON text of the change a reader gets
    (``ChangeSet.change``), its empty lists left out."""
    change = changes.change()
    body: dict[str, object] = {"bulk": True} if change.bulk else {}
    body.update({name: list(ids) for name in _LISTS if (ids := getattr(change, name))})
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _read_body(text: str | None) -> ForeignChange:
    """The change a ring row's text says (``ring_body``); a text not so made is bulk."""
    try:
        body = json.loads(text or "")
        lists = {name: tuple(str(i) for i in body.get(name) or ()) for name in _LISTS}
        return ForeignChange(**lists, bulk=bool(body.get("bulk")))
    except (ValueError, TypeError, AttributeError):
        return ForeignChange(bulk=True)


class ChangeJournal:
    """The change ring and the vector log of one Kuzu store (``Database.journal``)."""

    #: rows of the ring: the write transactions a saved recall index can catch up on
    SLOTS = 4096

    def __init__(self, db: Database, directory: str | None, meta: Mapping[str, str], *,
                 read_only: bool) -> None:
        self._db = db
        self.vectors = VectorLog(directory, meta.get(META_KEY))
        last = db.read("MATCH (c:Change) RETURN c.seq, c.tag ORDER BY c.seq DESC LIMIT 1")
        self.seq, self.tag = (int(last[0][0]), str(last[0][1])) if last else (0, "")
        #: what the open transaction recorded: log value, number, tag
        self._pending: tuple[str | None, int, str] | None = None
        #: the ring's slots that hold a row (read at the first write, kept as rows are
        #: created; only this process writes the ring), and the one the open
        #: transaction created
        self._slots: set[int] | None = None
        self._new_slot: int | None = None
        if not read_only:
            self.vectors.cut()

    # -- the journal of ``Database.write`` ----------------------------------------------
    def before_commit(self, tx: Tx) -> None:
        changes: ChangeSet | None = tx.changes
        if changes is None:  # undeclared: anything, the vectors too, may have changed
            changes = ChangeSet(bulk=True)
            value = "" if self.vectors.trusted else None
        elif tx.vector_log is not None:  # blocks appended already (``stage``)
            value = self.vectors.append(tx.vectors, at=tx.vector_log) if tx.vector_log \
                else ""
            value = tx.vector_log if value is None else value
        else:
            value = self.vectors.append(tx.vectors)
        if value is not None:
            tx.run(_SET_LOG, {"k": META_KEY, "v": value})
        seq, tag = self.seq, self.tag
        self._new_slot = None
        if changes:
            seq, tag = seq + 1, secrets.token_hex(8)
            self._write_row(tx, seq, tag, changes)
        self._pending = (value, seq, tag)

    def _write_row(self, tx: Tx, seq: int, tag: str, changes: ChangeSet) -> None:
        """The ring row of transaction ``seq``, in its slot."""
        slot = seq % self.SLOTS
        params = {"slot": slot, "seq": seq, "tag": tag, "body": ring_body(changes)}
        if self._slots is None:
            self._slots = {int(r[0]) for r in tx.run(_SLOTS, {"first": 0})}
        if slot not in self._slots:  # the ring's first lap
            tx.run(NEW_ROW, params)
            self._new_slot = slot
        elif not tx.run(_SET_ROW, params):
            tx.run(_ANY_ROW, params)  # a row that went missing

    def stood(self, read: Callable[[str, Mapping[str, Any]], list[Row]]) -> bool:
        """Whether the open transaction, whose COMMIT raised, was committed all the same:
        its ring row is in the store (``read`` runs a statement outside it). A transaction
        that wrote no ring row cannot be told: False."""
        if self._pending is None or self._pending[1] == self.seq:
            return False
        _, seq, tag = self._pending
        try:
            rows = read(_TAG, {"slot": seq % self.SLOTS})
        except GraphmemError:
            return False
        return bool(rows) and rows[0][0] == seq and rows[0][1] == tag

    def after_commit(self, tx: Tx, committed: bool) -> None:
        pending, self._pending = self._pending, None
        new_slot, self._new_slot = self._new_slot, None
        if committed and pending is not None:
            value, self.seq, self.tag = pending
            self.vectors.finished(value)
            if new_slot is not None and self._slots is not None:
                self._slots.add(new_slot)
        elif not committed:
            self._slots = None  # read again: what failed may have been about the ring

    def stage(self, tx: Tx, ids: Sequence[str], matrix: np.ndarray,
              present: np.ndarray) -> None:
        """Append the vectors of ``ids`` to the log now, in the open transaction ``tx``
        (a bulk load: its vectors are not held until the commit)."""
        if tx.vector_log == "":  # the log is no longer trusted: it is emptied at commit
            return
        value = self.vectors.append_rows(ids, matrix, present, at=tx.vector_log)
        if value is not None:
            tx.vector_log = value

    def set_log(self, value: str) -> None:
        """Commit a rewritten vector log (``VectorLog.rewrite``): no memory changed."""
        with self._db.write() as tx:
            tx.changes = ChangeSet()
            tx.run(_SET_LOG, {"k": META_KEY, "v": value})
        self.vectors.finished(value)

    # -- reading the ring --------------------------------------------------------------
    def mark(self) -> str:
        return f"{self.seq}:{self.tag}"

    def since(self, mark: str) -> list[ForeignChange] | None:
        """The changes after ``mark``, oldest first; None when the ring no longer holds
        all of them, or the mark is not of this store's history."""
        seq_text, _, tag = mark.partition(":")
        try:
            seq = int(seq_text)
        except ValueError:
            return None
        if seq > self.seq or self.seq - seq >= self.SLOTS:
            return None
        rows = self._db.read("MATCH (c:Change) WHERE c.seq >= $s "
                             "RETURN c.seq, c.tag, c.body ORDER BY c.seq", {"s": seq})
        if seq:
            if not rows or rows[0][0] != seq or rows[0][1] != tag:
                return None
            rows = rows[1:]
        if [r[0] for r in rows] != list(range(seq + 1, self.seq + 1)):
            return None
        return [_read_body(body) for _, _, body in rows]
