"""The one module that imports kuzu: connections, transactions, parameter checks, error mapping.

Kuzu 0.11.3 traps handled here (each reproduced on this machine):

* a ``$param`` used but not supplied is silently dropped from ``WHERE`` (a ``DELETE``
  then deletes every row): every query's parameters are checked before it runs;
* a second write transaction fails at once instead of waiting: writes take a lock;
* a failed statement ends its transaction silently, and reusing a connection after a
  failed ``BEGIN`` crashed the process: the write connection is replaced after errors;
* aware datetimes lose their offset instead of being converted: parameters are
  converted to naive UTC here;
* the default buffer pool is ~80% of RAM: it is always set explicitly;
* a statement runs as long as it takes (a legal five-way cross product over 200
  memories: ~35 min): user Cypher runs under Kuzu's query timeout, which ends its
  transaction (nothing of a stopped write is kept). Kuzu checks it between batches of
  rows: scans, joins and walks stop within 0.1 s of the limit (measured), but one
  expression that builds a huge value (``repeat('x', 500000000)``: 49 s, 3 GB) runs on
  until it is built;
* replaying a WAL whose last record was torn by ``kill -9`` can segfault the opening
  process: ``_recovery`` probes such opens in a child and cuts the torn tail;
* the automatic checkpoint at a commit waits for every open read transaction and fails
  the COMMIT after a timeout when readers keep coming (8 concurrent clients did it):
  automatic checkpoints are off, and the adapter checkpoints when the WAL passes
  ``CHECKPOINT_BYTES``, after letting running reads finish and holding new ones;
* a rolled-back write transaction leaves the rows it updated broken for the rest of the
  process: a later update of such a row fails ("Write-write conflict of updating the
  same row") or crashes the process (a ``SET`` then a failed ``CREATE`` in one
  transaction, or a plain ``ROLLBACK`` after a ``SET``: in 39-79 of 100 tries, measured).
  The database opened again is sound (the rolled-back change gone, the rows writable):
  after a write transaction that ran a statement is rolled back, the file is opened
  again (``_open_again``; an in-memory database is copied into a new one);
* the first checkpoint after ~400 text edits (2048 rows) of a 100k-memory store loaded
  in bulk found the 1 GB buffer pool full (3 builds of 3, ``eval/bench_backup.py``'s
  store), and the same CHECKPOINT again on a new connection went through (0.9 s): a
  checkpoint refused so is tried once more before the error names the setting; one
  that fails after a commit (that commit is durable in the WAL) fails nothing but
  itself: a warning, and it is tried again ``CHECKPOINT_RETRY_ROWS`` rows later and at
  close. When both tries found the pool full, the next CHECKPOINT in the process
  crashed it (``bench_writes``' probe at 100k memories, 1 GB pool, 2 runs of 2), and
  with the file opened again after the failure (Kuzu checkpoints it at close: 2.6 s
  there) the same run went through: the file is opened again after such a failure;
* a COMMIT after COPY checkpoints, and when that checkpoint finds the buffer pool full
  the COMMIT raises with the transaction committed (a second bulk add of 1,000 memories to
  a 100k-memory store, 1 GB pool); a read on the same database then crashed the process.
  After such a COMMIT the file is opened again, and the change ring says whether the
  transaction stood (``Database._stood``): the error then says so;
* a checkpoint can write the lists of rows created since the last one wrong (another
  row's list, or part of one) when a list column of the same node table was also set
  on a row in that time (20 rows holding [2000] to [2019], row 3's set to [], a new row
  with [2030], then CHECKPOINT: the new row reads [2000]; in random mixes the values
  lost were always new rows', and an in-memory database lost none). Kuzu's own
  checkpoint at close does it too, and WAL replay holds the right values until the next
  checkpoint. The adapter keeps, until each checkpoint, which rows of the tables the
  engine names (``watch_lists``) were created and whether a list column was set; when
  both happened, it reads those rows' lists before the checkpoint and after it, and sets
  again what came out different (``_checked``; ``tests/test_kuzu_lists.py``: each of its
  random mixes loses values with the check switched off, none with it). A table in
  which a user Cypher write created rows (its row count grew: user Cypher deletes
  nothing) is compared whole, and every table after a replayed WAL;
* every row a statement writes is held in memory (outside the buffer pool's pages) until
  a checkpoint, far more than its WAL record: at 1M memories, recording one memory's
  access held ~24 KB for ~650 bytes of WAL, so 16 MB of WAL was ~0.6 GB of memory. The
  adapter checkpoints after ``CHECKPOINT_ROWS`` rows written row by row as well.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import kuzu
import numpy as np
import pyarrow as pa

from .._engine_rules import key_taken
from .._errors import (
    GraphmemError,
    InvalidInputError,
    ReadOnlyStoreError,
    StoreError,
    StoreLockedError,
)
from .._sync import Gate
from ._guard import holds_large_constant
from ._lexer import parameter_names
from ._recovery import WalMark, recover
from ._user_rows import read_user_rows

__all__ = ["Database", "Journal", "PlanVetting", "Tx", "check_parameters", "query_parameters",
           "serve_bind_checks"]

Row = list[Any]
#: Kuzu's words when its buffer pool is full (lower case)
_POOL_FULL = "buffer pool is full"


def _pool_full(exc: BaseException | None) -> bool:
    """Whether Kuzu's error ``exc`` says that its buffer pool is full."""
    return _POOL_FULL in str(exc).lower()


#: Lists read around a checkpoint: by key, or a whole table (Arrow, sorted by key).
_Lists: TypeAlias = "dict[Any, tuple[Any, ...]] | pa.Table"


class PlanVetting(Protocol):
    """What user Cypher must pass between planning and running (``_plan.PlanCheck``)."""

    @property
    def key(self) -> Hashable:
        """The statement and mode its verdict holds for (with the parameters' types)."""

    def check_text(self) -> None:
        """Raise unless the text may be planned at all."""

    def failed(self, message: str) -> GraphmemError | None:
        """The error for a statement Kuzu could not plan (None: ``map_error``'s)."""

    def check(self, plan: str) -> None:
        """Raise unless Kuzu's physical plan (``EXPLAIN``'s text) may run."""


def query_parameters(query: str) -> set[str]:
    """Names of the ``$parameters`` a Cypher query uses, read as Kuzu reads it (``_lexer``:
    strings, backquoted names and comments hold none; ``$`name``` and ``$1`` are ones)."""
    return set(parameter_names(query))


def check_parameters(query: str, params: Mapping[str, Any]) -> None:
    used = query_parameters(query)
    missing = sorted(used - set(params))
    if missing:
        raise InvalidInputError(
            "query parameter(s) without a value: " + ", ".join("$" + m for m in missing),
            field=missing[0],
        )
    unused = sorted(set(params) - used)
    if unused:
        raise InvalidInputError(
            "parameter(s) not used by the query: " + ", ".join(unused), field=unused[0]
        )
    for name, value in params.items():
        if _nested_deeper(value, PARAMETER_DEPTH):
            raise InvalidInputError(f"parameter {name} is nested more than "
                                    f"{PARAMETER_DEPTH} levels deep", field=name)
        try:
            _shape(value)
        except _Unbindable as exc:
            raise InvalidInputError(f"parameter ${name}: {exc}", field=name) from None


class _Unbindable(ValueError):
    """A parameter value the database cannot take (it said so with a Python traceback)."""


_INT64 = range(-(2 ** 63), 2 ** 63)


