"""Connections to one PostgreSQL database: a small pool, transactions, errors mapped to
graphmem's, and pinned snapshots. The only module that imports psycopg.

Every connection runs in UTC with graphmem's schema first on its search path (the
``options=-c search_path=...`` of the URL, or ``public``), and knows pgvector's
``vector`` type (binary: a 384-float vector is read as 1.5 kB, not as text).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import psycopg
import psycopg.errors
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

from .._engine_rules import VERSION_MARK, key_taken
from .._errors import (
    ConflictError,
    GraphmemError,
    InvalidInputError,
    ReadOnlyStoreError,
    StoreError,
)

__all__ = ["Cursor", "Database", "Identifier", "is_postgres_url", "redacted_url"]

Cursor = psycopg.Cursor
Identifier = sql.Identifier
_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://...``)."""
    return location.startswith(_SCHEMES)


def redacted_url(url: str) -> str:
    """The URL without its password (for messages and ``Engine.path``)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return url.split("@", 1)[-1]
    if info.get("password"):
        return url.replace(f":{info['password']}@", ":***@", 1)
    return url


def map_error(exc: BaseException, *, where: str) -> GraphmemError:
    """psycopg's errors as graphmem's: a key already taken or a write that lost a
    race is a conflict, a value PostgreSQL refuses is the caller's, the rest the store's."""
    if isinstance(exc, GraphmemError):
        return exc
    if isinstance(exc, psycopg.errors.UniqueViolation):
        detail = getattr(getattr(exc, "diag", None), "message_detail", None) or str(exc)
        version = re.search(r"=\(([^()]*" + re.escape(VERSION_MARK) + r"\d+)\)", detail)
        if version:
            return key_taken(version.group(1))
        return ConflictError(f"already stored: {detail}")
    if isinstance(exc, psycopg.errors.ForeignKeyViolation):
        detail = getattr(getattr(exc, "diag", None), "message_detail", None) or str(exc)
        return ConflictError(f"refers to a memory or entity that is not stored: {detail}")
    if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return ConflictError(f"another writer changed the same rows at the same time; "
                             f"retry ({exc})")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return ReadOnlyStoreError(f"{where} was opened read-only")
    if isinstance(exc, psycopg.DataError | psycopg.errors.CheckViolation):
        return InvalidInputError(f"PostgreSQL refused a value: {exc}")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot use PostgreSQL database {where}: {exc}".strip())
    return StoreError(f"PostgreSQL database {where} failed: {exc}".strip())


def _statement_error(exc: psycopg.Error, *, where: str, timeout_s: float) -> GraphmemError:
    """The error of a statement graphmem did not write: its own mistakes (syntax, names,
    values, a write) are the caller's, with PostgreSQL's message."""
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return InvalidInputError(
            f"the statement ran longer than {timeout_s:g} s (GRAPHMEM_CYPHER_TIMEOUT_S) and "
            "was stopped. Narrow it (a LIMIT, a WHERE on an indexed column) or raise "
            "GRAPHMEM_CYPHER_TIMEOUT_S", field="query")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return ReadOnlyStoreError(
            "SQL through graphmem is read-only; change memories through the store's API "
            f"(PostgreSQL said: {exc})")
    state = getattr(getattr(exc, "diag", None), "sqlstate", None) or ""
    if not state and isinstance(exc, psycopg.ProgrammingError):  # psycopg's own check
        return InvalidInputError(f"the statement's parameters do not match it: {exc}; name "
                                 "each %(name)s, give every one a value, and write a "
                                 "literal % as %%", field="params")
    # 42: syntax errors, unknown tables and columns; 22: bad values; 21: cardinality
    if state[:2] in ("42", "22", "21"):
        return InvalidInputError(
            "SQL error (graphmem runs one read-only statement: SELECT, WITH ... SELECT, "
            f"VALUES or TABLE): {exc}".strip(), field="query")
    return map_error(exc, where=where)


class Database:
    """A pool of connections to one PostgreSQL database, reads and writes."""

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4) -> None:
        self.url = url
        self.where = redacted_url(url)
        self.read_only = read_only
        self._closed = False
        self._pinned = threading.local()
        self._probe()
        try:
            self._pool = ConnectionPool(url, min_size=1, max_size=max(2, pool_size),
                                        configure=self._configure, open=False,
                                        kwargs={"autocommit": True})
            self._pool.open(wait=True, timeout=15)
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL database {self.where}: {exc}. "
                             "Check the URL, that the server runs, and the credentials"
                             ) from exc

    def _probe(self) -> None:
        """One connection before the pool: the pool retries a refused one for its whole
        timeout (15 s), logging each try, and then reports the timeout without the cause
        (a mistyped database name, a wrong password). One try says why, at once."""
        try:
            psycopg.connect(self.url, connect_timeout=10, autocommit=True).close()
        except psycopg.Error as exc:
            cause = " ".join(str(exc).split())  # the server's message, on one line
            raise StoreError(f"cannot connect to PostgreSQL database {self.where}: {cause}. "
                             "Check the URL (host, port, database name), that the server "
                             "runs, and the credentials; create a missing database with "
                             "createdb or CREATE DATABASE") from None

    def _configure(self, conn: psycopg.Connection) -> None:
        conn.execute("SET TIME ZONE 'UTC'")
        # pgvector lives in one schema of the database (``public`` when graphmem made
        # it); stores in other schemas find its type through the search path.
        found = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension "
                             "WHERE extname = 'vector'").fetchone()
        if found is not None:
            path = conn.execute("SELECT current_schemas(false)").fetchone()
            if path is not None and found[0] not in path[0]:
                conn.execute("SELECT set_config('search_path', "
                             "current_setting('search_path') || ', ' || %s, false)",
                             (sql.Identifier(found[0]).as_string(conn),))
            register_vector(conn)
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")

    def reconfigure(self) -> None:
        """Drop pooled connections (after the schema created the vector type)."""
        self._pool.drain()

    def close(self) -> None:
        self._closed = True
        self._pool.close()

    # -- transactions -------------------------------------------------------------------
    @contextlib.contextmanager
    def _mapped(self) -> Iterator[None]:
        """psycopg's errors in the block as graphmem's (``map_error``); graphmem's own
        pass through."""
        try:
            yield
        except GraphmemError:
            raise
        except psycopg.Error as exc:
            if self._closed:  # the closed pool says so in its own words
                raise StoreError("the store is closed") from exc
            raise map_error(exc, where=self.where) from exc

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A connection for reads: this thread's pinned snapshot if it has one."""
        pinned = getattr(self._pinned, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._mapped(), self._pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Cursor]:
        """One read-write transaction: committed when the block ends, rolled back if it
        raises (graphmem's errors pass through, psycopg's are mapped)."""
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.where} was opened read-only; open it "
                                     "without read_only to change it")
        with (self._mapped(), self._pool.connection() as conn, conn.transaction(),
              conn.cursor() as cur):
            yield cur

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Every read of this thread inside the block sees one snapshot (a repeatable
        read transaction): a backup or an export is consistent while writers go on."""
        if getattr(self._pinned, "conn", None) is not None:
            yield
            return
        with self._mapped(), self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._pinned.conn = conn
            try:
                yield
            finally:
                self._pinned.conn = None

    # -- reads ---------------------------------------------------------------------------
    def stream(self, query: str, *, size: int) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of ``query``, ``size`` at a time, through a server-side cursor (in
        this thread's pinned snapshot if it has one): a whole table never in memory."""
        with (self.connection() as conn, self._mapped(), conn.transaction(),
              conn.cursor(name="graphmem_stream", binary=True) as cur):
            cur.execute(query)
            while rows := cur.fetchmany(size):
                yield rows

    def rows(self, query: str | sql.Composable, params: Sequence[Any] | Mapping[str, Any]
             = ()) -> list[tuple[Any, ...]]:
        with self.connection() as conn, conn.cursor() as cur, self._mapped():
            cur.execute(query, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []

    def dict_rows(self, query: str | sql.Composable,
                  params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        with (self.connection() as conn,
              conn.cursor(row_factory=psycopg.rows.dict_row) as cur, self._mapped()):
            cur.execute(query, params)  # type: ignore[arg-type]
            return cur.fetchall()

    def read_statement(self, query: str, params: Mapping[str, Any], *, timeout_s: float
                       ) -> tuple[list[str], list[list[Any]]]:
        """A statement graphmem did not write (a named query's SQL, ``store.sql``): one
        reading statement in a read-only transaction of its own, stopped after
        ``timeout_s`` seconds, its errors the caller's. Returns the column names and the
        rows.

        It runs as a server-side cursor, which PostgreSQL declares only for one query
        that returns rows (SELECT, WITH ... SELECT, VALUES, TABLE): "COMMIT; DELETE ..."
        is refused, never run outside the transaction, as the simple protocol would. The
        transaction is rolled back, so a ``set_config`` in it does not outlive it on the
        pooled connection."""
        try:
            with self._pool.connection() as conn, conn.transaction(force_rollback=True):
                conn.execute("SET TRANSACTION READ ONLY")
                conn.execute("SELECT set_config('statement_timeout', %s, true)",
                             (f"{max(1, round(timeout_s * 1000))}ms",))
                with conn.cursor(name="graphmem_statement") as cur:
                    cur.execute(query, dict(params))
                    rows = cur.fetchall()
                    names = [c.name for c in cur.description or ()]
                return names, [list(r) for r in rows]
        except psycopg.Error as exc:
            if self._closed:
                raise StoreError("the store is closed") from exc
            raise _statement_error(exc, where=self.where, timeout_s=timeout_s) from exc

    def run(self, query: str | sql.Composable,
            params: Sequence[Any] | Mapping[str, Any] = ()) -> None:
        """One statement in its own transaction (schema changes, store properties)."""
        with self.transaction() as cur:
            cur.execute(query, params)  # type: ignore[arg-type]


def copy_rows(cur: psycopg.Cursor, table: str, columns: Sequence[str],
              rows: Sequence[Sequence[Any]]) -> None:
    """Rows into ``table`` by COPY (binary protocol types inferred from the values)."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns)))
    with cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
