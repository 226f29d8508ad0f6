"""Crash recovery for a Kuzu file whose write-ahead log ends in a torn record.

Kuzu 0.11.3 replays its WAL when a database opens. If the writing process was killed
(``kill -9``, OOM, power to the process) while a record was half written, the replay
can crash the opening process with a segmentation fault instead of discarding the
torn tail (measured here: 12 of 60 kills during ``run_lifecycle``). A
crash inside ``kuzu.Database()`` cannot be caught, so:

* after every commit the adapter notes the WAL's length in ``graph.kuzu.walmark``
  (one ``pwrite`` of 8 bytes): the WAL up to that length ends with a complete commit;
* when a store opens and a non-empty WAL is present (the last writer did not close
  it), the open is first tried in a child process;
* if the child dies from a signal, the WAL is cut back to the mark. Everything cut is
  the transaction that was being written when the writer died, which never committed;
  the original WAL is kept beside the file as ``graph.kuzu.wal.torn-<time>``.

This module has no Kuzu import of its own: the child process imports it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .._errors import StoreError

__all__ = ["WalMark", "recover"]

_PROBE = (
    "import sys, kuzu\n"
    "db = kuzu.Database(sys.argv[1], buffer_pool_size=64 * 1024 * 1024, read_only=True)\n"
    "kuzu.Connection(db).execute('RETURN 1')\n"
    "db.close()\n"
)


class WalMark:
    """The WAL length after the last commit this process made, kept in a side file."""

    def __init__(self, target: str) -> None:
        self.wal = target + ".wal"
        self.path = target + ".walmark"
        self._fd: int | None = None
        #: the WAL's length at the last ``record()``
        self.size = 0

    def record(self) -> None:
        """Note the WAL's current length (call after each commit)."""
        try:
            size = os.stat(self.wal).st_size
        except FileNotFoundError:
            size = 0
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(self._fd, size.to_bytes(8, "little"), 0)
        self.size = size

    def read(self) -> int | None:
        try:
            data = Path(self.path).read_bytes()
        except FileNotFoundError:
            return None
        return int.from_bytes(data[:8], "little") if len(data) >= 8 else None

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _probe(target: str) -> int:
    """Open the database in a child process; its return code (negative: a signal).

    The child opens it read-only: that replays the WAL too, and leaves it as it is.
    Opened for writing, the child checkpointed at its close, and a checkpoint of a
    replayed log can write new rows' lists wrong (``_db``'s notes) before the real open
    could check them."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, target],
        capture_output=True, text=True, timeout=600, check=False,
    )
    return result.returncode


def recover(target: str, *, read_only: bool) -> str | None:
    """Make ``target`` safe to open; returns a note when a torn WAL tail was cut off.

    Does nothing (no child process) unless a non-empty WAL is present.
    """
    mark = WalMark(target)
    wal = Path(mark.wal)
    try:
        if wal.stat().st_size == 0:
            return None
    except FileNotFoundError:
        return None
    if _probe(target) >= 0:
        return None  # the WAL replays (an error is reported by the real open)
    store = Path(target).parent
    if read_only:
        raise StoreError(
            f"database {store} was not closed cleanly and its write-ahead log ends in a "
            "torn record; open it once read-write to recover it"
        )
    length = mark.read()
    size = wal.stat().st_size
    if length is None or length > size:
        raise StoreError(
            f"database {store} was not closed cleanly and its write-ahead log cannot be "
            "replayed; restore it from a backup (`graphmem --db NEW restore BACKUP_DIR`)"
        )
    kept = wal.with_name(f"{wal.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}")
    shutil.copy2(wal, kept)
    with contextlib.suppress(FileNotFoundError):
        Path(target + ".shadow").unlink()
    if length == 0:
        wal.unlink()
    else:
        os.truncate(wal, length)
    if _probe(target) < 0:
        raise StoreError(
            f"database {store} could not be recovered from its write-ahead log (kept as "
            f"{kept.name}); restore it from a backup (`graphmem --db NEW restore BACKUP_DIR`)"
        )
    return (f"recovered {store}: cut {size - length} bytes of an uncommitted transaction "
            f"from the write-ahead log (the original is kept as {kept.name})")
