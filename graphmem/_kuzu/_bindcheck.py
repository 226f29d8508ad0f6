"""The third wall in front of user Cypher: Kuzu 0.11.3 crashes the whole process (a
segmentation fault, no exception) when it binds an untyped NULL given to one of some forty
functions: ``label(null)``, ``keys($x)`` with ``x`` None, ``WITH null AS x RETURN id(x)``,
``list_contains(null, 1)``, ``properties(null, 'a')`` and the like (kuzudb/kuzu#5959). Such
a statement is a valid read: neither the guard nor the plan check could stop it, and one
read-only query took down a sidecar that every owner shares.

So a user statement that could hold an untyped NULL (its text names NULL, or a parameter
is None or holds one) is first planned in a child process, on an empty in-memory database
with the store's schema, with the same parameters (``EXPLAIN``; Kuzu binds while it plans).
If the child dies, the statement is refused and never reaches the store; the child is
started again for the next one. Statements without NULL never pay for it; the others pay
the child's start once a process (~0.5 s) and ~1 ms a new statement after that (a verdict is
kept per text and parameter types).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .._errors import InvalidInputError

__all__ = ["BindCheck", "holds_none"]

#: How long one statement may take to plan in the child before it is refused.
_PLAN_SECONDS = 10.0
#: Verdicts kept (keys hold a digest of the text, not the text).
_KEPT = 512
_LENGTH = struct.Struct(">I")
_CHILD = "from graphmem._kuzu._db import serve_bind_checks; serve_bind_checks()"


def holds_none(value: Any, depth: int = 0) -> bool:
    """Whether a parameter value is None or may hold one (in a list, tuple or dict; a
    value nested more than 8 deep counts as holding one).

    >>> holds_none(None), holds_none([1, None]), holds_none({"a": [None]}), holds_none("x")
    (True, True, True, False)
    """
    if value is None:
        return True
    if depth > 8:
        return True  # too deep to look through: planned in the child, as if it held one
    if isinstance(value, list | tuple):
        return any(holds_none(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(holds_none(v, depth + 1) for v in value.values())
    return False


def write_message(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_message(stream: IO[bytes]) -> Any:
    """One message written by ``write_message`` (None at the end of the stream). Only
    the parent writes messages; the child answers with one byte."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    return pickle.loads(stream.read(_LENGTH.unpack(head)[0]))


class BindCheck:
    """Plans user statements in a child process first (see the module); one per process
    and schema, shared by every store and thread."""

    def __init__(self, schema: Sequence[str]) -> None:
        self._schema = list(schema)
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._passed: dict[tuple[str, tuple[tuple[str, str], ...]], None] = {}

    def check(self, query: str, params: Mapping[str, Any]) -> None:
        """Raise ``InvalidInputError`` when planning ``query`` with ``params`` crashes
        Kuzu (or takes more than ``_PLAN_SECONDS``); nothing of the store is touched."""
        key = (hashlib.sha256(query.encode()).hexdigest(),
               tuple(sorted((name, _shape(value)) for name, value in params.items())))
        with self._lock:
            if key in self._passed:
                return
            verdict = self._ask(query, dict(params))
            if verdict == "crashed":
                raise InvalidInputError(
                    "Kuzu crashes while planning this query (0.11.3 fails on an untyped "
                    "NULL given to a function such as label(), id(), keys(), properties() "
                    "or list_contains(); give the value a type, e.g. CAST($x AS STRING), "
                    "or test it with IS NULL first); it was not run", field="query")
            if verdict == "slow":
                raise InvalidInputError(
                    f"Kuzu took more than {_PLAN_SECONDS:g} s to plan this query; it was "
                    "not run", field="query")
            if len(self._passed) >= _KEPT:
                self._passed.pop(next(iter(self._passed)))
            self._passed[key] = None

    def _ask(self, query: str, params: dict[str, Any]) -> str:
        child = self._child if self._child is not None and self._child.poll() is None \
            else self._start()
        assert child.stdin is not None and child.stdout is not None
        try:
            write_message(child.stdin, (query, params))
            ready, _, _ = select.select([child.stdout], [], [], _PLAN_SECONDS)
            answer = os.read(child.stdout.fileno(), 1) if ready else None
        except (BrokenPipeError, OSError):
            answer = b""
        if answer == b"k":
            return "ok"
        self._stop()
        return "slow" if answer is None else "crashed"

    def _start(self) -> subprocess.Popen[bytes]:
        self._stop()
        package = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join([package, *filter(None, [os.environ.get("PYTHONPATH")])])
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path})
        assert child.stdin is not None
        write_message(child.stdin, self._schema)
        self._child = child
        return child

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        with self._lock:
            self._stop()


def _shape(value: Any, depth: int = 0) -> str:
    """What of a parameter's value the binder sees: its type, and where it holds None
    (below 8 levels, a digest of the whole value: its verdict is its own)."""
    if value is None:
        return "None"
    if depth > 8:
        return "deep:" + hashlib.sha256(pickle.dumps(value)).hexdigest()
    if isinstance(value, list | tuple):
        return "[" + ",".join(sorted({_shape(v, depth + 1) for v in value})) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_shape(v, depth + 1)}"
                              for k, v in sorted(value.items())) + "}"
    return type(value).__name__