def _shape(value: Any) -> Any:
    """The database type a parameter value binds as ("number", ("list", ...), a map's
    shape by key; None for null), or ``_Unbindable``: an integer beyond 64 bits, a list
    whose items (or its lists' items, or its maps' values under one key) are of
    different types, a list of maps of other keys.

    >>> _shape([1, 2.5, None]), _shape([{"a": 1, "b": None}, {"a": 2, "b": "x"}])
    (('list', 'number'), ('list', ('map', {'a': 'number', 'b': 'string'})))
    >>> _shape([1, "a"])
    Traceback (most recent call last):
    ...
    graphmem._kuzu._db._Unbindable: a list holds both a number and a string: one type per list
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        if value not in _INT64:
            raise _Unbindable(f"{value} is beyond a 64-bit integer (give it as a float or a "
                              "string)")
        return "number"
    if isinstance(value, np.generic):
        raise _Unbindable(f"a numpy {type(value).__name__} is not a value the database takes: "
                          "give Python's own (int(x), float(x), str(x))")
    if isinstance(value, float | Decimal):
        return "number"
    if isinstance(value, datetime):
        return "timestamp"
    if isinstance(value, date):
        return "date"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        shape = None
        for item in value:
            shape = _unify(shape, _shape(item))
        return ("list", shape)
    if isinstance(value, dict):
        return ("map", {str(k): _shape(v) for k, v in sorted(value.items(), key=_key_of)})
    return _OTHER  # bytes, a UUID ...: whatever the database makes of it


#: The shape of a value whose type this check leaves to the database.
_OTHER = ("other", None)


def _key_of(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _untyped(shape: Any) -> bool:
    """Whether a shape holds a part of no type: null, an empty list (or one of nulls)."""
    if shape is None:
        return True
    if isinstance(shape, tuple) and shape[0] == "list":
        return _untyped(shape[1])
    if isinstance(shape, tuple) and shape[0] == "map":
        return any(_untyped(v) for v in shape[1].values())
    return False


def _maps_in_one_order(value: Any) -> Any:
    """A parameter value whose lists hold their maps with the keys in the first one's
    order: Kuzu binds a list of maps by the first one's order and reads the others' values
    by place, so ``[{"a": 1, "b": 2}, {"b": 3, "a": 4}]`` came back as ``[{"a": 1, "b": 2},
    {"a": 3, "b": 4}]``. A map outside a list keeps its order (a query may compare it with
    a map it spells)."""
    if isinstance(value, dict):
        return {k: _maps_in_one_order(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_maps_in_one_order(v) for v in value]
        first = next((v for v in items if isinstance(v, dict)), None)
        if first is None:
            return items
        return [{k: v[k] for k in first if k in v} | v if isinstance(v, dict) else v
                for v in items]
    return value


def _unify(a: Any, b: Any) -> Any:
    """The one type of a list that holds items of shapes ``a`` and ``b``."""
    if a is None or a in (b, _OTHER):
        return b
    if b is None or b == _OTHER:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        if a[0] == "list":
            return ("list", _unify(a[1], b[1]))
        if list(a[1]) != list(b[1]):
            raise _Unbindable(f"a list holds maps of other keys ({', '.join(a[1])} and "
                              f"{', '.join(b[1])}): one set of keys per list")
        return ("map", {k: _unify(a[1][k], b[1][k]) for k in a[1]})
    raise _Unbindable(f"a list holds both {_said(a)} and {_said(b)}: one type per list")


def _said(shape: Any) -> str:
    return f"a {shape[0] if isinstance(shape, tuple) else shape}"


#: The deepest a parameter's lists and maps may nest (deeper ones failed in Python's own
#: recursion, as a 500 from the sidecar).
PARAMETER_DEPTH = 32


def _nested_deeper(value: Any, most: int) -> bool:
    """Whether ``value``'s lists, tuples and dicts nest more than ``most`` levels (read
    without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            if depth >= most:
                return True
            stack.extend((v, depth + 1) for v in item if isinstance(v, list | tuple | dict))
    return False


_SCALARS = (str, int, float, bool, type(None))
#: Write statements kept planned at most (``Database._write_statement``).
_WRITE_PLANS = 256
#: Rows whose lists are read one primary-key lookup each around a checkpoint; more are
#: read by one join when the table has fewer than ``_LOOKUPS_PER_ROW`` rows a key: a
#: lookup took ~0.3 ms, the join ~1.7 us a row of the table (2,000 keys of 1M rows: 0.58
#: s against 1.75 s; of 10k rows the join took ~10 ms).
_KEYED_READS = 64
_LOOKUPS_PER_ROW = 200
_TRANSACTION = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK|CHECKPOINT)\b", re.IGNORECASE)


def _to_kuzu(value: Any) -> Any:
    """Convert one parameter value: aware datetimes to naive UTC, recursively.

    Hot path (every cell of a bulk write): scalars return first.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value
    if isinstance(value, dict):
        return {k: _to_kuzu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_kuzu(v) for v in value]
    return value


def _write_synced(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def _finish_rebuild(work: Path, target: str) -> None:
    """What a rebuild (``Database.rebuild``) that stopped midway left: the old file's log,
    moved aside before the new file took the old one's place, goes back when the old
    file is still there (the new one never came), and is dropped when the new one
    came (its data holds what the log did); then the rebuild's work directory goes."""
    kept = work / "old.wal"
    if kept.exists():
        try:
            dev, ino = (int(v) for v in (work / "fresh.id").read_text(encoding="utf-8").split())
            found = os.stat(target)
            swapped = (found.st_dev, found.st_ino) == (dev, ino)
        except (OSError, ValueError):
            swapped = False
        if not swapped:
            os.replace(kept, target + ".wal")
    shutil.rmtree(work, ignore_errors=True)


def _bind(params: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _to_kuzu(value) for name, value in params.items()}


def map_error(exc: BaseException, *, path: str, user: bool = False) -> GraphmemError:
    """Translate one of Kuzu's bare ``RuntimeError`` into graphmem's own exceptions.

    ``user`` marks a query the caller wrote: its syntax errors are the caller's to fix.
    """
    message = str(exc).split("\nSee the docs")[0].strip()
    lowered = message.lower()
    if "could not set lock" in lowered:
        return StoreLockedError(
            f"database {path} is in use by another process (Kuzu allows one writer "
            "process)"
        )
    if "duplicated primary key" in lowered:
        return key_taken(message.rsplit("value", 1)[-1].split(",")[0].strip())
    if "read-only transaction" in lowered or ("read only" in lowered and "write" in lowered):
        reason = "this query writes; ad-hoc Cypher is read-only"
        return ReadOnlyStoreError(f"{reason} unless you ask for write (write=True, or "
                                  "--write on the command line)", reason=reason)
    if "cannot execute write operations in a read-only database" in lowered:
        return ReadOnlyStoreError(f"database {path} was opened read-only")
    if user and lowered.startswith(("parser exception", "binder exception", "catalog exception")):
        return InvalidInputError(f"Cypher error: {message}", field="query")
    if "permission denied" in lowered or "read-only file system" in lowered:
        return StoreError(f"cannot write to {path}: {message}; check the directory's permissions")
    if _POOL_FULL in lowered:
        return StoreError(
            "the database needs more memory than its buffer pool; raise "
            "GRAPHMEM_BUFFER_POOL_MB (Settings.buffer_pool_mb) and retry"
        )
    if "no space left" in lowered or "cannot write to file" in lowered:
        return StoreError(f"cannot write to {path}: the disk is full (or a file size limit "
                          "was reached); free space and retry: nothing of this write was "
                          "committed")
    return StoreError(f"database error: {message}")


class Journal(Protocol):
    """What the engine writes with every write transaction (``_journal``): called with
    the open transaction before its COMMIT, then told whether the COMMIT went through."""

    def before_commit(self, tx: Tx) -> None: ...
    def after_commit(self, tx: Tx, committed: bool) -> None: ...
    def stood(self, read: Callable[[str, Mapping[str, Any]], list[Row]]) -> bool:
        """Whether the transaction whose COMMIT raised was committed all the same (``read``
        runs a statement outside it); False when that cannot be told."""
        ...


