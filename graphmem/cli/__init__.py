"""The ``graphmem`` command line: thin commands over ``MemoryStore``."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from . import (  # noqa: F401
    _analyst,
    _backup,
    _core,
    _eval,
    _faces,
    _ingest,
    _learn,
    _lifecycle,
    _recall,
    _ui,
)
from ._app import add_global_options, cli

add_global_options(cli)  # --db, --json ... after the subcommand too

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``graphmem`` console script."""
    try:
        cli(prog_name="graphmem")
    except SystemExit as done:
        _exit_now(done.code)
        raise


def _exit_now(code: object) -> None:
    """End the process with ``code`` once the command is done (its store closed) without
    tearing the interpreter down: freeing a loaded recall index object by object is work
    a one-shot command never uses (0.3-0.4 s at 100k memories). The exit handlers run
    and the output is flushed first; while a thread other than a daemon still runs, or
    the output cannot be flushed, Python exits as usual."""
    if not isinstance(code, int) and code is not None:
        return  # a message to print: sys.exit's own way
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        return
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe ...: let the interpreter report it as it does
        return
    os._exit(code or 0)
