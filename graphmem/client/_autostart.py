"""Find the sidecar of a database directory, or start one: how several processes share one
Kuzu store (which lets one process write it) without anyone running ``graphmem serve``.

The sidecar started here is a detached ``graphmem serve --auto`` (its own session, so it
outlives the process that started it): it opens the store, writes ``<db>.sidecar.json``
with a fresh secret only the store's user can read, logs to ``<db>.sidecar.log``, and
exits once nobody has sent it a request for ``GRAPHMEM_SIDECAR_IDLE_S`` (600 s). Two
processes that start one at once each spawn one; the store's lock lets one of them open
it, the other exits, and both callers find the winner's file. A store held by a process
that does not serve it (a ``MemoryStore`` in a notebook, ``graphmem mcp --embedded``) is
waited for a while, since a command holds it for a second or two, then reported.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .._discovery import Discovery, discover
from .._errors import StoreError, StoreLockedError

__all__ = ["LOCKED_EXIT", "find_or_start", "sidecar_log"]

#: The exit status of ``serve --auto`` when another process holds the store (EX_TEMPFAIL).
LOCKED_EXIT = 75
#: Starts that may fail for another reason before the failure is reported.
_ATTEMPTS = 3


def sidecar_log(db: str | os.PathLike[str]) -> Path:
    """``<db>.sidecar.log``: what a started sidecar printed (its errors, its exit)."""
    path = Path(db)
    return path.with_name(path.name + ".sidecar.log")


def find_or_start(db: str | os.PathLike[str], *, embedder: str | None = None,
                  timeout_s: float = 60.0) -> tuple[Discovery, bool]:
    """The sidecar serving the store at ``db`` (a directory), started when there is none:
    ``(discovery, started)``, ``started`` telling whether this call started it.

    Raises ``StoreLockedError`` when another process holds the store without serving it
    for ``timeout_s``, ``StoreError`` when a started sidecar failed (with its log)."""
    path = Path(db).absolute()
    deadline = time.monotonic() + timeout_s
    child: subprocess.Popen[bytes] | None = None
    spawned_at = float("-inf")
    failures = 0  # starts that failed for another reason than the lock
    while True:
        found = _answering(path)
        if found is not None:
            return found, child is not None and found.pid == child.pid
        if child is not None and child.poll() is not None and child.returncode != LOCKED_EXIT:
            # Once may be a store another process is creating at that moment; three times
            # is the store or the installation.
            failures, child = failures + 1, None
            if failures >= _ATTEMPTS:
                raise StoreError(f"the graphmem sidecar started for {path} failed {failures} "
                                 f"times: {_tail(sidecar_log(path))}")
        idle = child is None or child.poll() is not None
        if idle and time.monotonic() - spawned_at >= 1.0:  # a holder that is not serving:
            if time.monotonic() >= deadline:                # try again each second
                raise StoreLockedError(
                    f"database {path} is in use by another process that does not serve it "
                    "(a MemoryStore in a notebook or script, `graphmem mcp --embedded`, a "
                    "long command): close it there, or open it there with "
                    f"graphmem.connect({str(path)!r}) so that others can share it")
            child, spawned_at = _spawn(path, embedder), time.monotonic()
        time.sleep(0.1)


def _answering(path: Path) -> Discovery | None:
    """The discovered sidecar, if its process listens (a file outlives a kill -9)."""
    found = discover(path)
    if found is None:
        return None
    import httpx

    try:
        with httpx.Client(timeout=2.0) as http:
            http.get(f"{found.url}/healthz")
    except httpx.HTTPError:
        return None
    return found


def _spawn(path: Path, embedder: str | None) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "graphmem", "--db", str(path)]
    if embedder:
        command += ["--embedder", embedder]
    command += ["serve", "--auto"]
    log = sidecar_log(path)
    with contextlib.suppress(OSError):  # keep the log short: the last start's lines
        if log.stat().st_size > 1 << 20:
            log.unlink()
    with open(log, "ab") as out:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 start_new_session=True, close_fds=True)
    # Reap it when it exits while this process lives: a zombie's pid looks alive.
    threading.Thread(target=child.wait, name="graphmem-sidecar-reaper", daemon=True).start()
    return child


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return f"(no log at {log})"
    return " | ".join(text[-lines:]) + f" (log: {log})"