class Tx:
    """An open write transaction; statements run in it, ``Database.write()`` commits."""

    def __init__(self, db: Database, conn: Any) -> None:
        self._db = db
        self._conn = conn
        #: a COPY ran: Kuzu checkpoints when this transaction commits
        self.copied = False
        #: statements run in it (one rolled back after any is followed by a reopen)
        self.statements = 0
        #: what the transaction changed, as its writer declares it (``ChangeSet``; None:
        #: undeclared, anything may have changed), and the vectors it stored, by memory
        #: id (None: the memory has none now), for the ``Journal``
        self.changes: Any = None
        self.vectors: dict[str, Any] = {}
        #: the vector log's ``Meta`` value past the blocks this transaction appended
        #: already (``ChangeJournal.stage``; "": no longer trusted), or None
        self.vector_log: str | None = None
        #: rows it created and tables whose list columns it set (``Database.watch_lists``)
        self.lists = _ListWrites()

    def created(self, table: str, keys: Iterable[Any]) -> None:
        """Rows of ``table`` created in this transaction, by key (see the module's notes
        on lists): the engine says so for the tables it named in ``watch_lists``."""
        self.lists.created(table, keys)

    def set_lists(self, table: str) -> None:
        """This transaction sets list columns of rows of ``table`` (see ``created``)."""
        self.lists.set.add(table)

    def run(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        self.statements += 1
        self._db.rows_written += 1
        return self._db._execute(self._conn, query, params or {})

    def copy(self, table: str, rows: Any) -> None:
        """``COPY table FROM`` an Arrow table (bulk rows; fast, in this transaction).

        Kuzu checkpoints when a transaction that copied commits, and that checkpoint
        fails if a read is running: the commit then waits for reads to finish."""
        self.copied = True
        watched = self._db._list_tables.get(table)
        if watched is not None:
            self.lists.created(table, rows.column(watched[0]).to_pylist())
        self.statements += 1
        self._db._copy(self._conn, table, rows)

    def run_user(self, query: str, params: Mapping[str, Any], vet: PlanVetting, *,
                 timeout_s: float | None = None) -> _Materialised:
        """Run user Cypher (already through ``_guard``) as one statement of this
        transaction once ``vet`` passed its plan, stopped after ``timeout_s`` (None: no
        limit), which ends the transaction; its errors are the caller's to fix."""
        check_parameters(query, params)
        self.statements += 1
        counts = self._list_rows()
        self._conn.set_query_timeout(_timeout_ms(timeout_s))
        try:
            result = _run_vetted(self._conn, query, params, vet, self._db._vetted,
                                 path=self._db.path, timeout_s=timeout_s)
        except RuntimeError as exc:
            raise _user_error(exc, path=self._db.path, timeout_s=timeout_s,
                              params=params) from exc
        finally:
            self._conn.set_query_timeout(0)  # graphmem's own statements have no limit
        # Which rows it created is not known here, but whether it created any is: user
        # Cypher deletes nothing (``_plan``), so a table that grew is compared whole at
        # the next checkpoint; one that did not may have had lists set on its rows.
        for table, before in counts.items():
            after = self._list_rows([table])[table]
            if after != before:
                self.lists.wholly.add(table)
            self.lists.set.add(table)
        return result

    def _list_rows(self, tables: Iterable[str] | None = None) -> dict[str, int]:
        """The number of rows of the watched tables a user statement may write (the
        logs it may not: ``_plan.LOG_TABLES``)."""
        from ._plan import LOG_TABLES

        names = [t for t in (self._db._list_tables if tables is None else tables)
                 if t.lower() not in LOG_TABLES]
        return {t: self._db._execute(self._conn, f"MATCH (n:{t}) RETURN count(*)", {})[0][0]
                for t in names}

    def run_many(self, query: str, param_sets: Sequence[Mapping[str, Any]]) -> None:
        """Run one statement for each parameter set, planned once (0.2 ms a row at 100k
        nodes against 1.5 ms when each execution is planned again)."""
        self._db.rows_written += len(param_sets)
        self.statements += len(param_sets)
        self._db._execute_many(self._conn, query, param_sets)


class Database:
    """A Kuzu database in a store directory (or ``:memory:``): one writer, many readers.

    Reads use one connection per thread, so they never see another thread's open write
    transaction; writes use a single connection behind a lock. ``rebuild()`` rewrites
    the file from a logical export, which drops every byte of deleted data.
    """

    #: The WAL size past which a commit is followed by a checkpoint (Kuzu's default).
    CHECKPOINT_BYTES = 16 * 1024 * 1024
    #: Statements run in write transactions (one per parameter set) past which a commit
    #: is followed by a checkpoint: what Kuzu holds of them until then stays ~50 MB at
    #: 1M memories, where such a checkpoint took ~0.25 s (5 ms at 10k memories).
    CHECKPOINT_ROWS = 2048
    #: Rows written after a failed checkpoint before the next try.
    CHECKPOINT_RETRY_ROWS = 64
    #: The Kuzu file inside a store directory (Kuzu keeps ``graph.kuzu.wal`` beside it).
    FILE_NAME = "graph.kuzu"

    def __init__(self, path: str, *, buffer_pool_mb: int = 512, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.in_memory = path == ":memory:"
        self._buffer_pool = buffer_pool_mb * 1024 * 1024
        self._target = path
        self._mark: WalMark | None = None
        #: this process's claim on the file (``_claim``), given back once
        self._claimed: Callable[[], Any] = _no_claim
        #: what crash recovery did when the store opened (None: nothing to do)
        self.recovery_note: str | None = None
        if not self.in_memory:
            directory = Path(path)
            _check_path(directory, read_only=read_only)
            directory.mkdir(exist_ok=True)
            self._target = str(directory / self.FILE_NAME)
            key = _claim(directory, path=path, read_only=read_only)
            # given back at close(), or when this object is collected unclosed (a store
            # dropped, a notebook cell run again), or when opening fails below
            self._claimed = weakref.finalize(self, _release, key, read_only)
            try:
                if not read_only:
                    _finish_rebuild(directory / ".rebuild", self._target)
                self.recovery_note = recover(self._target, read_only=read_only)
                if self.recovery_note:
                    logging.getLogger("graphmem").warning("%s", self.recovery_note)
                if not read_only:
                    self._mark = WalMark(self._target)
            except BaseException:
                self._claimed()
                raise
        self._write_lock = threading.RLock()
        self._gate = Gate()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._generation = 0
        #: plans that passed their check, by statement, mode and parameter types: the
        #: schema is fixed while the store is open, so the verdict stands
        self._vetted: dict[Hashable, None] = {}
        self._closed = False
        #: why the store is closed when it was not closed by ``close()`` (its file could
        #: not be opened again, ``_open_again``)
        self._closed_why = "the store is closed"
        #: why writes are refused: an in-memory store that could not be healed after a
        #: rolled-back write (``_open_again``); None: they are not
        self._unhealed: str | None = None
        #: statements run in write transactions since the last checkpoint
        self.rows_written = 0
        #: no checkpoint after a commit before this many rows (one failed)
        self._retry_at = 0
        #: what the engine writes with every write transaction (None: nothing)
        self.journal: Journal | None = None
        #: the node tables whose lists a checkpoint can get wrong (``watch_lists``), what
        #: was written to them since the last checkpoint, and how many list values were
        #: set again after one (see the module's notes)
        self._list_tables: dict[str, tuple[str, dict[str, str]]] = {}
        self._lists = _ListWrites()
        self.lists_repaired = 0
        #: whether lists are checked around checkpoints (off only to measure what the
        #: check costs, ``eval.bench_checkpoint``: Kuzu may then write lists wrong)
        self.check_lists = True
        if not self.in_memory and not read_only and _size(self._target + ".wal"):
            self._lists.whole = True  # a WAL replayed: what it holds is not known
        try:
            self._open()
        except BaseException:
            self._claimed()
            raise

    def _open(self, made: tuple[Any, Any] | None = None) -> None:
        """Take a database and its write connection: the file's, opened here, or
        ``made`` (an in-memory copy)."""
        if made is None:
            try:
                db = kuzu.Database(self._target, buffer_pool_size=self._buffer_pool,
                                   read_only=self.read_only, auto_checkpoint=False)
            except RuntimeError as exc:
                raise map_error(exc, path=self.path) from exc
            made = db, kuzu.Connection(db)
        self._db: Any = made[0]
        self._write_conn: Any = made[1]
        self._write_statements: dict[str, Any] = {}
        self._generation += 1
        self._committed()

    def _committed(self) -> None:
        """Note the WAL length after a commit (crash recovery cuts back to it)."""
        if self._mark is not None:
            self._mark.record()

    def watch_lists(self, tables: Mapping[str, tuple[str, Mapping[str, str]]]) -> None:
        """Name the node tables with list columns: table -> (key column, {list column:
        Kuzu type}). Writers say which of their rows they create and whether they set
        lists (``Tx.created``, ``Tx.set_lists``; a COPY says it by itself)."""
        self._list_tables = {t: (key, dict(columns)) for t, (key, columns) in tables.items()}

    def _suspects(self, extra: _ListWrites | None = None) -> dict[str, list[Any] | None]:
        """The rows whose lists the next checkpoint may get wrong, by table (None: all)."""
        lists = self._lists if extra is None else self._lists.merged(extra)
        if self.in_memory or not self._list_tables or not self.check_lists:
            return {}
        if lists.whole:
            return dict.fromkeys(self._list_tables)
        keyed: dict[str, list[Any] | None] = {
            t: sorted(keys) for t, keys in lists.fresh.items()
            if keys and t in lists.set and t in self._list_tables}
        return {**keyed, **dict.fromkeys(t for t in lists.wholly if t in self._list_tables)}

    def _list_values(self, conn: Any, table: str, keys: list[Any] | None) -> _Lists:
        """The lists of ``table``'s rows ``keys`` (None: all of them, read as Arrow: a
        whole table of 100k rows in ~0.1 s)."""
        key, columns = self._list_tables[table]
        values = ", ".join(f"n.{c} AS {c}" for c in columns)
        if keys is not None and (len(keys) <= _KEYED_READS or len(keys) * _LOOKUPS_PER_ROW
                                 < self._execute(conn, f"MATCH (n:{table}) RETURN count(*)",
                                                 {})[0][0]):
            query = f"MATCH (n:{table} {{{key}: $k}}) RETURN n.{key}, {values}"
            rows = [row for k in keys for row in self._execute(conn, query, {"k": k})]
            return {r[0]: tuple(r[1:]) for r in rows}
        if keys is not None:  # one join, which scans the table
            rows = self._execute(conn, f"UNWIND $keys AS k MATCH (n:{table} {{{key}: k}}) "
                                 f"RETURN n.{key}, {values}", {"keys": keys})
            return {r[0]: tuple(r[1:]) for r in rows}
        if self._closed:
            raise StoreError(self._closed_why)
        try:
            result = conn.execute(f"MATCH (n:{table}) RETURN n.{key} AS key, {values}")
            whole: pa.Table = result.get_as_arrow(chunk_size=100_000)
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc
        return whole.sort_by("key")

    @contextlib.contextmanager
    def _checked(self, conn: Any | None = None, extra: _ListWrites | None = None
                 ) -> Iterator[None]:
        """Around whatever checkpoints (CHECKPOINT, a COMMIT after COPY, closing the
        file): the lists it may get wrong are read before (on ``conn``, inside its open
        transaction if it has one, with that transaction's writes ``extra``) and after,
        and what differs is set again. The caller holds the write lock and the gate
        exclusively."""
        suspects = self._suspects(extra)
        before: dict[str, _Lists] = {}
        try:
            for table, keys in suspects.items():
                before[table] = self._list_values(conn or self._write_conn, table, keys)
        except GraphmemError as exc:  # a table not made yet (an old store): checked later
            logging.getLogger("graphmem").debug("lists not read before a checkpoint: %s", exc)
            before = {}
        yield
        self._lists = _ListWrites()
        if before:
            self._set_again(before)

    def _set_again(self, before: dict[str, _Lists]) -> None:
        conn = self._write_conn
        wrong: list[tuple[str, Any, tuple[Any, ...]]] = []
        for table, held in before.items():
            after = self._list_values(conn, table, None if isinstance(held, pa.Table)
                                      else list(held))
            if isinstance(held, pa.Table) and isinstance(after, pa.Table):
                if held.equals(after):
                    continue
                held, after = _by_key(held), _by_key(after)
            assert isinstance(held, dict) and isinstance(after, dict)
            wrong += [(table, k, v) for k, v in held.items() if after.get(k) != v]
        if not wrong:
            return
        conn.execute("BEGIN TRANSACTION")
        try:
            for table, key_value, values in wrong:
                key, columns = self._list_tables[table]
                sets = ", ".join(f"n.{c} = CAST($v{i} AS {t})"
                                 for i, (c, t) in enumerate(columns.items()))
                self._execute(conn, f"MATCH (n:{table} {{{key}: $k}}) SET {sets}",
                              {"k": key_value, **{f"v{i}": v for i, v in enumerate(values)}})
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(RuntimeError):
                conn.execute("ROLLBACK")
            raise
        self._committed()
        self._lists.set.update(table for table, _, _ in wrong)
        self.lists_repaired += len(wrong)
        logging.getLogger("graphmem").info(
            "Kuzu's checkpoint wrote the lists of %d rows wrong; set again", len(wrong))

    def _checkpoint_now(self) -> None:
        """CHECKPOINT; the caller holds the write lock and the gate exclusively (Kuzu's
        checkpoint fails after a timeout while any read transaction runs)."""
        with self._checked():
            self._checkpoint_raw()

    def _checkpoint_raw(self) -> None:
        try:
            try:
                self._write_conn.execute("CHECKPOINT")
            except RuntimeError as exc:
                self._replace_write_conn()
                if not _pool_full(exc):
                    raise
                # Once more, on a new connection: see the module's notes.
                self._write_conn.execute("CHECKPOINT")
            self.rows_written = self._retry_at = 0
        except RuntimeError as exc:
            self._replace_write_conn()
            raise map_error(exc, path=self.path) from exc
        finally:
            self._committed()

    def _due(self) -> bool:
        return self._mark is not None and not self._closed \
            and self.rows_written >= self._retry_at and (
                self._mark.size >= self.CHECKPOINT_BYTES
                or self.rows_written >= self.CHECKPOINT_ROWS)

    def _maybe_checkpoint(self) -> None:
        """Checkpoint once the WAL is large or many rows were written since the last one:
        running reads finish first, new ones wait. It follows a commit, which stands
        whatever happens here: a failed checkpoint is a warning, tried again later."""
        if not self._due():
            return
        with self._write_lock:
            with self._gate.exclusive():
                if not self._due():  # another thread did it
                    return
                try:
                    self._checkpoint_now()
                    return
                except GraphmemError as exc:
                    failure = exc
                    self._retry_at = self.rows_written + self.CHECKPOINT_RETRY_ROWS
            pool_full = _pool_full(failure.__cause__)
            logging.getLogger("graphmem").warning(
                "the write was committed, but the checkpoint after it failed (tried again "
                "later and when the store closes%s): %s",
                "; the file is opened again" if pool_full else "", failure)
            if pool_full:
                # what the failed checkpoint held stays held: the next one crashed the
                # process (the module's notes); opened again, Kuzu lets go of it. The
                # write stood whatever happens here: a file that cannot be opened again
                # closes the store, which says so to what uses it next (``_lose``)
                with contextlib.suppress(GraphmemError):
                    self._open_again()

    def _close_handles(self) -> None:
        for conn in [*self._readers, self._write_conn]:
            with contextlib.suppress(Exception):
                conn.close()
        self._readers.clear()
        with contextlib.suppress(Exception):
            self._db.close()

    # -- connections ---------------------------------------------------------------
    def _reader(self) -> Any:
        cached = getattr(self._local, "conn", None)
        if cached is None or cached[0] != self._generation:
            conn = kuzu.Connection(self._db)
            self._local.conn = (self._generation, conn)
            self._local.statements = {}
            self._readers.append(conn)
            return conn
        return cached[1]

    def _replace_write_conn(self) -> None:
        with contextlib.suppress(Exception):
            self._write_conn.close()
        self._write_conn = kuzu.Connection(self._db)
        self._write_statements = {}

    def _execute(self, conn: Any, query: str, params: Mapping[str, Any]) -> list[Row]:
        if self._closed:
            raise StoreError(self._closed_why)
        check_parameters(query, params)
        result: Any
        try:
            if params and conn is self._write_conn:
                result = conn.execute(self._write_statement(conn, query), _bind(params))
            else:
                if conn is self._write_conn and not _TRANSACTION.match(query):
                    self._write_statements.clear()  # DDL may change what plans mean
                result = conn.execute(query, _bind(params))
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc
        rows: list[Row] = []
        results = result if isinstance(result, list) else [result]
        for res in results:
            while res.has_next():
                rows.append(res.get_next())
        return rows

    def _write_statement(self, conn: Any, query: str) -> Any:
        """``query`` planned once on the write connection. Kuzu's ``execute`` with
        parameters prepares without their values and binds them at execution, so a plan
        kept is the plan it would make again: a small write skips about 1 ms of planning
        a statement. Plans are dropped with the connection, and when a statement without
        parameters (DDL) runs on it. Preparing ``x IN $list`` without the list's values
        crashes Kuzu 0.11.3 (a segfault): such values are written into the statement."""
        statement = self._write_statements.get(query)
        if statement is None:
            if len(self._write_statements) >= _WRITE_PLANS:
                self._write_statements.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                statement = self._write_statements[query] = conn.prepare(query)
        return statement

    def _execute_many(
        self, conn: Any, query: str, param_sets: Sequence[Mapping[str, Any]]
    ) -> None:
        if not param_sets:
            return
        for params in param_sets:
            check_parameters(query, params)
        try:
            statement = self._write_statement(conn, query)  # kept for the next call too
            for params in param_sets:
                conn.execute(statement, _bind(params))
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc

    def _copy(self, conn: Any, table: str, rows: Any) -> None:
        # Kuzu finds the Arrow table by its Python variable name in this frame.
        copy_rows = rows  # noqa: F841
        try:
            conn.execute(f"COPY {table} FROM copy_rows")
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc

    @contextlib.contextmanager
    def _live(self) -> Iterator[None]:
        """Shared use of the open database: refused, clearly, once it is closed (a
        closed handle raised Kuzu's own errors, or ``None`` has no attribute ...)."""
        with self._gate.shared():
            if self._closed:
                raise StoreError(self._closed_why)
            yield

    # -- reads ---------------------------------------------------------------------
    def read(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run a read query in its own auto-commit transaction."""
        with self._live():
            return self._execute(self._reader(), query, params or {})

    def read_prepared(self, query: str, params: Mapping[str, Any]) -> list[Row]:
        """Like ``read``, planning ``query`` once per thread (for hot fixed queries whose
        parameter types never change): 1.2 ms against 3.4 ms for a 35-column lookup."""
        check_parameters(query, params)
        with self._live():
            conn = self._reader()
            statements: dict[str, Any] = self._local.statements
            try:
                statement = statements.get(query)
                if statement is None:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        statement = statements[query] = conn.prepare(query)
                result = conn.execute(statement, _bind(params))
            except RuntimeError as exc:
                raise map_error(exc, path=self.path) from exc
            rows: list[Row] = []
            while result.has_next():
                rows.append(result.get_next())
            return rows

    def read_arrow(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run a read query and return a ``pyarrow.Table`` (bulk reads)."""
        with self._live():
            return self._arrow(self._reader(), query, params or {})

    def _arrow(self, conn: Any, query: str, params: Mapping[str, Any]) -> Any:
        check_parameters(query, params)
        try:
            return conn.execute(query, _bind(params)).get_as_arrow(chunk_size=100_000)
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc

    def read_only_query(self, query: str, params: Mapping[str, Any], vet: PlanVetting, *,
                        timeout_s: float | None = None) -> Any:
        """Run user Cypher (already through ``_guard``) in a READ ONLY transaction on a
        connection of its own once ``vet`` passed its plan, stopped after ``timeout_s``
        (None: no limit); returns the materialised result.

        It takes no write lock: writes go on meanwhile. A checkpoint waits for it (and
        holds new reads), which the timeout bounds."""
        check_parameters(query, params)
        with self._live():
            conn = kuzu.Connection(self._db)
            conn.set_query_timeout(_timeout_ms(timeout_s))
            try:
                conn.execute("BEGIN TRANSACTION READ ONLY")
                try:
                    return _run_vetted(conn, query, params, vet, self._vetted,
                                       path=self.path, timeout_s=timeout_s)
                finally:
                    with contextlib.suppress(RuntimeError):
                        conn.execute("ROLLBACK")
            except RuntimeError as exc:
                raise _user_error(exc, path=self.path, timeout_s=timeout_s,
                                  params=params) from exc
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    # -- writes --------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction: commits when the block ends, rolls back on any error."""
        self._refuse_if_read_only()
        with self._write_lock:
            conn = self._write_conn
            failure: BaseException | None = None
            at_commit: bool | None = None  # the COMMIT raised; that the pool was full
            with self._live():
                try:
                    conn.execute("BEGIN TRANSACTION")
                except RuntimeError as exc:
                    self._replace_write_conn()
                    raise map_error(exc, path=self.path) from exc
                tx = Tx(self, conn)
                journal = self.journal
                try:
                    yield tx
                    if journal is not None:
                        journal.before_commit(tx)
                except BaseException as exc:
                    try:
                        conn.execute("ROLLBACK")
                    except RuntimeError:
                        # The failed statement already ended the transaction.
                        self._replace_write_conn()
                    if journal is not None:
                        journal.after_commit(tx, False)
                    if not tx.statements:
                        raise
                    failure = exc
            if failure is not None:
                self._open_again()
                raise failure
            # A commit after COPY checkpoints, which needs every read to have finished;
            # the write lock is still held, so no other write slips in meanwhile.
            with self._gate.exclusive() if tx.copied else self._gate.shared():
                checked = self._checked(conn, tx.lists) if tx.copied \
                    else contextlib.nullcontext()
                try:
                    with checked:
                        try:
                            conn.execute("COMMIT")
                        except RuntimeError as exc:
                            self._replace_write_conn()
                            # the rows it wrote are checked at the next checkpoint,
                            # should it have been committed all the same (below)
                            self._lists = self._lists.merged(tx.lists)
                            at_commit = _pool_full(exc)
                            failure = map_error(exc, path=self.path)
                            failure.__cause__ = exc
                            raise failure from exc
                        self._lists = self._lists.merged(tx.lists)
                        self._committed()
                        if journal is not None:
                            journal.after_commit(tx, True)
                        if tx.copied:  # that commit checkpointed
                            self.rows_written = 0
                except GraphmemError as exc:
                    if failure is None:  # committed; setting lists again failed
                        logging.getLogger("graphmem").warning(
                            "the write was committed, but lists its checkpoint may have "
                            "written wrong could not be checked: %s", exc)
                        self._lists.whole = True
            if failure is not None:
                self._open_again()
                if at_commit is None:  # a statement failed: the journal knows already
                    raise failure
                stood = at_commit and self._stood(journal)
                if journal is not None:
                    journal.after_commit(tx, stood)
                if stood:
                    self._committed()
                    raise StoreError(
                        "the write was committed, but the checkpoint after it found the "
                        "database's buffer pool full: what it wrote is stored (writing it "
                        "again is refused as a conflict); raise GRAPHMEM_BUFFER_POOL_MB "
                        "(Settings.buffer_pool_mb) and open the store again before writing "
                        "more") from failure
                raise failure
        self._maybe_checkpoint()

    def _stood(self, journal: Journal | None) -> bool:
        """After a COMMIT that raised that the buffer pool was full, and the file opened
        again: whether the transaction was committed all the same. A COMMIT after COPY
        checkpoints, and when that checkpoint found the pool full the COMMIT raised with
        the transaction committed (adding 1,000 memories a second time to a 100k-memory
        store, measured). Such a write is still reported as an error, which says so: a
        build that went on writing past such commits (10,000 memories a batch, beyond
        110k) crashed, and the store opened again held none of the 80,000 memories
        written after 110k. (A COMMIT that found the disk full is not asked: Kuzu then
        left the ring row of a transaction whose memories were not stored.)"""
        return journal is not None and journal.stood(
            lambda q, p: self._execute(self._write_conn, q, p))

    def _open_again(self) -> None:
        """Open the database file again after a write transaction that ran statements was
        rolled back: Kuzu 0.11.3 leaves the rows it updated unwritable, or crashing the
        next write of them, in this process (the module's notes); opened again, the
        rolled-back changes are gone and every row takes writes. The same after a
        checkpoint that found the buffer pool full (the next one crashed the process).
        Running reads finish first. A file that cannot be opened again closes this handle
        (``_lose``). An in-memory database is copied into a new one instead (Kuzu's export
        and import, through a private directory); should that fail, it is kept as it is,
        with a new write connection (a connection reused after some failures crashed the
        process)."""
        if self._closed:
            return
        with self._write_lock, self._gate.exclusive():
            if not self.in_memory:
                self._replace_write_conn()
                with self._checked():  # Kuzu checkpoints when the file is closed
                    self._close_handles()
                    try:
                        self._open()
                    except GraphmemError as exc:
                        self._lose(exc)
                        raise
                return
            self._replace_write_conn()  # the export runs on it: one that took no failure
            try:
                with tempfile.TemporaryDirectory(prefix="graphmem-copy-") as work:
                    export = Path(work) / "export"
                    self._export(export)
                    fresh = kuzu.Database(":memory:", buffer_pool_size=self._buffer_pool,
                                          auto_checkpoint=False)
                    conn = kuzu.Connection(fresh)
                    conn.execute(f"IMPORT DATABASE '{_cypher_path(export)}'")
            except (RuntimeError, GraphmemError, OSError) as exc:
                # a later write of a row the failed one touched could crash the process:
                # this store takes no more writes (its reads stay sound)
                self._unhealed = (
                    f"this in-memory store takes no more writes: after a failed write it "
                    f"could not be copied into a sound database ({exc}), and writing on "
                    "could crash the process; read or export what it holds "
                    "(MemoryStore.backup) and open a new store")
                logging.getLogger("graphmem").error("%s", self._unhealed)
                return
            self._close_handles()
            self._open((fresh, conn))

    def _lose(self, exc: GraphmemError) -> None:
        """The file closed to be opened again could not be (another process opened it
        meanwhile, ...): this handle is closed, lets go of the file, and says why to
        whatever uses it next."""
        self._closed = True
        self._closed_why = (
            f"the store was closed: its file, closed to be opened again, could not be "
            f"({exc}); what was committed before is stored: open the store again")
        logging.getLogger("graphmem").error("%s", self._closed_why)
        with contextlib.suppress(Exception):
            if self._mark is not None:
                self._mark.close()
        self._claimed()

    def run_auto(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run one statement in auto-commit mode (DDL, index creation, user writes)."""
        return self.run_on_one_connection([(query, params or {})])[0]

    def run_on_one_connection(
        self, statements: Sequence[str | tuple[str, Mapping[str, Any]]]
    ) -> list[list[Row]]:
        """Run statements in order on the write connection, each in auto-commit mode.

        Projected graphs (for Kuzu's algorithms) belong to the connection that made them,
        so projecting, running and dropping must share one. A projection left behind by a
        failure is dropped.
        """
        self._refuse_if_read_only()
        out: list[list[Row]] = []
        with self._write_lock:
            try:
                with self._live():
                    try:
                        for statement in statements:
                            query, params = ((statement, {}) if isinstance(statement, str)
                                             else statement)
                            out.append(self._execute(self._write_conn, query, params))
                    finally:
                        self._committed()
            except GraphmemError:
                self._open_again()  # the failed statement was rolled back
                raise
        self._maybe_checkpoint()
        return out

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"database {self.path} was opened read-only")
        if self._unhealed is not None:
            raise StoreError(self._unhealed)

    def checkpoint(self) -> None:
        """Fold the WAL into the database file (after running reads finish)."""
        if self.read_only or self._closed:
            return
        with self._write_lock, self._gate.exclusive():
            self._checkpoint_now()

    def swap_tables(self, old: str, new: str) -> None:
        """Drop table ``old`` and give table ``new`` its name, in one transaction that no
        read overlaps, then checkpoint. Every connection plans again afterwards (a plan
        kept would name the dropped table)."""
        self._refuse_if_read_only()
        with self._write_lock, self._gate.exclusive():
            if self._closed:
                raise StoreError(self._closed_why)
            conn = self._write_conn
            try:
                conn.execute("BEGIN TRANSACTION")
                try:
                    conn.execute(f"DROP TABLE {old}")
                    conn.execute(f"ALTER TABLE {new} RENAME TO {old}")
                    conn.execute("COMMIT")
                except RuntimeError:
                    with contextlib.suppress(RuntimeError):
                        conn.execute("ROLLBACK")
                    raise
            except RuntimeError as exc:
                self._replace_write_conn()
                raise map_error(exc, path=self.path) from exc
            finally:
                self._committed()
            for reader in self._readers:
                with contextlib.suppress(Exception):
                    reader.close()
            self._readers.clear()
            self._generation += 1  # each thread takes a new connection, with no plans
            self._replace_write_conn()
            self._checkpoint_now()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Hold off every writer (reads go on) for a consistent multi-step read."""
        with self._write_lock:
            yield


    def _export(self, directory: Path) -> None:
        try:
            self._write_conn.execute(
                f"EXPORT DATABASE '{_cypher_path(directory)}' (format='parquet')"
            )
        except RuntimeError as exc:
            raise map_error(exc, path=self.path) from exc

    def held_arrow(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """``read_arrow`` on the write connection, for the export of ``rebuild``, which
        holds every other reader and writer off (a read of its own would wait for it)."""
        return self._arrow(self._write_conn, query, params or {})

    def export_to(self, directory: Path) -> None:
        """``EXPORT DATABASE`` (parquet): a consistent logical snapshot of the live data
        (the layout of a format-1 backup)."""
        with self.snapshot():
            self.checkpoint()
            with self._live():
                self._export(directory)

    @property
    def buffer_pool_mb(self) -> int:
        return self._buffer_pool >> 20

    def rebuild(self, build: Callable[[Database, Path], None],
                export: Callable[[Database, Path], None]) -> None:
        """Rewrite the database file from a logical export of its live data:
        ``export(self, export_dir)`` writes it (reading with ``held_arrow``),
        ``build(fresh, export_dir)`` fills a new database from it.

        Kuzu writes updates out of place and does not scrub old pages, so a deleted
        string stays in the file; the rebuilt file holds only what is live. The old
        file is replaced atomically: a crash leaves either the old or the new one.
        """
        if self.in_memory or self.read_only:
            return
        work = Path(self.path) / ".rebuild"
        with self._write_lock, self._gate.exclusive():
            if self._closed:
                raise StoreError(self._closed_why)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            try:
                # reads see what the log holds: no checkpoint first (at 100k memories one
                # after a forget needed over 2 GB of buffer pool, measured)
                export(self, work / "export")
                # twice the pool: a node group of large rows being filled is held in it
                # (a purge of 100k memories of ~7 KB rows failed at 1 GB, past 40k rows)
                target = Database(str(work / "fresh"),
                                  buffer_pool_mb=2 * self.buffer_pool_mb)
                try:
                    build(target, work / "export")
                finally:
                    target.close()
                fresh = work / "fresh" / self.FILE_NAME
                self._close_handles()
                try:
                    # what the old file's log holds is in the new file (the export read
                    # it): the log leaves first, kept beside the new file's identity until
                    # the new file is in place, so that an open after a crash between
                    # the two gives the old file its log back (``_finish_rebuild``)
                    found = os.stat(fresh)
                    _write_synced(work / "fresh.id", f"{found.st_dev} {found.st_ino}")
                    moved = False
                    try:
                        with contextlib.suppress(FileNotFoundError):
                            os.replace(self._target + ".wal", work / "old.wal")
                            moved = True
                        os.replace(fresh, self._target)
                    except BaseException:
                        if moved:  # the old file stays: its log goes back
                            os.replace(work / "old.wal", self._target + ".wal")
                        raise
                finally:
                    self._open()
            finally:
                shutil.rmtree(work, ignore_errors=True)

    def remove_torn_copies(self) -> int:
        """Delete the torn write-ahead logs that crash recovery kept beside the file
        (``graph.kuzu.wal.torn-*``); returns how many there were."""
        if self.in_memory:
            return 0
        found = list(Path(self.path).glob(self.FILE_NAME + ".wal.torn-*"))
        for copy in found:
            with contextlib.suppress(FileNotFoundError):
                copy.unlink()
        return len(found)

    def close(self) -> None:
        if self._closed:
            return
        with self._write_lock, self._gate.exclusive():
            if self._closed:  # another thread closed it while this one waited
                return
            if not self.read_only:
                with contextlib.suppress(GraphmemError):
                    self._checkpoint_now()  # automatic checkpoints are off
            self._closed = True
            try:
                self._close_handles()
                self._committed()
                if self._mark is not None:
                    self._mark.close()
            finally:  # the file is no longer held here, whatever failed above
                self._claimed()

#: the store directories open in this process, by device and inode (any spelling of the
#: path, symlinks and bind mounts alike): (handles that write, read-only handles). Kuzu
#: lets one process open a file twice; the two handles then diverge (each keeps its own
#: pages and write-ahead log) and a write through one can crash the other.
_OPEN: dict[tuple[int, int], tuple[int, int]] = {}
_OPEN_LOCK = threading.Lock()


def _no_claim() -> None:
    """An in-memory database claims no file."""


def _claim(directory: Path, *, path: str, read_only: bool) -> tuple[int, int]:
    """Refuse a second handle on a store this process has open for writing (or a handle
    that writes beside read-only ones), as Kuzu refuses another process; returns the
    claim's key. A handle dropped without ``close()`` and not yet collected is collected
    first."""
    found = os.stat(directory)
    key = (found.st_dev, found.st_ino)
    for attempt in range(2):
        with _OPEN_LOCK:
            writers, readers = _OPEN.get(key, (0, 0))
            if not (writers or (readers and not read_only)):
                _OPEN[key] = (writers + (not read_only), readers + read_only)
                return key
        if attempt == 0:
            gc.collect()  # a dropped store in a reference cycle gives its claim back
    held = "for writing" if writers else "read-only"
    raise StoreLockedError(
        f"database {path} is already open {held} in this process; use the store "
        "that opened it (it is safe to share between threads), or close() it first (a "
        "notebook cell run again: close the store its first run opened, or open it with "
        "`with MemoryStore(...) as store:`)",
        here=True,
    )


def _release(key: tuple[int, int], read_only: bool) -> None:
    with _OPEN_LOCK:
        writers, readers = _OPEN.get(key, (0, 0))
        left = (max(writers - (not read_only), 0), max(readers - read_only, 0))
        if left == (0, 0):
            _OPEN.pop(key, None)
        else:
            _OPEN[key] = left


class _ListWrites:
    """Rows created (keys by table) and tables whose lists were set, in a transaction
    or since the last checkpoint; ``wholly``: tables with new rows not known by key (a
    user statement's); ``whole``: no write known (see the module's notes)."""

    def __init__(self) -> None:
        self.fresh: dict[str, set[Any]] = {}
        self.set: set[str] = set()
        self.wholly: set[str] = set()
        self.whole = False

    def created(self, table: str, keys: Iterable[Any]) -> None:
        self.fresh.setdefault(table, set()).update(keys)

    def merged(self, other: _ListWrites) -> _ListWrites:
        out = _ListWrites()
        for source in (self, other):
            for table, keys in source.fresh.items():
                out.created(table, keys)
            out.set |= source.set
            out.wholly |= source.wholly
            out.whole |= source.whole
        return out


def _by_key(table: pa.Table) -> dict[Any, tuple[Any, ...]]:
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return {row[0]: tuple(row[1:]) for row in zip(*columns, strict=True)}


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


class _Materialised:
    """A user statement's result read to the end while its transaction was open, within
    the bounds of ``read_user_rows`` and by ``deadline`` (``time.monotonic()``)."""

    def __init__(self, result: Any, *, deadline: float | None, timeout_s: float | None,
                 large: Callable[[], bool]) -> None:
        last = result[-1] if isinstance(result, list) else result
        self.columns: list[str] = list(last.get_column_names())
        self.rows: list[Row] = read_user_rows(last, deadline=deadline, large=large,
                                              too_long=lambda: _too_long(timeout_s))


def _run_vetted(conn: Any, query: str, params: Mapping[str, Any], vet: PlanVetting,
                vetted: dict[Hashable, None], *, path: str, timeout_s: float | None
                ) -> _Materialised:
    """``_run_bound`` with ``params`` bound (the maps of a list in one key order); a value
    Kuzu's binding cannot convert (it raises a bare ValueError) is the caller's error."""
    try:
        return _run_bound(conn, query, _bind(_maps_in_one_order(params)), vet, vetted,
                          path=path, timeout_s=timeout_s)
    except GraphmemError:
        raise
    except ValueError as exc:
        raise _unbound(exc) from exc


def _run_bound(conn: Any, query: str, bound: dict[str, Any], vet: PlanVetting,
               vetted: dict[Hashable, None], *, path: str, timeout_s: float | None
               ) -> _Materialised:
    """Plan ``query`` as exactly one statement (Kuzu's own parser is the judge: it refuses
    to prepare several), show ``vet`` its physical plan, then run it.

    The plan is read through ``EXPLAIN`` of a prepared statement, never of a text handed
    to ``execute`` (which runs every statement of a text). A statement whose plan passed
    before (same text, mode and parameter types) is not planned twice: planning again for
    ``EXPLAIN`` cost 5.5-7.9 ms of CPU on the two largest named queries (8.8-11.2 ms
    without it), 0.6 ms on a one-line query. ``timeout_s`` also bounds reading the rows."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    vet.check_text()
    statement = _prepare_user(conn, query, bound, vet, path=path)
    key = (vet.key, tuple(sorted((name, type(value).__name__) for name, value in bound.items())))
    if key not in vetted:
        explain = _prepare_user(conn, "EXPLAIN " + query, bound, vet, path=path)
        try:
            plan = conn.execute(explain, bound).get_next()[0]
        except RuntimeError as exc:
            if _interrupted(exc):
                raise  # the time limit, which the caller names
            raise vet.failed(str(exc)) or _user_error(exc, path=path, timeout_s=None,
                                                      params=bound) from exc
        vet.check(plan)
        if len(vetted) >= _VETTED:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):  # a race: fine
                vetted.pop(next(iter(vetted)))
        vetted[key] = None
    return _Materialised(conn.execute(statement, bound), deadline=deadline,
                         timeout_s=timeout_s,
                         large=lambda: holds_large_constant(query, bound))


#: Plan verdicts kept per database (keys hold a digest of the text, not the text).
_VETTED = 512


def _timeout_ms(timeout_s: float | None) -> int:
    """Kuzu's query timeout in milliseconds for ``timeout_s`` (0: none)."""
    return 0 if timeout_s is None else max(1, round(timeout_s * 1000))


def _interrupted(exc: RuntimeError) -> bool:
    """Whether Kuzu stopped the statement (its query timeout; graphmem never calls
    ``interrupt()``)."""
    return str(exc).startswith("Interrupted")


def _user_error(exc: RuntimeError, *, path: str, timeout_s: float | None,
                params: Mapping[str, Any] | None = None) -> GraphmemError:
    """The error of a user statement that failed while running; a value that could not be
    cast names the parameter it came from."""
    if timeout_s is not None and _interrupted(exc):
        return _too_long(timeout_s)
    message = str(exc).split("\nSee the docs")[0].strip()
    if "Cannot convert Python object" in message or "Unable to cast Python" in message:
        return _unbound(exc)
    if "vector with ANY type" in message or "KU_UNREACHABLE" in message:
        # an empty list, a list of nulls, a map holding a null: Kuzu found no type for it
        untyped = [name for name, value in (params or {}).items() if _untyped(_shape(value))]
        return InvalidInputError(
            (f"parameter ${untyped[0]}: " if len(untyped) == 1 else "")
            + "an empty list, a list of nulls or a map with a null value has no type the "
            "database can bind here; give it a typed value, or CAST it in the query",
            field=untyped[0] if len(untyped) == 1 else "params")
    kind, _, detail = message.partition(" exception: ")
    if kind in ("Conversion", "Overflow"):
        # the value Kuzu quotes: "Cast failed. abc is not in DOUBLE range.", "Cast failed.
        # Could not convert "1000" to INT8.", "Value 1000 is not within INT8 range", "...
        # parsing date. Given: "2020-13-45". ..."
        quoted = re.fullmatch(r"(?:Cast failed\. )?(?:(.*) is not in \w+ range|Could not "
                              r"convert \"?(.*?)\"? to \w+|Value (.*) is not within \w+ "
                              r"range|.*\bGiven: \"(.*?)\"\..*)\.?", detail, re.DOTALL)
        value = next((g for g in quoted.groups() if g is not None), None) if quoted else None
        named = [name for name, given in (params or {}).items()
                 if value is not None and value in _scalars(given)]
        return InvalidInputError(
            (f"parameter ${named[0]}: " if len(named) == 1 else "") + detail
            + " (a value of another type than where the query uses it)",
            field=named[0] if len(named) == 1 else "params")
    return map_error(exc, path=path, user=True)


def _scalars(value: Any) -> set[str]:
    """The strings and numbers in a parameter value, as text, at any depth."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*map(_scalars, value)) if value else set()
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {str(value)}
    return set()


def _unbound(exc: Exception) -> InvalidInputError:
    return InvalidInputError(f"a parameter's value could not be passed to the database: "
                             f"{exc}", field="params")


def _too_long(timeout_s: float | None) -> InvalidInputError:
    return InvalidInputError(
        f"the query ran longer than {timeout_s or 0:g} s (GRAPHMEM_CYPHER_TIMEOUT_S) and was "
        "stopped; nothing was changed. Narrow it (a LIMIT, fewer hops, a label and a "
        "WHERE on each node) or raise GRAPHMEM_CYPHER_TIMEOUT_S", field="query")


def _prepare_user(conn: Any, query: str, bound: Mapping[str, Any], vet: PlanVetting, *,
                  path: str) -> Any:
    """Plan a user statement with its parameters: planned without them, a parameter is
    of no type (ANY), and Kuzu 0.11.3 crashed binding one passed through WITH or UNWIND
    to label(), keys(), id() or list_contains() (``WITH $x AS y RETURN label(y)``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        statement = conn.prepare(query, dict(bound))
    if not statement.is_success():
        message = statement.get_error_message()
        if "multiple statements" in message:
            raise InvalidInputError("one statement per query", field="query")
        raise vet.failed(message) or _user_error(RuntimeError(message), path=path,
                                                 timeout_s=None, params=bound)
    return statement


def _cypher_path(path: Path) -> str:
    """A filesystem path inside a Cypher string literal (EXPORT/IMPORT take no parameters)."""
    text = str(path.resolve())
    if "'" in text or "\\" in text:
        raise StoreError(f"path {text} contains a quote or backslash; choose a simpler path")
    return text


def link_problem(path: str | os.PathLike[str]) -> str | None:
    """What is wrong when ``path`` or a directory above it is a symbolic link that leads
    nowhere (its target, or a link on the way, is missing) or in a loop; else None.

    >>> link_problem("/") is None
    True
    """
    path = Path(path)
    for part in (path, *path.parents):
        if not part.is_symlink():
            continue
        try:
            os.stat(part)
        except FileNotFoundError:
            return (f"{part} is a symbolic link to {os.path.realpath(part)}, which does not "
                    "exist; create that directory, or choose another path")
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"{part} is a loop of symbolic links; choose another path"
            if exc.errno == errno.ENOTDIR:
                return (f"{part} is a symbolic link to {os.readlink(part)}, which is no "
                        "directory path (a file stands on the way); choose another path")
            raise
    return None


def _check_path(path: Path, *, read_only: bool) -> None:
    """Refuse unusable store directories with a message that says what to do."""
    problem = link_problem(path)
    if problem is not None:
        raise StoreError(problem)
    if path.exists() and not path.is_dir():
        raise StoreError(
            f"{path} is a file, not a graphmem database directory; choose another path"
        )
    db_file = path / Database.FILE_NAME
    if read_only and not db_file.exists():
        raise StoreError(f"no database at {path}; create it first with `graphmem --db {path} "
                         "init`")
    if not path.exists():
        parent = path.parent
        if not parent.exists():
            raise StoreError(f"directory {parent} does not exist; create it first")
        if not os.access(parent, os.W_OK):
            raise StoreError(f"cannot create a database in {parent}: it is not writable")
    elif not read_only and not os.access(path, os.W_OK):
        raise StoreError(
            f"database {path} is not writable; fix its permissions or open it read-only"
        )
    elif not read_only and db_file.exists() and not os.access(db_file, os.W_OK):
        raise StoreError(
            f"database file {db_file} is not writable; fix its permissions or open it read-only"
        )


def serve_bind_checks() -> None:
    """The child process of ``_bindcheck.BindCheck``: the schema's statements on an empty
    in-memory database, then for each statement sent, ``EXPLAIN`` of it with its
    parameters (errors are the store's to report: ignored here) and one byte back. The
    process dies where Kuzu would have taken the store's process down."""
    from ._bindcheck import read_message

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    conn = kuzu.Connection(kuzu.Database(":memory:"))
    for statement in read_message(stdin) or ():
        conn.execute(statement)
    while (message := read_message(stdin)) is not None:
        query, params = message
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                prepared = conn.prepare("EXPLAIN " + query, params)
                if prepared.is_success():
                    conn.execute(prepared, params)
            except Exception:
                pass
        stdout.write(b"k")
        stdout.flush()
