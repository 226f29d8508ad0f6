"""Writing recall's access records in the background, coalesced into one transaction.

A recall updates the in-process index at once (the next query sees the new activation)
and hands the new counters here; a writer thread commits everything pending in one
batched write. ``flush()`` waits for what was submitted before it; the store flushes
before any read of a memory and on close, so callers always read their own accesses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

__all__ = ["AccessWriter"]

AccessRow = tuple[int, datetime, tuple[datetime, ...]]


class AccessWriter:
    def __init__(self, write: Callable[[Mapping[str, AccessRow]], None], *,
                 window: float = 0.25) -> None:
        self._write = write
        self._window = window
        self._flushing = threading.Event()
        self._pending: dict[str, AccessRow] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        #: submissions so far, and how many of them are written: a flush waits for the
        #: ones before it alone (waiting for none to be pending, a reader beside a busy
        #: recall loop waited for the 30 s timeout)
        self._submitted = 0
        self._written = 0
        self._done = threading.Condition(self._lock)
        self._stop = False
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def submit(self, rows: Mapping[str, AccessRow]) -> None:
        with self._lock:
            self._pending.update(rows)
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="graphmem-access",
                                                daemon=True)
                self._thread.start()
        self._wake.set()

    def discard(self, memory_id: str) -> None:
        with self._lock:
            self._pending.pop(memory_id, None)

    @property
    def pending(self) -> bool:
        """Whether a submission is not written yet (read before every read of a memory:
        two counters, no lock)."""
        return self._written < self._submitted

    def _run(self) -> None:
        while True:
            self._wake.wait(timeout=0.5)
            self._wake.clear()
            # Coalesce: a busy agent's accesses go out together, at most every ``window``
            # seconds, instead of one commit competing with each recall for the CPU.
            if not self._flushing.is_set() and not self._stop:
                self._flushing.wait(self._window)
            with self._lock:
                batch, self._pending = self._pending, {}
                upto = self._submitted
            if batch:
                try:
                    self._write(batch)
                except BaseException as exc:  # reported by flush()
                    self.error = exc
            with self._lock:
                self._written = upto
                self._done.notify_all()
                stop = self._stop and not self._pending
            if stop:
                return

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every submitted access is committed."""
        if self._thread is not None:
            with self._lock:
                target = self._submitted
            self._flushing.set()
            self._wake.set()
            with self._done:
                self._done.wait_for(lambda: self._written >= target, timeout)
            self._flushing.clear()

    def close(self) -> Any:
        with self._lock:
            self._stop = True
        if self._thread is not None:
            self._flushing.set()
            self._wake.set()
            self._thread.join(timeout=30)
            self._thread = None
        return self.error
